"""The autogen_core Memory interface and the recording model context, on real agents."""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent, TextMessage
from autogen_core.memory import ListMemory, Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from autogen_scripted import ScriptedClient, lookup, tool_call

from anneal_memory import Store
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.autogen import MEMORY_SOURCE, AnnealMemory
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="AutoGenTest")
    yield s
    s.close()


def _agent(memory: AnnealMemory, client: ScriptedClient, **kwargs) -> AssistantAgent:
    """The way AutoGen documents memory: memory=[...], nothing else."""
    return AssistantAgent("assistant", model_client=client, tools=[lookup],
                          reflect_on_tool_use=True, memory=[memory], **kwargs)


def _kinds(store: Store) -> dict[str, list]:
    by_type: dict[str, list] = {}
    for e in store.recall(limit=100).episodes:
        by_type.setdefault(e.type.value, []).append(e)
    return by_type


def test_is_a_memory_and_add_query_delete(store: Store) -> None:
    memory = AnnealMemory(store)
    assert isinstance(memory, Memory)

    async def go() -> None:
        await memory.add(MemoryContent(content="The irrigation pump runs at 42 psi",
                                       mime_type=MemoryMimeType.TEXT,
                                       metadata={"type": "decision", "trust": "tool",
                                                 "category": "equipment"}))
        await memory.add(MemoryContent(content={"heater": "Zephyrion", "watts": 4000},
                                       mime_type=MemoryMimeType.JSON, metadata={"kind": "spec"}))
        found = await memory.query("irrigation pump")
        assert [c.content for c in found.results] == ["The irrigation pump runs at 42 psi"]
        meta = found.results[0].metadata
        assert meta["type"] == "decision" and meta["trust"] == "tool"
        assert meta["category"] == "equipment"  # the caller's metadata comes back
        newest = await memory.query("")
        by_mime = {c.mime_type: c for c in newest.results}
        assert by_mime[MemoryMimeType.JSON.value].content == {"heater": "Zephyrion", "watts": 4000}
        assert by_mime[MemoryMimeType.JSON.value].metadata["kind"] == "spec"
        by_content = await memory.query(MemoryContent(content="Zephyrion", mime_type="text/plain"))
        assert by_content.results and by_content.results[0].content["heater"] == "Zephyrion"
        assert await memory.delete(meta["id"]) is True
        assert await memory.delete(meta["id"]) is False
        assert (await memory.query("irrigation pump")).results == []
        with pytest.raises(ValidationError, match="text"):
            await memory.add(MemoryContent(content=b"\x00", mime_type=MemoryMimeType.BINARY))

    asyncio.run(go())


def test_shared_semantics_with_list_memory(store: Store) -> None:
    """What ListMemory and AnnealMemory both define: add then query gives the entry back
    (content, mime type, metadata); clear leaves nothing to query."""
    ours, reference = AnnealMemory(store), ListMemory()
    entries = [MemoryContent(content="User likes pizza.", mime_type=MemoryMimeType.TEXT,
                             metadata={"category": "preferences"}),
               MemoryContent(content={"diet": "vegetarian"}, mime_type=MemoryMimeType.JSON,
                             metadata={"category": "diet"})]

    async def go() -> None:
        for memory in (ours, reference):
            for entry in entries:
                await memory.add(entry)
        got = {m: (await m.query("")).results for m in (ours, reference)}
        for memory, results in got.items():
            seen = {(str(c.content), _mime(c), c.metadata["category"]) for c in results}
            assert seen == {("User likes pizza.", "text/plain", "preferences"),
                            ("{'diet': 'vegetarian'}", "application/json", "diet")}, memory
        for memory in (ours, reference):
            await memory.clear()
            assert (await memory.query("")).results == []
            assert (await memory.query("pizza")).results == []

    asyncio.run(go())


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_non_finite_values_come_back_as_from_list_memory(store: Store, value: float) -> None:
    """An entry whose metadata and JSON content hold NaN / an infinity (a tool's reading)
    is added and queried back as ListMemory gives it (the store's JSON metadata refused
    it: add raised)."""
    entry = MemoryContent(content={"reading": value}, mime_type=MemoryMimeType.JSON,
                          metadata={"category": "sensor", "score": value})

    async def go(memory: Memory) -> MemoryContent:
        await memory.add(entry)
        (found,) = (await memory.query("")).results
        return found

    for memory in (AnnealMemory(store), ListMemory()):
        found = asyncio.run(go(memory))
        assert found.metadata["category"] == "sensor" and _mime(found) == "application/json"
        for got in (found.metadata["score"], found.content["reading"]):
            assert math.isnan(got) if math.isnan(value) else got == value


