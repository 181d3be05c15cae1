"""AnnealSessionRepository behaves as Strands' FileSessionManager (its file repository) on
the SessionRepository calls (cases after Strands' own test_file_session_manager.py, run on
both), and AnnealSessionManager keeps a real agent's conversation in the store, per
namespace."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from strands import Agent
from strands.agent.conversation_manager.null_conversation_manager import (
    NullConversationManager,
)
from strands.session import FileSessionManager
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage, SessionType
from strands_scripted import ScriptedModel, lookup

from anneal_memory import Store, ValidationError
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.strands import (
    AnnealMemory,
    AnnealSessionManager,
    AnnealSessionRepository,
)


@pytest.fixture(params=["file", "anneal"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "file":
        yield FileSessionManager(session_id="fixture", storage_dir=str(tmp_path / "files"))
        return
    store = Store(tmp_path / "memory.db")
    yield AnnealSessionRepository(store, namespace={"user": "alice"})
    store.close()


def _session(sid: str = "test-session") -> Session:
    return Session(session_id=sid, session_type=SessionType.AGENT)


def _agent(aid: str = "test-agent") -> SessionAgent:
    return SessionAgent(agent_id=aid, state={"key": "value"},
                        conversation_manager_state=NullConversationManager().get_state())


def _message(index: int, text: str = "Hello world") -> SessionMessage:
    return SessionMessage.from_message({"role": "user", "content": [{"text": text}]}, index)


def test_sessions_create_read_delete(repo: Any) -> None:
    assert repo.create_session(_session()).session_id == "test-session"
    assert repo.read_session("test-session").session_type == SessionType.AGENT
    assert repo.read_session("nope") is None
    with pytest.raises(SessionException):
        repo.create_session(_session())
    repo.delete_session("test-session")
    assert repo.read_session("test-session") is None
    with pytest.raises(SessionException):
        repo.delete_session("test-session")


def test_agents_create_read_update(repo: Any) -> None:
    repo.create_session(_session())
    repo.create_agent("test-session", _agent())
    assert repo.read_agent("test-session", "test-agent").state == {"key": "value"}
    assert repo.read_agent("test-session", "other") is None
    created = repo.read_agent("test-session", "test-agent").created_at
    changed = _agent()
    changed.state = {"key": "new"}
    repo.update_agent("test-session", changed)
    again = repo.read_agent("test-session", "test-agent")
    assert again.state == {"key": "new"} and again.created_at == created
    with pytest.raises(SessionException):
        repo.update_agent("test-session", _agent("missing"))


def test_messages_create_read_update_and_page(repo: Any) -> None:
    repo.create_session(_session())
    repo.create_agent("test-session", _agent())
    assert repo.list_messages("test-session", "test-agent") == []
    for i in range(12):  # past 10: ids must sort as numbers
        repo.create_message("test-session", "test-agent", _message(i, f"message {i}"))
    assert repo.read_message("test-session", "test-agent", 3).message["content"][0][
        "text"] == "message 3"
    assert repo.read_message("test-session", "test-agent", 99) is None
    ids = [m.message_id for m in repo.list_messages("test-session", "test-agent")]
    assert ids == list(range(12))
    assert [m.message_id for m in repo.list_messages("test-session", "test-agent",
                                                     limit=3)] == [0, 1, 2]
    assert [m.message_id for m in repo.list_messages("test-session", "test-agent",
                                                     offset=10)] == [10, 11]
    updated = _message(3, "redacted")
    repo.update_message("test-session", "test-agent", updated)
    assert repo.read_message("test-session", "test-agent", 3).message["content"][0][
        "text"] == "redacted"
    with pytest.raises(SessionException):
        repo.update_message("test-session", "test-agent", _message(50))


def test_multi_agent_state(repo: Any) -> None:
    class Graph:
        id = "test-multi-agent"

        def __init__(self, state: dict[str, Any]) -> None:
            self.state = state

        def serialize_state(self) -> dict[str, Any]:
            return {"id": self.id, "state": self.state}

    repo.create_session(_session())
    assert repo.read_multi_agent("test-session", "test-multi-agent") is None
    with pytest.raises(SessionException):
        repo.update_multi_agent("test-session", Graph({"n": 0}))
    repo.create_multi_agent("test-session", Graph({"n": 1}))
    repo.update_multi_agent("test-session", Graph({"n": 2}))
    assert repo.read_multi_agent("test-session", "test-multi-agent")["state"] == {"n": 2}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_non_finite_values_round_trip_as_in_files(repo: Any, value: float) -> None:
    """Agent state, a tool result and multi-agent state holding NaN / an infinity come back
    as the file repository gives them (its files are Python's JSON; the store's JSON
    refused them)."""
    repo.create_session(_session())
    agent = _agent()
    agent.state = {"reading": value}
    repo.create_agent("test-session", agent)
    repo.create_message("test-session", "test-agent", SessionMessage.from_message(
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "success",
                                                      "content": [{"json": {"x": value}}]}}]},
        0))

    class Graph:
        id = "graph"

        def serialize_state(self) -> dict[str, Any]:
            return {"id": self.id, "state": {"score": value}}

    repo.create_multi_agent("test-session", Graph())
    got = [repo.read_agent("test-session", "test-agent").state["reading"],
           repo.read_message("test-session", "test-agent", 0).message["content"][0][
               "toolResult"]["content"][0]["json"]["x"],
           repo.list_messages("test-session", "test-agent")[0].message["content"][0][
               "toolResult"]["content"][0]["json"]["x"],
           repo.read_multi_agent("test-session", "graph")["state"]["score"]]
    for restored in got:
        assert math.isnan(restored) if math.isnan(value) else restored == value


def test_a_real_agent_restores_its_conversation_as_with_files(tmp_path: Path) -> None:
    store = Store(tmp_path / "memory.db")
    restored: dict[str, Any] = {}
    for kind in ("file", "anneal"):
        def manager(kind: str = kind) -> Any:
            if kind == "file":
                return FileSessionManager(session_id="s1", storage_dir=str(tmp_path / "f"))
            return AnnealSessionManager("s1", store, namespace={"user": "alice"})

        first = Agent(model=ScriptedModel(call_tool=True), tools=[lookup],
                      callback_handler=None, session_manager=manager(),
                      state={"last_user": "alice"})
        first("Check the pump pressure")
        scripted = ScriptedModel()
        again = Agent(model=scripted, tools=[lookup], callback_handler=None,
                      session_manager=manager())
        messages = [{k: v for k, v in m.items() if k != "tracking_id"}  # a fresh uuid each
                    for m in again.messages]
        restored[kind] = (messages, again.state.get())
        again("And the valve?")
        assert "toolresult" in scripted.inputs[0]  # the restored history reached the model
    assert restored["anneal"] == restored["file"]
    assert len(restored["anneal"][0]) == 4 and restored["anneal"][1] == {"last_user": "alice"}
    bob = Agent(model=ScriptedModel(), callback_handler=None,
                session_manager=AnnealSessionManager("s1", store, namespace={"user": "bob"}))
    assert bob.messages == []  # the same session id in another namespace is another session
    store.close()


def test_memory_and_sessions_in_one_database_keep_apart(mem_store: Store) -> None:
    mem_store.scoped({"user": "alice"}).record("The pump runs at 42 psi", "observation")
    agent = Agent(model=ScriptedModel(), callback_handler=None,
                  memory_manager=AnnealMemory(mem_store, namespace={"user": "alice"}),
                  session_manager=AnnealSessionManager("s1", mem_store,
                                                       namespace={"user": "alice"}))
    agent("What pressure does the pump use?")
    kept = AnnealSessionRepository(mem_store, namespace={"user": "alice"}).list_messages(
        "s1", "default")
    assert [m.message["role"] for m in kept] == ["user", "assistant"]
    assert MEMORY_LABEL not in repr([m.message for m in kept])  # the block is per call only


def test_a_repository_has_one_identity(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="fixed per repository"):
        AnnealSessionRepository(mem_store, namespace=lambda run: {"user": "x"})
    with pytest.raises(ValidationError, match="namespace="):
        AnnealSessionManager("s1", mem_store, namespace={"user": " "})
