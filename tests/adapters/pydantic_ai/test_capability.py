"""The capability's own behaviour in real Pydantic AI runs (sync, async, options, failures)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_scripted import ScriptedModel, lookup

from anneal_memory import Store, ValidationError
from anneal_memory.adapters import MEMORY_LABEL
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
    outcome = memory.wrap()
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
    retry = AnnealMemory(mem_store, compress=scripted_compress).wrap()
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


def _user_parts(messages) -> list[str]:
    return [str(p.content) for m in messages if isinstance(m, ModelRequest)
            for p in m.parts if isinstance(p, UserPromptPart)]


def test_memory_is_a_user_part_before_the_prompt_and_never_in_history(mem_store: Store) -> None:
    mem_store.record("The compost bin is behind the shed", "observation")
    seen: list[list[str]] = []

    def respond(messages, info: AgentInfo) -> ModelResponse:
        seen.append(_user_parts(messages))
        assert MEMORY_LABEL not in (info.instructions or "")  # not in the system channel
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(respond), capabilities=[AnnealMemory(mem_store)])
    result = agent.run_sync("Where is the compost bin?")
    memory_part, prompt = seen[0][-2:]
    assert memory_part.startswith(MEMORY_LABEL) and "behind the shed" in memory_part
    assert prompt == "Where is the compost bin?"  # the user's own words come last
    assert not any(MEMORY_LABEL in p for p in _user_parts(result.all_messages()))


def test_memory_role_system_uses_the_instructions(mem_store: Store) -> None:
    mem_store.record("The compost bin is behind the shed", "observation")
    seen: list[tuple[str, list[str]]] = []

    def respond(messages, info: AgentInfo) -> ModelResponse:
        seen.append((info.instructions or "", _user_parts(messages)))
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(respond),
                  capabilities=[AnnealMemory(mem_store, memory_role="system")])
    agent.run_sync("Where is the compost bin?")
    instructions, parts = seen[0]
    assert "behind the shed" in instructions and parts == ["Where is the compost bin?"]


def test_bad_memory_role_is_refused(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="memory_role"):
        AnnealMemory(mem_store, memory_role="assistant")


def test_namespace_from_deps_keeps_users_apart(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, namespace=lambda ctx: {"user": ctx.deps})
    scripted = ScriptedModel()
    agent = Agent(scripted.model, deps_type=str, capabilities=[memory])
    agent.run_sync("My allotment plot number is 17", deps="ann")
    agent.run_sync("What is my allotment plot number?", deps="ben")
    assert "17" not in scripted.inputs[-1]
    agent.run_sync("What is my allotment plot number?", deps="ann")
    assert "plot number is 17" in scripted.inputs[-1]
    assert [e.content for e in mem_store.scoped({"user": "ben"}).recall().episodes][-1] == (
        "What is my allotment plot number?")


def test_two_concurrent_runs_of_one_agent_both_wrap(mem_store: Store, caplog) -> None:
    # the report: two agent.run at once with wrap_on_end=True, one wrap refused
    memory = AnnealMemory(mem_store, wrap_on_end=True, namespace=lambda ctx: {"user": ctx.deps})
    agent = Agent(ScriptedModel().model, deps_type=str, capabilities=[memory])

    async def both() -> None:
        await asyncio.gather(agent.run("Decide to lime the soil", deps="cy"),
                             agent.run("Decide to add grit", deps="di"))

    with caplog.at_level(logging.WARNING):
        asyncio.run(both())
    assert "no wrap is open" not in caplog.text
    for user in ("cy", "di"):
        assert mem_store.scoped({"user": user}).status().total_wraps == 1


def test_cancelled_run_still_records_its_request_and_wraps(mem_store: Store) -> None:
    started = asyncio.Event()

    async def stall(messages, info: AgentInfo) -> ModelResponse:
        started.set()
        await asyncio.sleep(3600)
        raise AssertionError("not reached")

    memory = AnnealMemory(mem_store, wrap_on_end=True, compress=scripted_compress)
    agent = Agent(FunctionModel(stall), capabilities=[memory])

    async def cancel_mid_run() -> None:
        task = asyncio.create_task(agent.run("Decide to cover the beds before frost"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_mid_run())
    assert "cover the beds" in (mem_store.load_continuity() or "")


def test_failed_run_still_wraps(mem_store: Store) -> None:
    def boom(messages, info: AgentInfo) -> ModelResponse:
        raise RuntimeError("model down")

    memory = AnnealMemory(mem_store, wrap_on_end=True, compress=scripted_compress)
    with pytest.raises(RuntimeError, match="model down"):
        Agent(FunctionModel(boom), capabilities=[memory]).run_sync("Decide to sow leeks")
    assert "sow leeks" in (mem_store.load_continuity() or "")


def test_a_failing_namespace_callable_skips_memory_not_the_run(mem_store: Store, caplog) -> None:
    def pick(ctx):
        raise KeyError("no user id in deps")

    scripted = ScriptedModel()
    agent = Agent(scripted.model, capabilities=[AnnealMemory(mem_store, namespace=pick)])
    with caplog.at_level(logging.WARNING):
        result = agent.run_sync("Prune the apple tree")
    assert result.output == "Done: noted."
    assert _episodes(mem_store) == []  # nothing went to anyone's memory
    assert "no memory for this run" in caplog.text


def test_explicit_wrap_names_the_memory(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, namespace=lambda ctx: {"user": ctx.deps},
                          compress=scripted_compress)
    Agent(ScriptedModel().model, deps_type=str, capabilities=[memory]).run_sync(
        "Decide to plant garlic in autumn", deps="eve")
    with pytest.raises(ValidationError, match="namespace="):
        memory.wrap()
    assert memory.wrap(namespace={"user": "eve"}).saved
    assert "garlic" in mem_store.scoped({"user": "eve"}).load_continuity()


def test_the_anonymous_policy_is_a_field_of_the_capability(tmp_path) -> None:
    from anneal_memory import Store, ValidationError

    with Store(tmp_path / "anon.db") as s:
        assert AnnealMemory(s, anonymous="refuse").anonymous == "refuse"
        assert AnnealMemory(s).anonymous == "shared"
        with pytest.raises(ValidationError, match="anonymous"):
            AnnealMemory(s, anonymous="everyone")
