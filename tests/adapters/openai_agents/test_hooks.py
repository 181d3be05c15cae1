"""Hooks, instructions and the wrap in real SDK runs (sync and async)."""

from __future__ import annotations

import asyncio

import pytest
from agents import Agent, Runner
from oa_scripted import lookup, model_inputs, scripted_model

from anneal_memory import Store
from anneal_memory.adapters.openai_agents import AnnealMemory
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def _episodes(store: Store):
    return store.recall(limit=1000).episodes


def test_memory_reaches_every_model_call(mem_store: Store) -> None:
    mem_store.record("The irrigation pump runs at 42 psi", "observation")
    model = scripted_model(call_tool=True)
    memory = AnnealMemory(mem_store)
    agent = Agent(name="a", instructions=memory.instructions("Base rules."), model=model,
                  tools=[lookup])
    Runner.run_sync(agent, "What pressure does the irrigation pump use?", hooks=memory.run_hooks)
    inputs = model_inputs(model)
    assert len(inputs) == 2
    for received in inputs:
        assert "Base rules." in received and "42 psi" in received
    # the request itself is recorded but not recalled back to its own run
    assert "irrigation pump use" not in model.calls[0].system_instructions


def test_agent_hooks_async_run(mem_store: Store) -> None:
    model = scripted_model(call_tool=True)
    memory = AnnealMemory(mem_store)
    agent = Agent(name="a", instructions=memory.instructions(), model=model, tools=[lookup],
                  hooks=memory.agent_hooks)
    result = asyncio.run(Runner.run(agent, "Check the pump pressure"))
    assert result.final_output == "Done: noted."
    by_type = {e.type.value: e for e in _episodes(mem_store)}
    assert by_type["context"].content == "Check the pump pressure"
    assert "toolresult" in by_type["observation"].content
    assert by_type["observation"].trust == "tool"
    assert by_type["outcome"].content == "Done: noted."


def test_both_hooks_record_once(mem_store: Store) -> None:
    model = scripted_model()
    memory = AnnealMemory(mem_store)
    agent = Agent(name="a", model=model, hooks=memory.agent_hooks)
    Runner.run_sync(agent, "Water the ferns", hooks=memory.run_hooks)
    kinds = [e.type.value for e in _episodes(mem_store)]
    assert sorted(kinds) == ["context", "outcome"]


def test_callable_base_instructions(mem_store: Store) -> None:
    mem_store.record("Ferns like shade", "observation")
    model = scripted_model()
    memory = AnnealMemory(mem_store)

    async def base(ctx, agent) -> str:
        return f"You are {agent.name}."

    agent = Agent(name="fern-bot", instructions=memory.instructions(base), model=model)
    Runner.run_sync(agent, "Where do ferns grow best?")
    assert "You are fern-bot." in model.calls[0].system_instructions
    assert "Ferns like shade" in model.calls[0].system_instructions


def test_explicit_wrap_uses_the_agents_model(mem_store: Store) -> None:
    model = scripted_model(wrap=True)  # the wrap's step is scripted after the answer
    memory = AnnealMemory(mem_store)  # wrap_on_end defaults to False
    agent = Agent(name="a", model=model, hooks=memory.agent_hooks)
    Runner.run_sync(agent, "Decide to prune the roses in March")
    assert mem_store.load_continuity() is None
    outcome = memory.wrap()
    assert outcome.status == "saved", outcome.message
    assert is_wrap_prompt(model_inputs(model)[-1])
    assert "## State" in (mem_store.load_continuity() or "")


def test_compress_callable_and_failed_wrap(mem_store: Store) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    memory = AnnealMemory(mem_store, wrap_on_end=True, compress=broken)
    agent = Agent(name="a", model=scripted_model(), hooks=memory.agent_hooks)
    result = Runner.run_sync(agent, "Decide to fertilise in spring")
    assert result.final_output == "Done: noted."
    assert mem_store.load_continuity() is None
    assert any("fertilise" in e.content for e in _episodes(mem_store))
    prompts: list[str] = []

    def compress(prompt: str) -> str:
        prompts.append(prompt)
        return scripted_compress(prompt)

    outcome = asyncio.run(memory.awrap(compress))
    assert outcome.status == "saved" and "fertilise" in prompts[0]


def test_record_options_switch_recording_off(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, record_user_input=False, record_tools=False,
                          record_outcome=False)
    agent = Agent(name="a", model=scripted_model(call_tool=True), tools=[lookup],
                  hooks=memory.agent_hooks)
    Runner.run_sync(agent, "Check the pump")
    assert _episodes(mem_store) == []


def test_strict_hooks_raise_into_the_run(tmp_path) -> None:
    broken = Store(tmp_path / "b.db")
    broken.close()
    memory = AnnealMemory(broken, strict=True)
    agent = Agent(name="a", model=scripted_model(), hooks=memory.agent_hooks)
    with pytest.raises(Exception):  # noqa: B017 - any store error, surfaced on purpose
        Runner.run_sync(agent, "This must fail loudly")


def test_store_path_opens_a_store_the_memory_owns(tmp_path) -> None:
    memory = AnnealMemory(str(tmp_path / "owned.db"))
    agent = Agent(name="a", model=scripted_model(), hooks=memory.agent_hooks)
    Runner.run_sync(agent, "Keep the seed order list")
    assert memory.session.owns_store
    assert "Keep the seed order list" in [e.content for e in _episodes(memory.session.store)]
    memory.close()


def test_every_run_of_one_agent_is_recorded_though_run_ids_are_reused(mem_store: Store) -> None:
    """The hooks tell a run's events apart by its Usage object's id; a finished run's
    Usage is freed and the next run's is often given the same id. Each run, one after
    the other with one agent (a server answering users in turn), still records its request
    and its outcome: none is taken for an earlier run's already-handled end."""
    from agents.testing import ScriptedModel, assistant_message

    memory = AnnealMemory(mem_store)
    runs = 40
    model = ScriptedModel([[assistant_message(f"Answer number {i}.")] for i in range(runs)])
    agent = Agent(name="a", model=model, hooks=memory.agent_hooks)
    for i in range(runs):
        Runner.run_sync(agent, f"Question number {i}", hooks=memory.run_hooks)
    kinds = [e.type.value for e in _episodes(mem_store)]
    assert kinds.count("context") == runs and kinds.count("outcome") == runs, kinds
