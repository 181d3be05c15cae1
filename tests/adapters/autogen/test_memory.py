"""The autogen_core Memory interface and the recording model context, on real agents."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from autogen_scripted import ScriptedClient, lookup, tool_call

from anneal_memory import Store
from anneal_memory.adapters.autogen import MEMORY_SOURCE, AnnealMemory
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="AutoGenTest")
    yield s
    s.close()


def _agent(memory: AnnealMemory, client: ScriptedClient, **kwargs) -> AssistantAgent:
    return AssistantAgent("assistant", model_client=client, tools=[lookup],
                          reflect_on_tool_use=True, memory=[memory],
                          model_context=memory.model_context(kwargs.pop("inner", None)), **kwargs)


def test_is_a_memory_and_add_query_delete(store: Store) -> None:
    memory = AnnealMemory(store)
    assert isinstance(memory, Memory)

    async def go() -> None:
        await memory.add(MemoryContent(content="The irrigation pump runs at 42 psi",
                                       mime_type=MemoryMimeType.TEXT,
                                       metadata={"type": "decision", "trust": "tool"}))
        await memory.add(MemoryContent(content={"heater": "Zephyrion"}, mime_type=MemoryMimeType.JSON))
        found = await memory.query("irrigation pump")
        assert [c.content for c in found.results] == ["The irrigation pump runs at 42 psi"]
        meta = found.results[0].metadata
        assert meta["type"] == "decision" and meta["trust"] == "tool"
        newest = await memory.query("")
        assert {c.content for c in newest.results} == {
            "The irrigation pump runs at 42 psi", '{"heater": "Zephyrion"}'}
        by_content = await memory.query(MemoryContent(content="Zephyrion", mime_type="text/plain"))
        assert by_content.results and "Zephyrion" in by_content.results[0].content
        assert await memory.delete(meta["id"]) is True
        assert await memory.delete(meta["id"]) is False
        assert (await memory.query("irrigation pump")).results == []
        with pytest.raises(ValidationError, match="text"):
            await memory.add(MemoryContent(content=b"\x00", mime_type=MemoryMimeType.BINARY))

    asyncio.run(go())


def test_clear_keeps_episodes_and_says_so(store: Store, caplog) -> None:
    memory = AnnealMemory(store)

    async def go() -> None:
        await memory.add(MemoryContent(content="Keep the seed catalogue", mime_type="text/plain"))
        with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.autogen"):
            await memory.clear()
        assert (await memory.query("seed catalogue")).results
        # a fresh session: the same content may be recorded again in the new conversation
        await memory.add(MemoryContent(content="Keep the seed catalogue", mime_type="text/plain"))

    asyncio.run(go())
    assert store.status().total_episodes == 2
    assert any("keeps the stored episodes" in r.getMessage() for r in caplog.records)


def test_update_context_injects_once_as_labelled_user_message(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    memory = AnnealMemory(store)
    context = BufferedChatCompletionContext(buffer_size=20)

    async def go() -> None:
        await context.add_message(UserMessage(content="Which greenhouse heater?", source="user"))
        first = await memory.update_context(context)
        second = await memory.update_context(context)
        messages = await context.get_messages()
        injected = [m for m in messages if getattr(m, "source", None) == MEMORY_SOURCE]
        assert len(injected) == 1 and "Zephyrion" in injected[0].content
        assert first.memories.results and not second.memories.results
        assert any("Zephyrion" in str(c.content) for c in first.memories.results[1:])

    asyncio.run(go())


def test_system_role_option(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    memory = AnnealMemory(store, memory_role="system")
    context = BufferedChatCompletionContext(buffer_size=20)

    async def go() -> None:
        await context.add_message(UserMessage(content="Which greenhouse heater?", source="user"))
        await memory.update_context(context)
        assert isinstance((await context.get_messages())[-1], SystemMessage)

    asyncio.run(go())


def test_agent_run_records_every_message_kind(store: Store) -> None:
    client = ScriptedClient([tool_call(), "The pump is fine."])
    memory = AnnealMemory(store, record_tool_calls=True)
    result = asyncio.run(_agent(memory, client).run(task="Check the pump pressure"))
    assert result.messages[-1].content == "The pump is fine."
    by_type: dict[str, list] = {}
    for e in store.recall(limit=100).episodes:
        by_type.setdefault(e.type.value, []).append(e)
    assert [e.content for e in by_type["context"]] == ["Check the pump pressure"]
    assert by_type["context"][0].metadata["source"] == "user"
    assert any("lookup" in e.content for e in by_type["decision"])
    assert [e.trust for e in by_type["observation"]] == ["tool"]
    assert [e.content for e in by_type["outcome"]] == ["The pump is fine."]


def test_memory_query_event_and_inner_context_policy(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    client = ScriptedClient(["Zephyrion it is."])
    memory = AnnealMemory(store)
    agent = _agent(memory, client, inner=BufferedChatCompletionContext(buffer_size=3))
    result = asyncio.run(agent.run(task="Which greenhouse heater do we have?"))
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert events and any("Zephyrion" in str(c.content) for c in events[0].content)
    assert any("Zephyrion" in text for text in client.inputs)


def test_refused_wrap_keeps_episodes_then_saves(store: Store) -> None:
    bad = ScriptedClient(["Decided: water at dawn."], fail_wrap=True)
    memory = AnnealMemory(store, model_client=bad, wrap_on_end=True)
    asyncio.run(_agent(memory, bad).run(task="Decide when to water the tomatoes"))
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status != "saved"
    assert store.load_continuity() is None
    outcome = memory.wrap(compress=_compress)
    assert outcome.status == "saved" and "## State" in (store.load_continuity() or "")


async def _compress(prompt: str) -> str:
    from anneal_memory.testing import scripted_compress

    return scripted_compress(prompt)


def test_failure_inside_update_context_is_logged(store: Store, caplog, monkeypatch) -> None:
    memory = AnnealMemory(store)

    def boom(*args, **kwargs):
        raise RuntimeError("recall exploded")

    monkeypatch.setattr(memory.session, "memory_block", boom)
    client = ScriptedClient(["Still answering."])
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.autogen"):
        result = asyncio.run(_agent(memory, client).run(task="Go on"))
    assert result.messages[-1].content == "Still answering."
    assert any("recall exploded" in r.getMessage() for r in caplog.records)


def test_component_round_trip(store: Store, tmp_path: Path) -> None:
    memory = AnnealMemory(tmp_path / "component.db", name="garden", recall_limit=3,
                          memory_role="system")
    model = memory.dump_component()
    assert model.provider == "anneal_memory.adapters.autogen.AnnealMemory"
    loaded = AnnealMemory.load_component(model)
    assert isinstance(loaded, AnnealMemory)
    assert (loaded.name, loaded.recall_limit, loaded.memory_role) == ("garden", 3, "system")
    asyncio.run(loaded.close())
    asyncio.run(memory.close())


def test_configuration_errors(store: Store) -> None:
    with pytest.raises(ValidationError, match="model_client"):
        AnnealMemory(store, wrap_on_end=True)
    with pytest.raises(ValidationError, match="memory_role"):
        AnnealMemory(store, memory_role="tool")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="ChatCompletionClient"):
        AnnealMemory(store, model_client=object())  # type: ignore[arg-type]


def test_a_passed_session_is_used_and_survives_clear(store: Store) -> None:
    session = MemorySession(store, recall_limit=2)
    memory = AnnealMemory(session)
    assert memory.session is session and memory.recall_limit == 2
    asyncio.run(memory.clear())
    assert memory.session is not session and memory.recall_limit == 2
    asyncio.run(memory.close())
    assert store.status().total_episodes == 0  # the caller's store is still open
