"""ADK-specific behaviour: the memory service interface, scoping, preload/load_memory, the plugin."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from adk_scripted import APP, ScriptedLlm, make_runner, read_gauge, run_turn
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.tools import load_memory
from google.adk.tools.preload_memory_tool import PreloadMemoryTool
from google.genai import types

from anneal_memory import Store
from anneal_memory.adapters.google_adk import (
    LOGGER_NAME,
    STOP_WORDS,
    AnnealMemoryPlugin,
    AnnealMemoryService,
    model_compressor,
)
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="Adk")
    yield s
    s.close()


def _setup(store: Store, *, answer: str = "Done.", call=None, tools=None, plugin_kwargs=None,
           memory_service=None):
    llm = ScriptedLlm(answer=answer, inputs=[], call=call)
    service = AnnealMemoryService(store)
    plugin = AnnealMemoryPlugin(service, **(plugin_kwargs or {}))
    agent = LlmAgent(name="gardener", model=llm, tools=tools if tools is not None else [read_gauge])
    runner = make_runner(agent, plugins=[plugin],
                         memory_service=service if memory_service is None else memory_service)
    return llm, service, plugin, runner


def _texts(response) -> list[str]:
    return [" ".join(p.text for p in m.content.parts if p.text) for m in response.memories]


def _event(author: str, text: str) -> Event:
    return Event(author=author, invocation_id="inv", content=types.Content(
        role="user" if author == "user" else "model", parts=[types.Part(text=text)]))


def test_run_saves_typed_episodes_scoped_to_app_and_user(store: Store) -> None:
    _, service, _, runner = _setup(store, answer="The pump reads 3.2 bar.",
                                   call=("read_gauge", {"name": "pump"}))
    assert asyncio.run(run_turn(runner, "alice", "Check the irrigation pump")) == "The pump reads 3.2 bar."
    eps = store.recall(limit=100).episodes
    kinds = {(e.type.value, e.trust) for e in eps}
    assert ("context", "agent") in kinds and ("outcome", "agent") in kinds and ("observation", "tool") in kinds
    assert store.scoped({"project": APP, "user": "alice"}).recall(limit=100).total_matching == len(eps)

    async def searches():
        own = await service.search_memory(app_name=APP, user_id="alice", query="irrigation pump")
        other_user = await service.search_memory(app_name=APP, user_id="bob", query="irrigation pump")
        other_app = await service.search_memory(app_name="orchard", user_id="alice", query="irrigation pump")
        return own, other_user, other_app

    own, other_user, other_app = asyncio.run(searches())
    assert any("irrigation pump" in t for t in _texts(own))
    assert other_user.memories == [] and other_app.memories == []


def test_search_entries_carry_id_author_time_and_relayed_label(store: Store) -> None:
    _, service, _, runner = _setup(store, call=("read_gauge", {"name": "pump"}))
    asyncio.run(run_turn(runner, "alice", "Read the pump gauge"))
    response = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="gauge"))
    assert response.memories
    for entry in response.memories:
        assert entry.id and entry.timestamp and entry.author
        assert store.get(entry.id) is not None
    tool = [m for m in response.memories if m.custom_metadata["trust"] == "tool"]
    assert tool and "relayed" in tool[0].author
    user = [m for m in response.memories if m.author == "user"]
    assert user and user[0].content.role == "user"


def test_adding_a_session_again_adds_nothing_new(store: Store) -> None:
    _, service, _, runner = _setup(store)
    asyncio.run(run_turn(runner, "alice", "Plant the garlic in October"))
    before = store.status().total_episodes

    async def again():
        sessions = await runner.session_service.list_sessions(app_name=APP, user_id="alice")
        session = await runner.session_service.get_session(
            app_name=APP, user_id="alice", session_id=sessions.sessions[0].id)
        await service.add_session_to_memory(session)
        await service.add_session_to_memory(session)

    asyncio.run(again())
    assert store.status().total_episodes == before


def test_add_events_and_add_memory(store: Store) -> None:
    service = AnnealMemoryService(store)

    async def go():
        await service.add_events_to_memory(
            app_name=APP, user_id="alice", session_id="s9",
            events=[_event("user", "The shed key is under the blue pot"),
                    _event("gardener", "Noted where the shed key is.")],
            custom_metadata={"ttl": "30d"})
        await service.add_memory(
            app_name=APP, user_id="alice", custom_metadata={"episode_type": "decision"},
            memories=[MemoryEntry(content=types.Content(parts=[types.Part(text="Compost weekly")]))])
        return await service.list_memories(app_name=APP, user_id="alice")

    entries = asyncio.run(go())
    by_text = {e.content.parts[0].text: e for e in entries}
    assert by_text["The shed key is under the blue pot"].custom_metadata["episode_type"] == "context"
    assert by_text["The shed key is under the blue pot"].custom_metadata["adk_session_id"] == "s9"
    assert by_text["Noted where the shed key is."].custom_metadata["episode_type"] == "outcome"
    assert by_text["Compost weekly"].custom_metadata["episode_type"] == "decision"
    assert store.get(by_text["Compost weekly"].id).type.value == "decision"


def test_delete_memory_respects_scope(store: Store) -> None:
    service = AnnealMemoryService(store)

    async def go():
        for user in ("alice", "bob"):
            await service.add_memory(app_name=APP, user_id=user, memories=[
                MemoryEntry(content=types.Content(parts=[types.Part(text=f"{user} grows leeks")]))])
        alice = (await service.search_memory(app_name=APP, user_id="alice", query="leeks")).memories
        bob = (await service.search_memory(app_name=APP, user_id="bob", query="leeks")).memories
        await service.delete_memory(app_name=APP, user_id="bob", memory_id=alice[0].id)  # not bob's
        await service.delete_memory(app_name=APP, user_id="bob", memory_id=None)  # no-op
        kept = (await service.search_memory(app_name=APP, user_id="alice", query="leeks")).memories
        await service.delete_memory(app_name=APP, user_id="alice", memory_id=alice[0].id)
        gone = (await service.search_memory(app_name=APP, user_id="alice", query="leeks")).memories
        bob_after = (await service.search_memory(app_name=APP, user_id="bob", query="leeks")).memories
        return alice, bob, kept, gone, bob_after

    alice, bob, kept, gone, bob_after = asyncio.run(go())
    assert len(alice) == 1 and len(bob) == 1
    assert [m.id for m in kept] == [alice[0].id]
    assert gone == [] and [m.id for m in bob_after] == [bob[0].id]
    assert store.get(alice[0].id) is None


def test_recall_reaches_the_next_session_and_not_other_users(store: Store) -> None:
    llm, _, _, runner = _setup(store)
    asyncio.run(run_turn(runner, "alice", "Our greenhouse heater is a Zephyrion 4000"))
    llm.inputs.clear()
    asyncio.run(run_turn(runner, "bob", "Which greenhouse heater do we have?"))
    assert "Zephyrion" not in "\n".join(llm.inputs)
    asyncio.run(run_turn(runner, "alice", "Which greenhouse heater do we have?"))
    assert "Zephyrion" in "\n".join(llm.inputs)


def test_works_with_preload_memory_tool(store: Store) -> None:
    llm, _, _, runner = _setup(store, tools=[read_gauge, PreloadMemoryTool()],
                               plugin_kwargs={"inject_recall": False})
    asyncio.run(run_turn(runner, "alice", "The rain barrel holds 200 litres"))
    llm.inputs.clear()
    asyncio.run(run_turn(runner, "alice", "How much does the rain barrel hold?"))
    joined = "\n".join(llm.inputs)
    assert "200 litres" in joined and joined.count("<PAST_CONVERSATIONS>") == 1


def test_works_with_load_memory_tool(store: Store) -> None:
    llm, _, _, runner = _setup(store, tools=[load_memory], plugin_kwargs={"inject_recall": False})
    asyncio.run(run_turn(runner, "alice", "The fig tree was pruned in March"))
    llm.call = ("load_memory", {"query": "fig tree"})
    llm.inputs.clear()
    asyncio.run(run_turn(runner, "alice", "When was it pruned?"))
    assert "pruned in March" in "\n".join(llm.inputs)


def test_plugin_also_saves_to_a_different_runner_memory_service(store: Store) -> None:
    other = InMemoryMemoryService()
    _, service, _, runner = _setup(store, memory_service=other)
    asyncio.run(run_turn(runner, "alice", "Sow carrots in April"))
    theirs = asyncio.run(other.search_memory(app_name=APP, user_id="alice", query="carrots"))
    ours = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="carrots"))
    assert theirs.memories and ours.memories


def test_sync_runner_run_path(store: Store) -> None:
    llm, _, _, runner = _setup(store, answer="synced")
    session = asyncio.run(runner.session_service.create_session(app_name=APP, user_id="alice"))
    finals = [e for e in runner.run(
        user_id="alice", session_id=session.id,
        new_message=types.Content(role="user", parts=[types.Part(text="Sync the sprinkler timer")]),
        run_config=RunConfig(max_llm_calls=4)) if e.is_final_response()]
    assert finals
    assert any("sprinkler" in e.content for e in store.recall(limit=10).episodes)


def test_wrap_is_off_by_default_then_explicit_wrap_uses_agent_model(store: Store) -> None:
    _, _, plugin, runner = _setup(store, answer="Water at dawn.")
    asyncio.run(run_turn(runner, "alice", "Decide when to water the tomatoes"))
    alice = store.scoped({"project": APP, "user": "alice"})
    assert alice.load_continuity() is None
    outcome = asyncio.run(plugin.awrap(app_name=APP, user_id="alice"))
    assert outcome.status == "saved", outcome.message
    assert "## State" in (alice.load_continuity() or "")
    assert store.load_continuity() is None


def test_failed_compress_keeps_episodes(store: Store) -> None:
    async def broken(prompt: str) -> str:
        raise RuntimeError("model offline")

    _, _, plugin, runner = _setup(store, plugin_kwargs={"wrap_on_end": True, "compress": broken})
    asyncio.run(run_turn(runner, "alice", "Decide to mulch the beds"))
    alice = plugin.session_for(namespace={"project": APP, "user": "alice"})
    assert alice.last_wrap is not None and alice.last_wrap.status != "saved"
    assert alice.store.load_continuity() is None and alice.store.status().episodes_since_wrap >= 2
    assert plugin.wrap(model_compressor(ScriptedLlm()), app_name=APP,
                       user_id="alice").status == "saved"


def test_hook_failures_are_logged_on_the_adapter_logger(tmp_path: Path, caplog) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    llm = ScriptedLlm(answer="still here", inputs=[])
    service = AnnealMemoryService(broken)
    agent = LlmAgent(name="gardener", model=llm, tools=[read_gauge])
    runner = make_runner(agent, plugins=[AnnealMemoryPlugin(service)], memory_service=service)
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(run_turn(runner, "alice", "Carry on regardless")) == "still here"
    assert any(r.name == LOGGER_NAME for r in caplog.records)
    assert asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="x")).memories == []


def test_strict_session_lets_hook_failures_through(tmp_path: Path) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    service = AnnealMemoryService(MemorySession(broken, strict=True))
    agent = LlmAgent(name="gardener", model=ScriptedLlm(answer="x", inputs=[]), tools=[read_gauge])
    runner = make_runner(agent, plugins=[AnnealMemoryPlugin(service)], memory_service=service)
    # ADK re-raises a plugin's error as RuntimeError("Error in plugin ...") from it
    with pytest.raises(RuntimeError, match="is closed"):
        asyncio.run(run_turn(runner, "alice", "Stop when memory fails"))


def test_each_scope_session_copies_the_services_options(tmp_path: Path) -> None:
    service = AnnealMemoryService(tmp_path / "p.db", recall_limit=2, max_content_chars=200)
    scoped = service.memory_for(APP, "alice")
    assert scoped.recall_limit == 2 and scoped.max_content_chars == 200
    asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[
        MemoryEntry(content=types.Content(parts=[types.Part(text="Beans by the fence " * 40)]))]))
    (entry,) = asyncio.run(service.list_memories(app_name=APP, user_id="alice"))
    assert len(entry.content.parts[0].text) < 300  # the session's cap applied
    service.session.close()


def test_configuration_errors_raise_at_construction(store: Store) -> None:
    with pytest.raises(ValidationError):
        AnnealMemoryService(store, max_content_chars=10)
    with pytest.raises(ValidationError):
        AnnealMemoryService(store, search_limit=0)
    with pytest.raises(ValidationError):
        AnnealMemoryPlugin(store)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- per user
def test_each_user_has_their_own_continuity_and_wrap(store: Store) -> None:
    llm, _, _, runner = _setup(store, plugin_kwargs={"wrap_on_end": True})
    asyncio.run(run_turn(runner, "alice", "My locker code is Quasar-1711"))
    alice = store.scoped({"project": APP, "user": "alice"})
    assert "Quasar" in (alice.load_continuity() or "")
    llm.inputs.clear()
    asyncio.run(run_turn(runner, "bob", "What is my locker code?"))
    assert "Quasar" not in "\n".join(llm.inputs)  # neither her continuity nor her recall
    bob = store.scoped({"project": APP, "user": "bob"})
    assert bob.status().total_wraps == 1 and "Quasar" not in (bob.load_continuity() or "")
    assert alice.status().total_wraps == 1 and store.load_continuity() is None
    llm.inputs.clear()
    asyncio.run(run_turn(runner, "alice", "Remind me what my locker code is"))
    assert "Quasar" in "\n".join(llm.inputs)


class _Seen(ScriptedLlm):
    requests: list = []

    async def generate_content_async(self, llm_request, stream: bool = False):
        type(self).requests.append(llm_request)
        async for response in super().generate_content_async(llm_request, stream):
            yield response


def test_continuity_is_a_labelled_user_turn_or_the_system_instruction(store: Store) -> None:
    from anneal_memory.adapters import MEMORY_LABEL

    service = AnnealMemoryService(store)
    alice = service.memory_for(APP, "alice")
    alice.record_decision("Decide to sow leeks in March")
    assert service.memory_for(APP, "alice").wrap(
        __import__("anneal_memory.testing", fromlist=["x"]).scripted_compress).saved
    for role in ("user", "system"):
        _Seen.requests = []
        llm = _Seen(answer="ok", inputs=[])
        agent = LlmAgent(name="gardener", model=llm, tools=[], instruction="Rules.")
        plugin = AnnealMemoryPlugin(service, memory_role=role, inject_recall=False)
        asyncio.run(run_turn(make_runner(agent, plugins=[plugin], memory_service=service),
                             "alice", "What did we decide?"))
        request = _Seen.requests[0]
        system = str(request.config.system_instruction or "")
        turns = [" ".join(p.text for p in c.parts if p.text) for c in request.contents]
        if role == "user":
            assert "leeks" not in system
            assert turns[-2].startswith(MEMORY_LABEL) and "leeks" in turns[-2]
            assert turns[-1] == "What did we decide?"
        else:
            assert "leeks" in system and turns == ["What did we decide?"]


def _scripted_events() -> list[Event]:
    texts = ["The pump needs oil", "Oil the pump and the mower", "The mower needs a blade",
             "日本語のテキストです", "私はPythonを使う", "한국어 텍스트", "Café au lait",
             "nothing in common", "the", "pump pump pump"]
    return [_event("user", t) for t in texts]


# InMemoryMemoryService's answers (google-adk 2.13) for the query without its stop words,
# asserted on every version tested; where the installed ADK's reference has the same
# interface, its answers (to the query without stop words) are compared too. Stop words
# match nothing, as in ADK's DatabaseMemoryService: "the pump" is "pump", "the and or" nothing.
EXPECTED: dict[str, list[str]] = {
    "pump oil": ["The pump needs oil", "Oil the pump and the mower", "pump pump pump"],
    "mower": ["Oil the pump and the mower", "The mower needs a blade"],
    "": [],
    "   ": [],
    "Python": ["私はPythonを使う"],
    "テキスト": ["日本語のテキストです"],
    "한국어": ["한국어 텍스트"],
    "caf\u0065\u0301": ["Café au lait"],  # an NFD query finds NFC text
    "the pump": ["The pump needs oil", "Oil the pump and the mower", "pump pump pump"],
    "the and or": [],
    "The": [],
    "zebra": [],
}


@pytest.mark.parametrize("query", list(EXPECTED))
def test_search_answers_as_in_memory_memory_service(store: Store, query: str) -> None:
    ours = AnnealMemoryService(store)
    events = _scripted_events()

    async def search() -> list[str]:
        await ours.add_events_to_memory(app_name=APP, user_id="u", events=events, session_id="s1")
        return _texts(await ours.search_memory(app_name=APP, user_id="u", query=query))

    got = asyncio.run(search())
    assert got == EXPECTED[query]
    content_words = " ".join(w for w in query.split() if w.lower() not in STOP_WORDS)
    reference = InMemoryMemoryService()
    if hasattr(reference, "add_events_to_memory"):  # google-adk >= 1.2x
        async def theirs() -> list[str]:
            await reference.add_events_to_memory(app_name=APP, user_id="u", events=events,
                                                 session_id="s1")
            return _texts(await reference.search_memory(app_name=APP, user_id="u",
                                                        query=content_words))
        assert got == asyncio.run(theirs())


def test_nfd_text_is_found_by_an_nfc_query(store: Store) -> None:
    import unicodedata

    service = AnnealMemoryService(store)
    nfd = unicodedata.normalize("NFD", "한국어 메모와 ガーデン")
    asyncio.run(service.add_events_to_memory(app_name=APP, user_id="u",
                                             events=[_event("user", nfd)]))
    found = asyncio.run(service.search_memory(
        app_name=APP, user_id="u", query=unicodedata.normalize("NFC", "메모와")))
    assert len(found.memories) == 1


def test_at_most_ten_and_the_best_matches_first(store: Store) -> None:
    service = AnnealMemoryService(store)
    events = [_event("user", f"note {n} about the hedge") for n in range(15)]
    events.append(_event("user", "the hedge needs trimming note"))
    asyncio.run(service.add_events_to_memory(app_name=APP, user_id="u", events=events))
    found = _texts(asyncio.run(service.search_memory(app_name=APP, user_id="u",
                                                     query="hedge trimming")))
    assert len(found) == 10 and found[0] == "the hedge needs trimming note"


def test_a_deleted_memory_is_not_added_back_even_by_a_new_process(store: Store,
                                                                  tmp_path: Path) -> None:
    path = tmp_path / "persist.db"
    events = [_event("user", "The gate code is 8080"), _event("user", "Feed the fish")]

    async def first() -> None:
        service = AnnealMemoryService(path)
        await service.add_events_to_memory(app_name=APP, user_id="u", events=events)
        (gate,) = (await service.search_memory(app_name=APP, user_id="u", query="gate")).memories
        await service.delete_memory(app_name=APP, user_id="u", memory_id=gate.id)
        service.close()

    async def second() -> list[str]:
        service = AnnealMemoryService(path)  # another process: nothing remembered in memory
        await service.add_events_to_memory(app_name=APP, user_id="u", events=events)
        texts = [m.content.parts[0].text for m in await service.list_memories(
            app_name=APP, user_id="u")]
        service.close()
        return texts

    asyncio.run(first())
    assert asyncio.run(second()) == ["Feed the fish"]


def test_namespace_option_and_callable(store: Store) -> None:
    shared = AnnealMemoryService(store, namespace=lambda who: {"user": who.user_id})
    asyncio.run(shared.add_memory(app_name="garden", user_id="u", memories=[
        MemoryEntry(content=types.Content(parts=[types.Part(text="Roses by the wall")]))]))
    found = asyncio.run(shared.search_memory(app_name="orchard", user_id="u", query="roses"))
    assert len(found.memories) == 1  # one memory per user across apps, as asked
    assert store.scoped({"user": "u"}).recall(keyword="Roses").episodes
    with pytest.raises(ValidationError, match="namespace"):
        AnnealMemoryService(store, namespace=42)


def test_stop_word_queries_find_nothing_as_database_memory_service(store: Store) -> None:
    # the cases of ADK's DatabaseMemoryService suite (tests/unittests/memory/
    # test_database_memory_service.py) that our service shares: stop words match nothing
    service = AnnealMemoryService(store)
    events = [_event("user", "The ADK is a great toolkit."),
              _event("model", "I agree. The Agent Development Kit (ADK) rocks!")]

    async def go(svc: AnnealMemoryService, query: str) -> list[str]:
        return _texts(await svc.search_memory(app_name=APP, user_id="u", query=query))

    asyncio.run(service.add_events_to_memory(app_name=APP, user_id="u", events=events))
    assert asyncio.run(go(service, "the and or")) == []
    assert asyncio.run(go(service, "")) == []
    assert len(asyncio.run(go(service, "ADK"))) == 2
    assert asyncio.run(go(service, "development")) == ["I agree. The Agent Development Kit (ADK) rocks!"]
    assert asyncio.run(go(service, "the toolkit")) == ["The ADK is a great toolkit."]
    # stop_words=() is InMemoryMemoryService's rule: every word counts
    every_word = AnnealMemoryService(store, stop_words=())
    assert len(asyncio.run(go(every_word, "the and or"))) == 2
    with pytest.raises(ValidationError, match="stop_words"):
        AnnealMemoryService(store, stop_words="the")


def test_recall_does_not_repeat_the_sessions_own_events(store: Store) -> None:
    """Issue 30 item 3: within one ADK session the turns already in the request (the
    session's events) are left out of the recalled block; a new session recalls them."""
    llm, _, _, runner = _setup(store)

    async def two_turns() -> tuple[str, str]:
        session = await runner.session_service.create_session(app_name=APP, user_id="alice")
        await run_turn(runner, "alice", "The rain barrel holds 200 litres", session.id)
        llm.inputs.clear()
        await run_turn(runner, "alice", "How much does the rain barrel hold?", session.id)
        same = "\n".join(llm.inputs)
        llm.inputs.clear()
        await run_turn(runner, "alice", "How much does the rain barrel hold?")
        return same, "\n".join(llm.inputs)

    same, fresh = asyncio.run(two_turns())
    assert same.count("200 litres") == 1  # the session's own event, not a recalled copy
    assert "<PAST_CONVERSATIONS>" not in same or "200 litres" not in same.split(
        "<PAST_CONVERSATIONS>", 1)[1].split("</PAST_CONVERSATIONS>", 1)[0]
    assert "<PAST_CONVERSATIONS>" in fresh and "200 litres" in fresh


def test_recall_does_not_repeat_a_tool_result_already_in_the_session(store: Store) -> None:
    llm, _, _, runner = _setup(store, call=("read_gauge", {"name": "north"}))

    def recalled(texts: list[str]) -> str:
        joined = "\n".join(texts)
        return "".join(part.split("</PAST_CONVERSATIONS>", 1)[0]
                       for part in joined.split("<PAST_CONVERSATIONS>")[1:])

    async def turns() -> tuple[str, str]:
        session = await runner.session_service.create_session(app_name=APP, user_id="alice")
        await run_turn(runner, "alice", "Read the north gauge", session.id)
        llm.inputs.clear()
        await run_turn(runner, "alice", "Read the north gauge again", session.id)
        same = recalled(llm.inputs)
        llm.inputs.clear()
        await run_turn(runner, "alice", "Read the north gauge again")
        return same, recalled(llm.inputs)

    same, fresh = asyncio.run(turns())
    assert "(toolresult)" in fresh  # a new session recalls the earlier tool result
    assert "(toolresult)" not in same  # the session's own function response is not repeated
