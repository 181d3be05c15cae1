"""Haystack-specific behaviour: hook points, serialization, async runs, failures."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from haystack.components.agents import Agent
from haystack.components.generators.chat import MockChatGenerator
from haystack.core.serialization_security import allow_deserialization_module
from haystack.dataclasses import ChatMessage, ChatRole
from haystack_scripted import LOOKUP, Scripted, answer

from anneal_memory import Store
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.haystack import HOOK_POINTS, AnnealMemory, AnnealMemoryHook
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="HaystackTest")
    yield s
    s.close()


def _agent(memory: AnnealMemory, scripted: Scripted) -> Agent:
    return Agent(chat_generator=scripted.generator, tools=[LOOKUP], hooks=memory.hooks())


def test_hooks_cover_all_six_points_and_share_one_memory(store: Store) -> None:
    memory = AnnealMemory(store)
    hooks = memory.hooks()
    assert tuple(hooks) == HOOK_POINTS
    assert all(h[0].memory is memory and h[0].point == p for p, h in hooks.items())
    # each hook refuses to be registered at another point
    with pytest.raises(ValueError):
        Agent(chat_generator=MockChatGenerator(), hooks={"after_run": hooks["before_run"]})


def test_hooks_merge_with_existing(store: Store) -> None:
    other = AnnealMemoryHook(AnnealMemory(store), "after_run")
    merged = AnnealMemory(store).hooks({"after_run": [other]}, points=("before_run", "after_run"))
    assert merged["after_run"][0] is other and len(merged["after_run"]) == 2
    assert set(merged) == {"before_run", "after_run"}


def _memory_messages(messages: list[ChatMessage]) -> list[ChatMessage]:
    return [m for m in messages if (m.meta or {}).get("anneal_memory")]


def test_memory_injected_as_labelled_user_message_before_request(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    scripted = Scripted()
    result = _agent(AnnealMemory(store), scripted).run(
        messages=[ChatMessage.from_user("Which greenhouse heater do we have?")])
    (sent,) = scripted.seen
    injected = _memory_messages(sent)
    assert len(injected) == 1
    assert injected[0].role == ChatRole.USER
    assert (injected[0].text or "").startswith(MEMORY_LABEL) and "Zephyrion" in injected[0].text
    index = sent.index(injected[0])
    assert sent[index + 1].text == "Which greenhouse heater do we have?"
    # the memory message is the model's input, not the conversation: never returned
    assert not _memory_messages(result["messages"])
    # the injected block is not itself recorded as a user request
    contexts = [e for e in store.recall(limit=100).episodes if e.type.value == "context"]
    assert [e.content for e in contexts] == ["Which greenhouse heater do we have?"]


def test_system_role_option(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    scripted = Scripted()
    _agent(AnnealMemory(store, memory_role="system"), scripted).run(
        messages=[ChatMessage.from_user("Which greenhouse heater do we have?")])
    injected = _memory_messages(scripted.seen[0])
    assert injected and injected[0].role == ChatRole.SYSTEM


def test_chat_pattern_keeps_one_memory_message_per_model_call(store: Store) -> None:
    """result["messages"] + [new], turn after turn: memory never piles up."""
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    scripted = Scripted(call_tool=True)
    agent = _agent(AnnealMemory(store), scripted)
    history = [ChatMessage.from_user("Which greenhouse heater do we have?")]
    for follow_up in ("And its pump pressure?", "Anything else about the heater?", "Thanks"):
        result = agent.run(messages=history)
        assert not _memory_messages(result["messages"])
        history = result["messages"] + [ChatMessage.from_user(follow_up)]
    assert len(scripted.seen) == 4  # the first turn calls the tool: two model calls
    assert [len(_memory_messages(call)) for call in scripted.seen] == [1] * len(scripted.seen)


def test_concurrent_async_runs_on_one_agent_each_get_their_own_block(store: Store) -> None:
    store.scoped({"user": "alice"}).record("Alice's shed PIN is 4417", "observation")
    store.scoped({"user": "bob"}).record("Bob's shed PIN is 9902", "observation")
    scripted = Scripted(call_tool=True)
    agent = _agent(AnnealMemory(store), scripted)

    async def both() -> None:
        await asyncio.gather(*(agent.run_async(messages=[ChatMessage.from_user(
            f"What is {who}'s shed PIN?")], hook_context={"user_id": who}) for who in ("alice", "bob")))

    asyncio.run(both())
    for call in scripted.seen:
        memory = _memory_messages(call)
        assert len(memory) == 1
        asker = "alice" if any("alice's shed PIN" in (m.text or "") for m in call) else "bob"
        own, other = ("4417", "9902") if asker == "alice" else ("9902", "4417")
        assert own in (memory[0].text or "") and other not in "".join(m.text or "" for m in call)


def test_hook_context_user_ids_scope_recall_and_records(store: Store) -> None:
    memory = AnnealMemory(store)
    scripted = Scripted()
    agent = _agent(memory, scripted)
    agent.run(messages=[ChatMessage.from_user("My bank PIN is 4417")],
              hook_context={"user_id": "alice"})
    agent.run(messages=[ChatMessage.from_user("What is my bank PIN?")],
              hook_context={"user_id": "bob"})
    assert "4417" not in "".join(m.text or "" for m in scripted.seen[-1])
    agent.run(messages=[ChatMessage.from_user("What is my bank PIN?")],
              hook_context={"user_id": "alice"})
    assert "4417" in "".join(m.text or "" for m in _memory_messages(scripted.seen[-1]))
    mine = store.scoped({"user": "alice"}).recall(limit=100).episodes
    assert "My bank PIN is 4417" in [e.content for e in mine]
    assert "4417" not in " ".join(e.content for e in store.scoped({"user": "bob"}).recall(
        limit=100).episodes)
    tenant = store.scoped({"tenant": "acme", "user": "carol", "project": "p1"})
    agent.run(messages=[ChatMessage.from_user("Carol's note: sow carrots")],
              hook_context={"tenant_id": "acme", "user_id": "carol", "project_id": "p1"})
    assert [e.content for e in tenant.recall(limit=10).episodes if e.type.value == "context"] == [
        "Carol's note: sow carrots"]


def test_namespace_option_wins_over_hook_context(store: Store) -> None:
    seen: list[dict] = []

    def who(hook_context: dict) -> dict:
        seen.append(hook_context)
        return {"user": hook_context["session"]["user"]}

    scripted = Scripted()
    agent = _agent(AnnealMemory(store, namespace=who), scripted)
    agent.run(messages=[ChatMessage.from_user("Dana's plot is number 12")],
              hook_context={"session": {"user": "dana"}, "user_id": "ignored"})
    assert seen and seen[0]["session"] == {"user": "dana"}
    assert [e.content for e in store.scoped({"user": "dana"}).recall(limit=10).episodes
            if e.type.value == "context"] == ["Dana's plot is number 12"]
    fixed = AnnealMemory(store, namespace={"user": "erin"})
    _agent(fixed, Scripted()).run(messages=[ChatMessage.from_user("Erin waters on Sundays")],
                                  hook_context={"user_id": "frank"})
    assert store.scoped({"user": "frank"}).status().total_episodes == 0
    assert store.scoped({"user": "erin"}).status().total_episodes == 2


def test_namespace_callable_returning_none_gives_no_memory(store: Store, caplog) -> None:
    store.record("Root secret Zephyrion", "observation")
    scripted = Scripted()
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.haystack"):
        result = _agent(AnnealMemory(store, namespace=lambda ctx: None), scripted).run(
            messages=[ChatMessage.from_user("What is the secret?")])
    assert result["last_message"].text
    assert "Zephyrion" not in "".join(m.text or "" for m in scripted.seen[0])
    assert any("returned None" in r.getMessage() for r in caplog.records)


def test_tool_calls_recorded_as_decisions_when_asked(store: Store) -> None:
    scripted = Scripted(call_tool=True)
    _agent(AnnealMemory(store, record_tool_calls=True), scripted).run(
        messages=[ChatMessage.from_user("Check the pump")])
    decisions = [e for e in store.recall(limit=100).episodes if e.type.value == "decision"]
    assert any("lookup" in e.content and "pump" in e.content for e in decisions)
    tool = [e for e in store.recall(limit=100).episodes if e.trust == "tool"]
    assert len(tool) == 1 and "42 psi" in tool[0].content


def test_outcome_recorded_once_although_on_exit_and_after_run_both_fire(store: Store) -> None:
    scripted = Scripted()
    _agent(AnnealMemory(store), scripted).run(messages=[ChatMessage.from_user("Plan the week")])
    outcomes = [e for e in store.recall(limit=100).episodes if e.type.value == "outcome"]
    assert [e.content for e in outcomes] == ["Final answer: the plan is ready."]


def test_async_run_records_and_wraps(store: Store) -> None:
    scripted = Scripted(call_tool=True)
    memory = AnnealMemory(store, chat_generator=scripted.generator, wrap_on_end=True)
    result = asyncio.run(_agent(memory, scripted).run_async(
        messages=[ChatMessage.from_user("Decide to water the tomatoes at dawn")]))
    assert result["last_message"].text
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status == "saved"
    assert "## State" in (store.load_continuity() or "")
    assert any(e.trust == "tool" for e in store.recall(limit=100).episodes)


def test_refused_wrap_keeps_episodes_for_the_next_wrap(store: Store) -> None:
    bad = Scripted(fail_wrap=True)
    memory = AnnealMemory(store, chat_generator=bad.generator, wrap_on_end=True)
    _agent(memory, bad).run(messages=[ChatMessage.from_user("Decide to prune the roses")])
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status != "saved"
    assert store.load_continuity() is None
    outcome = memory.wrap(compress=_compress_ok)
    assert outcome.status == "saved"
    assert "## State" in (store.load_continuity() or "")


def _compress_ok(prompt: str) -> str:
    from anneal_memory.testing import scripted_compress

    return scripted_compress(prompt)


def test_explicit_wrap_with_compress_callable(store: Store) -> None:
    memory = AnnealMemory(store, compress=_compress_ok)
    scripted = Scripted()
    _agent(memory, scripted).run(messages=[ChatMessage.from_user("Decide to mulch in May")])
    assert store.load_continuity() is None  # wrap_on_end defaults to False
    assert memory.wrap().status == "saved"
    assert store.status().total_wraps == 1


def test_failing_hook_is_logged_and_run_goes_on(store: Store, caplog, monkeypatch) -> None:
    memory = AnnealMemory(store)

    def boom(*args, **kwargs):
        raise RuntimeError("memory exploded")

    monkeypatch.setattr(memory.session, "record_user_input", boom)
    scripted = Scripted()
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.haystack"):
        result = _agent(memory, scripted).run(messages=[ChatMessage.from_user("Go on")])
    assert result["last_message"].text
    assert any("before_run" in r.getMessage() for r in caplog.records)


def test_configuration_errors_raise_at_construction(store: Store) -> None:
    with pytest.raises(ValidationError, match="chat_generator"):
        AnnealMemory(store, wrap_on_end=True)
    with pytest.raises(ValidationError, match="memory_role"):
        AnnealMemory(store, memory_role="assistant")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="chat_generator"):
        AnnealMemory(store, chat_generator=object())
    with pytest.raises(ValidationError, match="hook point"):
        AnnealMemory(store).hooks(points=("before_everything",))
    with pytest.raises(ValidationError, match="project_name"):
        AnnealMemory(store, project_name="Other")
    with pytest.raises(ValidationError, match="nickname"):
        AnnealMemory(store, namespace={"nickname": "al"})


def test_strict_session_lets_hook_failures_through(store: Store, monkeypatch) -> None:
    memory = AnnealMemory(MemorySession(store, strict=True))

    def boom(*args, **kwargs):
        raise RuntimeError("memory exploded")

    monkeypatch.setattr(memory.session, "record_user_input", boom)
    with pytest.raises(RuntimeError, match="memory exploded"):
        _agent(memory, Scripted()).run(messages=[ChatMessage.from_user("Go on")])


def test_agent_serializes_and_loads_with_working_hooks(tmp_path: Path) -> None:
    db = tmp_path / "serial.db"
    generator = MockChatGenerator(response_fn=answer)
    memory = AnnealMemory(db, project_name="Serial", chat_generator=generator, wrap_on_end=True)
    agent = Agent(chat_generator=generator, hooks=memory.hooks())
    data = agent.to_dict()
    memory.close()
    hook_data = data["init_parameters"]["hooks"]["before_run"][0]
    assert hook_data["init_parameters"]["memory"]["init_parameters"]["store"] == str(db)

    # loading code we do not own is refused until the user allows it, as Haystack intends
    allow_deserialization_module("anneal_memory.*")
    allow_deserialization_module("haystack_scripted")
    loaded = Agent.from_dict(data)
    hooks = loaded.hooks
    assert hooks["before_run"][0].memory is hooks["after_run"][0].memory
    loaded.run(messages=[ChatMessage.from_user("Decide to sow carrots in rows")])
    loaded.close()
    with Store(db) as check:
        contents = [e.content for e in check.recall(limit=100).episodes]
        assert "Decide to sow carrots in rows" in contents
        assert "## State" in (check.load_continuity() or "")


def test_store_object_without_path_cannot_serialize(store: Store, monkeypatch) -> None:
    memory = AnnealMemory(store)
    monkeypatch.setattr(memory, "_db_path", None)
    with pytest.raises(ValidationError, match="path"):
        memory.to_dict()


def dana_or_erin(hook_context: dict) -> dict:
    """A module-level namespace callable: serializable by its qualified name."""
    return {"user": hook_context.get("who", "dana")}


def test_agent_with_a_namespace_serializes_and_loads(tmp_path: Path) -> None:
    allow_deserialization_module("anneal_memory.*")
    allow_deserialization_module("test_hooks")
    for namespace in ({"user": "dana"}, dana_or_erin):
        db = tmp_path / f"ns-{getattr(namespace, '__name__', 'fixed')}.db"
        memory = AnnealMemory(db, namespace=namespace)
        data = Agent(chat_generator=MockChatGenerator(response_fn=answer), hooks=memory.hooks()).to_dict()
        memory.close()
        loaded = Agent.from_dict(data)
        loaded.run(messages=[ChatMessage.from_user("Dana sows beans in May")])
        loaded.close()
        with Store(db) as check:
            assert "Dana sows beans in May" in [
                e.content for e in check.scoped({"user": "dana"}).recall(limit=10).episodes]
    with pytest.raises(ValidationError, match="module-level"):
        AnnealMemory(tmp_path / "lambda.db", namespace=lambda ctx: {"user": "x"}).to_dict()

