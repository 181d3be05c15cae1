"""The capability's own behaviour in real Pydantic AI runs (sync, async, options, failures)."""

from __future__ import annotations

import asyncio
import logging

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from pydantic_scripted import ScriptedModel, lookup

from anneal_memory import Store
from anneal_memory.adapters.pydantic_ai import AnnealMemory
from anneal_memory.session import MemorySession
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def _episodes(store: Store):
    return store.recall(limit=1000).episodes


def test_memory_block_reaches_every_model_request(mem_store: Store) -> None:
    mem_store.record("The irrigation pump runs at 42 psi", "observation")
    scripted = ScriptedModel(call_tool=True)
    agent = Agent(scripted.model, tools=[lookup], capabilities=[AnnealMemory(mem_store)])
    agent.run_sync("What pressure does the irrigation pump use?")
    assert len(scripted.inputs) == 2  # tool call, then the answer
    for received in scripted.inputs:
        assert "42 psi" in received


def test_own_request_is_not_recalled_back_in_the_same_run(mem_store: Store) -> None:
    scripted = ScriptedModel()
    agent = Agent(scripted.model, capabilities=[AnnealMemory(mem_store)])
    agent.run_sync("Zanzibar orchids need misting")
    assert "Zanzibar" not in scripted.inputs[0].split("Zanzibar orchids need misting", 1)[0]


def test_async_run_records_and_wraps(mem_store: Store) -> None:
    scripted = ScriptedModel(call_tool=True)
    memory = AnnealMemory(mem_store, wrap_on_end=True)
    agent = Agent(scripted.model, tools=[lookup], capabilities=[memory])
    result = asyncio.run(agent.run("Check the pump pressure"))
    assert result.output == "Done: noted."
    types = {e.type.value for e in _episodes(mem_store)}
    assert {"context", "observation", "outcome"} <= types
    assert mem_store.status().total_wraps == 1
    assert any(is_wrap_prompt(text) for text in scripted.inputs), "wrap did not use the agent's model"


def test_explicit_wrap_defaults_to_the_last_runs_model(mem_store: Store) -> None:
    scripted = ScriptedModel()
    memory = AnnealMemory(mem_store)  # wrap_on_end defaults to False
    agent = Agent(scripted.model, capabilities=[memory])
    agent.run_sync("Decide to prune the roses in March")
    assert mem_store.load_continuity() is None
    outcome = memory.wrap_sync()
    assert outcome.status == "saved", outcome.message
    assert "## State" in (mem_store.load_continuity() or "")


def test_compress_callable_overrides_the_model(mem_store: Store) -> None:
    prompts: list[str] = []

    def compress(prompt: str) -> str:
        prompts.append(prompt)
        return scripted_compress(prompt)

    scripted = ScriptedModel()
    agent = Agent(scripted.model, capabilities=[AnnealMemory(mem_store, wrap_on_end=True,
                                                             compress=compress)])
    agent.run_sync("Decide to mulch the beds")
    assert len(prompts) == 1 and is_wrap_prompt(prompts[0])
    assert not any(is_wrap_prompt(text) for text in scripted.inputs)
    assert mem_store.status().total_wraps == 1


def test_failing_compress_keeps_episodes_and_the_run(mem_store: Store) -> None:
    def compress(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    scripted = ScriptedModel()
    agent = Agent(scripted.model, capabilities=[AnnealMemory(mem_store, wrap_on_end=True,
                                                             compress=compress)])
    result = agent.run_sync("Decide to fertilise in spring")
    assert result.output == "Done: noted."
    assert mem_store.load_continuity() is None
    assert any("fertilise" in e.content for e in _episodes(mem_store))
    # the episodes wait for the next wrap, which succeeds
    retry = AnnealMemory(mem_store, compress=scripted_compress).wrap_sync()
    assert retry.status == "saved"


def test_record_options_switch_recording_off(mem_store: Store) -> None:
    scripted = ScriptedModel(call_tool=True)
    memory = AnnealMemory(mem_store, record_tools=False, record_user_input=False,
                          record_outcome=False)
    Agent(scripted.model, tools=[lookup], capabilities=[memory]).run_sync("Check the pump")
    assert _episodes(mem_store) == []


def test_per_run_capability_and_test_model(mem_store: Store) -> None:
    agent = Agent(TestModel(), tools=[lookup])
    result = agent.run_sync("Look up the valve", capabilities=[AnnealMemory(mem_store)])
    assert "toolresult" in result.output
    tool_eps = [e for e in _episodes(mem_store) if e.trust == "tool"]
    assert tool_eps and "toolresult" in tool_eps[0].content


def test_same_event_twice_is_recorded_once(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    agent = Agent(ScriptedModel().model, capabilities=[memory])
    agent.run_sync("Water the ferns")
    agent.run_sync("Water the ferns")
    contexts = [e for e in _episodes(mem_store) if e.type.value == "context"]
    assert len(contexts) == 1


def test_shared_session_is_accepted(mem_store: Store) -> None:
    session = MemorySession(mem_store)
    memory = AnnealMemory(session)
    assert memory.session is session
    Agent(ScriptedModel().model, capabilities=[memory]).run_sync("Harvest the beans")
    assert any("beans" in e.content for e in _episodes(mem_store))


def test_store_path_opens_a_store_the_capability_owns(tmp_path) -> None:
    memory = AnnealMemory(str(tmp_path / "owned.db"))
    Agent(ScriptedModel().model, capabilities=[memory]).run_sync("Keep the seed order list")
    assert memory.session.owns_store
    assert "Keep the seed order list" in [e.content for e in _episodes(memory.session.store)]
    memory.session.close()


def test_broken_store_is_logged_not_raised(tmp_path, caplog) -> None:
    broken = Store(tmp_path / "b.db")
    broken.close()
    scripted = ScriptedModel(call_tool=True)
    agent = Agent(scripted.model, tools=[lookup],
                  capabilities=[AnnealMemory(broken, wrap_on_end=True)])
    with caplog.at_level(logging.WARNING):
        result = agent.run_sync("Keep going")
    assert result.output == "Done: noted."
    assert any(r.name == "anneal_memory.adapters.pydantic_ai" for r in caplog.records)