def _mime(content: MemoryContent) -> str:
    return getattr(content.mime_type, "value", content.mime_type)


def test_clear_deletes_only_this_namespace(store: Store) -> None:
    alice = AnnealMemory(store, namespace={"user": "alice"})
    bob = AnnealMemory(store, namespace={"user": "bob"})

    async def go() -> None:
        await alice.add(MemoryContent(content="Alice keeps the seed catalogue", mime_type="text/plain"))
        await bob.add(MemoryContent(content="Bob keeps the hose reel", mime_type="text/plain"))
        await alice.clear()
        assert (await alice.query("")).results == []
        assert [c.content for c in (await bob.query("")).results] == ["Bob keeps the hose reel"]

    asyncio.run(go())
    assert store.status().total_episodes == 1


def test_update_context_keeps_one_memory_message(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    memory = AnnealMemory(store)
    context = BufferedChatCompletionContext(buffer_size=20)

    async def go() -> None:
        await context.add_message(UserMessage(content="Which greenhouse heater?", source="user"))
        first = await memory.update_context(context)
        await context.add_message(UserMessage(content="And its wattage heater?", source="user"))
        second = await memory.update_context(context)
        messages = await context.get_messages()
        injected = [m for m in messages if getattr(m, "source", None) == MEMORY_SOURCE]
        assert len(injected) == 1 and "Zephyrion" in injected[0].content
        assert messages[-1] is injected[0]  # after the request it serves
        assert first.memories.results and second.memories.results
        assert any("Zephyrion" in str(c.content) for c in first.memories.results[1:])

    asyncio.run(go())


def test_memory_list_alone_records_the_turn(store: Store) -> None:
    """AssistantAgent(memory=[memory]), as AutoGen documents it, records every kind."""
    client = ScriptedClient([tool_call(), "The pump is fine."])
    memory = AnnealMemory(store, record_tool_calls=True)
    result = asyncio.run(_agent(memory, client).run(task="Check the pump pressure"))
    assert result.messages[-1].content == "The pump is fine."
    by_type = _kinds(store)
    assert [e.content for e in by_type["context"]] == ["Check the pump pressure"]
    assert by_type["context"][0].metadata["source"] == "user"
    assert any("lookup" in e.content for e in by_type["decision"])
    assert [e.trust for e in by_type["observation"]] == ["tool"]
    assert [e.content for e in by_type["outcome"]] == ["The pump is fine."]


def test_memory_is_injected_once_over_many_turns(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    client = ScriptedClient(["First.", "Second.", "Third."])
    memory = AnnealMemory(store)
    agent = _agent(memory, client)
    seen: list[int] = []
    original = client.create

    async def counting(messages, **kwargs):
        seen.append(sum(1 for m in messages if getattr(m, "source", None) == MEMORY_SOURCE))
        return await original(messages, **kwargs)

    client.create = counting  # type: ignore[method-assign]

    async def go() -> None:
        for i, task in enumerate(("Which heater do we have?", "Is the heater a Zephyrion?",
                                  "Heater wattage?")):
            # something new to recall each turn, so each turn's memory block differs
            await memory.add(MemoryContent(content=f"Heater note {i}: checked on day {i}",
                                           mime_type=MemoryMimeType.TEXT))
            await agent.run(task=task)

    asyncio.run(go())
    assert seen == [1, 1, 1]


def test_agent_with_memory_dumps_and_loads(tmp_path: Path) -> None:
    db = tmp_path / "component.db"
    memory = AnnealMemory(db, namespace={"user": "alice"}, recall_limit=3)
    for agent in (AssistantAgent("assistant", model_client=ScriptedClient(["Noted."]),
                                 memory=[memory]),
                  AssistantAgent("assistant", model_client=ScriptedClient(["Noted."]),
                                 memory=[memory], model_context=memory.model_context())):
        asyncio.run(agent.run(task="The shed key is under the blue pot"))
        config = agent.dump_component()
        loaded = AssistantAgent.load_component(config)
        (anneal,) = loaded._memory
        assert isinstance(anneal, AnnealMemory) and anneal.recall_limit == 3
        found = asyncio.run(anneal.query("shed key"))
        assert found.results and found.results[0].content == "The shed key is under the blue pot"
        asyncio.run(anneal.close())
    asyncio.run(memory.close())


def test_two_users_interleaved_never_see_each_other(store: Store) -> None:
    def run(user: str, task: str) -> ScriptedClient:
        client = ScriptedClient(["Noted."])
        memory = AnnealMemory(store, namespace={"user": user})
        asyncio.run(_agent(memory, client).run(task=task))
        return client

    run("alice", "My locker code is 4417 Quasar")
    run("bob", "My locker code is 9902 Nebula")
    alice, bob = run("alice", "What is my locker code?"), run("bob", "What is my locker code?")
    assert any("Quasar" in t for t in alice.inputs) and not any("Nebula" in t for t in alice.inputs)
    assert any("Nebula" in t for t in bob.inputs) and not any("Quasar" in t for t in bob.inputs)


def test_namespace_callable_gets_the_incoming_message(store: Store) -> None:
    memory = AnnealMemory(store, namespace=lambda message: {"user": message.source})
    alice_agent = _agent(memory, ScriptedClient(["Noted."]))
    asyncio.run(alice_agent.run(task=TextMessage(content="My locker code is 4417 Quasar",
                                                 source="alice")))
    client = ScriptedClient(["No idea."])
    asyncio.run(_agent(memory, client).run(task=TextMessage(content="What is my locker code?",
                                                            source="bob")))
    assert not any("Quasar" in t for t in client.inputs)
    view = store.scoped({"user": "alice"})
    assert [e.content for e in view.recall(limit=10).episodes if e.type.value == "context"] == [
        "My locker code is 4417 Quasar"]


def test_concurrent_runs_of_two_users_both_wrap(store: Store) -> None:
    async def one(user: str) -> AnnealMemory:
        client = ScriptedClient([f"Decided for {user}."])
        memory = AnnealMemory(store, namespace={"user": user}, model_client=client,
                              wrap_on_end=True)
        await _agent(memory, client).run(task=f"Decide the watering plan of {user}")
        return memory

    async def both() -> list[AnnealMemory]:
        return list(await asyncio.gather(one("alice"), one("bob")))

    for memory in asyncio.run(both()):
        assert memory.scope().last_wrap is not None and memory.scope().last_wrap.status == "saved"
    for user in ("alice", "bob"):
        view = store.scoped({"user": user})
        assert view.status().total_wraps == 1 and user in (view.load_continuity() or "")


def test_system_role_option(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    memory = AnnealMemory(store, memory_role="system")
    context = BufferedChatCompletionContext(buffer_size=20)

    async def go() -> None:
        await context.add_message(UserMessage(content="Which greenhouse heater?", source="user"))
        await memory.update_context(context)
        assert isinstance((await context.get_messages())[-1], SystemMessage)
        await context.add_message(UserMessage(content="And its heater wattage?", source="user"))
        await memory.update_context(context)
        systems = [m for m in await context.get_messages() if isinstance(m, SystemMessage)]
        assert len(systems) == 1 and systems[0].content.startswith(MEMORY_LABEL)

    asyncio.run(go())


def test_memory_query_event_and_inner_context_policy(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    client = ScriptedClient(["Zephyrion it is."])
    memory = AnnealMemory(store)
    agent = _agent(memory, client, model_context=BufferedChatCompletionContext(buffer_size=3))
    result = asyncio.run(agent.run(task="Which greenhouse heater do we have?"))
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert events and any("Zephyrion" in str(c.content) for c in events[0].content)
    assert any("Zephyrion" in text for text in client.inputs)
    assert any(e.type.value == "outcome" for e in store.recall(limit=10).episodes)

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


def test_a_passed_session_is_used(store: Store) -> None:
    session = MemorySession(store, recall_limit=2)
    memory = AnnealMemory(session)
    assert memory.session is session and memory.recall_limit == 2
    asyncio.run(memory.close())
    assert store.status().total_episodes == 0  # the caller's store is still open
    with pytest.raises(ValidationError, match="already one namespace"):
        AnnealMemory(MemorySession(store, namespace={"user": "a"}), namespace={"user": "b"})
    with pytest.raises(ValidationError, match="nickname"):
        AnnealMemory(store, namespace={"nickname": "al"})


def test_refuses_what_autogen_ext_memories_refuse(store: Store) -> None:
    """autogen-ext's memory tests (ChromaDBVectorMemory's test_error_handling) expect a
    ValueError for bytes ("Unsupported content type") and for JSON content that is not a
    dict ("JSON content must be a dict"); nothing is recorded."""
    memory = AnnealMemory(store)

    async def go() -> None:
        with pytest.raises(ValueError, match="Unsupported content type"):
            await memory.add(MemoryContent(content=b"binary data", mime_type=MemoryMimeType.BINARY))
        for content in ("not a dict", '{"looks": "like json"}', '[1, 2]'):
            with pytest.raises(ValueError, match="JSON content must be a dict"):
                await memory.add(MemoryContent(content=content, mime_type=MemoryMimeType.JSON))
        await memory.add(MemoryContent(content={"ok": True}, mime_type=MemoryMimeType.JSON))

    asyncio.run(go())
    assert [e.content for e in store.recall(limit=10).episodes] == ['{"ok": true}']
