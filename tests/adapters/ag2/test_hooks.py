"""AG2 register_hook behaviour on real ConversableAgent chats."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from ag2_scripted import make_pair, scripted, tool_call
from autogen import ConversableAgent

from anneal_memory import Store
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.ag2 import MEMORY_NAME, AnnealMemory, ChatContext
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession
from anneal_memory.testing import scripted_compress


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="AG2Test")
    yield s
    s.close()


def _view(store: Store, user: str = "user"):
    """The memory of ``user``'s chats with the assistant (AG2's default identity)."""
    return store.scoped({"user": user, "agent": "assistant"})


def _chat(memory: AnnealMemory, replies: list, message: str, **kwargs):
    assistant, user = make_pair()
    memory.add_to_agent(assistant)
    with scripted(assistant, replies, fail_wrap=kwargs.pop("fail_wrap", False)) as client:
        result = user.initiate_chat(assistant, message=message, max_turns=3, silent=True)
    return assistant, user, client, result


def test_hooks_registered_on_the_native_points(store: Store) -> None:
    assistant, _ = make_pair()
    AnnealMemory(store).add_to_agent(assistant)
    assert len(assistant.hook_lists["process_all_messages_before_reply"]) == 1
    assert len(assistant.hook_lists["process_message_before_send"]) == 1


def test_memory_reaches_the_model_but_not_the_history(store: Store) -> None:
    _view(store).record("The greenhouse heater is a Zephyrion 4000", "observation")
    assistant, user, client, _ = _chat(AnnealMemory(store), ["A Zephyrion. TERMINATE"],
                                       "Which greenhouse heater do we have?")
    assert any("Zephyrion" in text for text in client.inputs)
    assert any(text.startswith(MEMORY_LABEL) for text in client.inputs)
    history = assistant.chat_messages[user]
    assert not any(m.get("name") == MEMORY_NAME for m in history)


def test_tool_results_and_calls_recorded(store: Store) -> None:
    memory = AnnealMemory(store, record_tool_calls=True)
    _chat(memory, [tool_call(), "Pump is fine. TERMINATE"], "Check the pump")
    episodes = store.recall(limit=100).episodes
    tool = [e for e in episodes if e.trust == "tool"]
    assert len(tool) == 1 and "lookup" in tool[0].content and "42 psi" in tool[0].content
    assert any("lookup" in e.content for e in episodes if e.type.value == "decision")
    assert [e.content for e in episodes if e.type.value == "outcome"] == ["Pump is fine. TERMINATE"]
    assert [e.content for e in episodes if e.type.value == "context"] == ["Check the pump"]


def test_wrap_on_end_uses_the_agents_own_model(store: Store) -> None:
    memory = AnnealMemory(store, wrap_on_end=True)
    _chat(memory, ["Water at dawn. TERMINATE"], "Decide when to water the tomatoes")
    assert memory.session_of().last_wrap is not None and memory.session_of().last_wrap.saved
    assert "## State" in (_view(store).load_continuity() or "")


def test_refused_wrap_keeps_episodes(store: Store) -> None:
    memory = AnnealMemory(store, wrap_on_end=True)
    _chat(memory, ["Prune in March. TERMINATE"], "Decide when to prune", fail_wrap=True)
    assert memory.session_of().last_wrap is not None and not memory.session_of().last_wrap.saved
    assert _view(store).load_continuity() is None
    assert memory.wrap(compress=scripted_compress).status == "saved"
    assert _view(store).status().total_wraps == 1


def test_async_chat_runs_the_same_hooks(store: Store) -> None:
    _view(store).record("The greenhouse heater is a Zephyrion 4000", "observation")
    assistant, user = make_pair()
    AnnealMemory(store).add_to_agent(assistant)
    with scripted(assistant, ["A Zephyrion. TERMINATE"]) as client:
        asyncio.run(user.a_initiate_chat(assistant, message="Which greenhouse heater?",
                                         max_turns=2, silent=True))
    assert any("Zephyrion" in text for text in client.inputs)
    outcomes = [e for e in store.recall(limit=100).episodes if e.type.value == "outcome"]
    assert outcomes and outcomes[0].content == "A Zephyrion. TERMINATE"


def test_failing_hook_is_logged_and_chat_goes_on(store: Store, caplog, monkeypatch) -> None:
    memory = AnnealMemory(store)

    def boom(*args, **kwargs):
        raise RuntimeError("memory exploded")

    monkeypatch.setattr(MemorySession, "memory_block", boom)  # every namespace's session
    monkeypatch.setattr(MemorySession, "record_outcome", boom)
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.ag2"):
        *_, result = _chat(memory, ["Still here. TERMINATE"], "Go on")
    assert "Still here" in result.summary
    messages = [r.getMessage() for r in caplog.records]
    assert any("_recall_into failed: memory exploded" in m for m in messages)
    assert any("_record_sent failed: memory exploded" in m for m in messages)


def test_configuration_errors(store: Store) -> None:
    with pytest.raises(ValidationError, match="memory_role"):
        AnnealMemory(store, memory_role="assistant")  # type: ignore[arg-type]
    memory = AnnealMemory(store)
    first, _ = make_pair()
    second, _ = make_pair()
    memory.add_to_agent(first)
    with pytest.raises(ValidationError, match="one AnnealMemory per agent"):
        memory.add_to_agent(second)
    no_llm = ConversableAgent("plain", llm_config=False, human_input_mode="NEVER")
    with pytest.raises(ValidationError, match="llm_config"):
        AnnealMemory(store, wrap_on_end=True).add_to_agent(no_llm)


def test_strict_session_lets_hook_failures_through(store: Store, monkeypatch) -> None:
    memory = AnnealMemory(MemorySession(store, strict=True))

    def boom(*args, **kwargs):
        raise RuntimeError("memory exploded")

    monkeypatch.setattr(MemorySession, "memory_block", boom)  # every namespace's session
    with pytest.raises(RuntimeError, match="memory exploded"):
        _chat(memory, ["Never sent. TERMINATE"], "Go on")


def test_one_assistant_two_users_never_see_each_other(store: Store) -> None:
    assistant, _ = make_pair()
    memory = AnnealMemory(store)
    memory.add_to_agent(assistant)

    def talk(user: str, message: str):
        _, partner = make_pair(user_name=user, assistant=assistant)
        with scripted(assistant, ["Noted. TERMINATE"]) as client:
            partner.initiate_chat(assistant, message=message, max_turns=2, silent=True)
        return client.inputs

    talk("alice", "My locker code is 4417 Quasar")
    talk("bob", "My locker code is 9902 Nebula")
    alice, bob = talk("alice", "What is my locker code?"), talk("bob", "What is my locker code?")
    assert any("Quasar" in t for t in alice) and not any("Nebula" in t for t in alice)
    assert any("Nebula" in t for t in bob) and not any("Quasar" in t for t in bob)
    assert [e.content for e in _view(store, "alice").recall(limit=10).episodes
            if e.type.value == "context"][-1] == "My locker code is 4417 Quasar"


def test_namespace_option_and_callable(store: Store) -> None:
    seen: list[ChatContext] = []

    def whose(chat: ChatContext) -> dict:
        seen.append(chat)
        return {"tenant": "allotments", "user": chat.partner}

    _chat(AnnealMemory(store, namespace=whose), ["Noted. TERMINATE"], "Plot 12 is mine")
    assert seen and seen[0].partner == "user" and seen[0].agent.name == "assistant"
    assert store.scoped({"tenant": "allotments", "user": "user"}).status().total_episodes == 2
    _chat(AnnealMemory(store, namespace={"user": "fixed"}), ["Noted. TERMINATE"], "Plot 13")
    assert store.scoped({"user": "fixed"}).status().total_episodes == 2
    with pytest.raises(ValidationError, match="nickname"):
        AnnealMemory(store, namespace={"nickname": "x"})


def test_tools_the_agent_executes_itself_keep_their_name(store: Store) -> None:
    """The memory on the executor: the results it sends are tool output, by tool name."""
    assistant, user = make_pair()
    executor_memory = AnnealMemory(store)
    executor_memory.add_to_agent(user)
    with scripted(assistant, [tool_call(), "Pump is fine. TERMINATE"]):
        user.initiate_chat(assistant, message="Check the pump", max_turns=3, silent=True)
    view = store.scoped({"user": "assistant", "agent": "user"})  # the executor's partner
    tool = [e for e in view.recall(limit=100).episodes if e.trust == "tool"]
    assert len(tool) == 1 and tool[0].content.startswith("Tool lookup returned:")


def test_wrap_on_end_wraps_once_per_chat_not_per_reply(store: Store) -> None:
    memory = AnnealMemory(store, wrap_on_end=True)
    assistant, user = make_pair()
    memory.add_to_agent(assistant)
    # three replies in one chat: the user agent answers each with an empty auto-reply
    with scripted(assistant, ["First.", "Second.", "Third. TERMINATE"]) as client:
        user.initiate_chat(assistant, message="Plan the beds", max_turns=3, silent=True)
    assert _view(store).status().total_wraps == 1
    assert client.wrap_prompts == 1


def test_a_chat_cut_by_max_turns_wraps_when_the_next_one_starts(store: Store) -> None:
    memory = AnnealMemory(store, wrap_on_end=True)
    assistant, user = make_pair()
    memory.add_to_agent(assistant)
    with scripted(assistant, ["Thinking about it."]):
        user.initiate_chat(assistant, message="Plan the beds", max_turns=1, silent=True)
    assert _view(store).status().total_wraps == 0  # the chat's end was not seen
    with scripted(assistant, ["Done. TERMINATE"]):
        user.initiate_chat(assistant, message="And the paths?", max_turns=1, silent=True)
    assert _view(store).status().total_wraps == 2  # the first chat, then this one

