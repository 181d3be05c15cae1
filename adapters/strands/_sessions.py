"""Strands sessions kept in the store: a ``SessionRepository`` on the core's item collections.

Strands' ``RepositorySessionManager`` persists an agent's conversation (the session, each
agent's state, every message) through a ``SessionRepository``; ``FileSessionManager`` and
``S3SessionManager`` are its file and S3 versions. :class:`AnnealSessionRepository` keeps
the same records as JSON items in the memory's database (``strands_sessions``,
``strands_agents``, ``strands_messages``, ``strands_multi_agents``), in the repository's
namespace: one user's sessions live beside that user's memory and are never listed for
another. Items are framework state, not memory: they are not recalled or wrapped (the
memory manager records the turns). :class:`AnnealSessionManager` is the session manager
over it. Errors are Strands' ``SessionException``, where ``FileSessionManager`` raises one.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from strands.session.repository_session_manager import RepositorySessionManager
from strands.session.session_repository import SessionRepository
from strands.types.exceptions import SessionException
from strands.types.session import Session, SessionAgent, SessionMessage

from anneal_memory import Store
from anneal_memory.adapters import MemoryAdapter, from_item_value, item_value
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

from ._memory import LOGGER_NAME

SESSIONS = "strands_sessions"
AGENTS = "strands_agents"
MESSAGES = "strands_messages"
MULTI_AGENTS = "strands_multi_agents"


def _key(*parts: Any) -> str:
    """Ids joined by "/" (each quoted, so an id holding "/" cannot reach another's prefix)."""
    return "/".join(quote(str(p), safe="") for p in parts)


def _message_key(session_id: str, agent_id: str, message_id: int) -> str:
    return f"{_key(session_id, agent_id)}/{int(message_id):012d}"


def _value(item: Any) -> Any:
    """A stored record: NaN / ±Infinity in it (agent state, a tool result) come back as
    Strands' own FileSessionManager gives them (its files are Python's JSON)."""
    return from_item_value(item.value, f"session item {item.key!r}")


class AnnealSessionRepository(MemoryAdapter, SessionRepository):
    """Strands' ``SessionRepository`` in the store's database, in one namespace.

    ``memory`` is a Store, a store path or a MemorySession (as :class:`AnnealMemory`);
    ``namespace=`` a mapping or ``MemoryNamespace`` is whose sessions these are (one
    repository per user, as Strands keys a session by its id only); none: the store's own.
    """

    framework = "strands-agents"
    extra = "strands"
    logger_name = LOGGER_NAME

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 namespace: Any = None) -> None:
        if callable(namespace):
            raise ValidationError("AnnealSessionRepository's namespace is fixed per repository "
                                  "(Strands passes it no run context): pass a mapping or "
                                  "MemoryNamespace")
        self._init_memory(memory, namespace=namespace)

    def _items(self, collection: str) -> Any:
        return self.session.store.items(collection)

    # ------------------------------------------------------------------ sessions
    def create_session(self, session: Session, **kwargs: Any) -> Session:
        items = self._items(SESSIONS)
        if items.get(_key(session.session_id)) is not None:
            raise SessionException(f"Session {session.session_id} already exists")
        items.put(_key(session.session_id), item_value(session.to_dict()))
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> Session | None:
        item = self._items(SESSIONS).get(_key(session_id))
        return None if item is None else Session.from_dict(_value(item))

    def delete_session(self, session_id: str, **kwargs: Any) -> None:
        """Delete a session with its agents, messages and multi-agent states."""
        if not self._items(SESSIONS).delete(_key(session_id)):
            raise SessionException(f"Session {session_id} does not exist")
        prefix = f"{_key(session_id)}/"
        for collection in (AGENTS, MESSAGES, MULTI_AGENTS):
            self._items(collection).delete_prefix(prefix)

    # ------------------------------------------------------------------ agents
    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        self._items(AGENTS).put(_key(session_id, session_agent.agent_id),
                                item_value(session_agent.to_dict()))

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        item = self._items(AGENTS).get(_key(session_id, agent_id))
        return None if item is None else SessionAgent.from_dict(_value(item))

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        previous = self.read_agent(session_id, session_agent.agent_id)
        if previous is None:
            raise SessionException(
                f"Agent {session_agent.agent_id} in session {session_id} does not exist")
        session_agent.created_at = previous.created_at
        self._items(AGENTS).put(_key(session_id, session_agent.agent_id),
                                item_value(session_agent.to_dict()))

    # ------------------------------------------------------------------ messages
    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage,
                       **kwargs: Any) -> None:
        self._items(MESSAGES).put(
            _message_key(session_id, agent_id, session_message.message_id),
            item_value(session_message.to_dict()))

    def read_message(self, session_id: str, agent_id: str, message_id: int,
                     **kwargs: Any) -> SessionMessage | None:
        item = self._items(MESSAGES).get(_message_key(session_id, agent_id, message_id))
        return None if item is None else SessionMessage.from_dict(_value(item))

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage,
                       **kwargs: Any) -> None:
        previous = self.read_message(session_id, agent_id, session_message.message_id)
        if previous is None:
            raise SessionException(f"Message {session_message.message_id} does not exist")
        session_message.created_at = previous.created_at
        self.create_message(session_id, agent_id, session_message)

    def list_messages(self, session_id: str, agent_id: str, limit: int | None = None,
                      offset: int = 0, **kwargs: Any) -> list[SessionMessage]:
        """The agent's messages by message id, from ``offset``, at most ``limit``."""
        if self.read_agent(session_id, agent_id) is None:
            raise SessionException(f"Agent {agent_id} in session {session_id} does not exist")
        items = self._items(MESSAGES).list(prefix=f"{_key(session_id, agent_id)}/")
        items = sorted(items, key=lambda item: item.key)  # zero-padded ids sort as numbers
        chosen = items[offset:] if limit is None else items[offset:offset + limit]
        return [SessionMessage.from_dict(_value(item)) for item in chosen]

    # ------------------------------------------------------------------ multi-agent
    def create_multi_agent(self, session_id: str, multi_agent: Any, **kwargs: Any) -> None:
        self._items(MULTI_AGENTS).put(_key(session_id, multi_agent.id),
                                      item_value(multi_agent.serialize_state()))

    def read_multi_agent(self, session_id: str, multi_agent_id: str,
                         **kwargs: Any) -> dict[str, Any] | None:
        item = self._items(MULTI_AGENTS).get(_key(session_id, multi_agent_id))
        return None if item is None else dict(_value(item))

    def update_multi_agent(self, session_id: str, multi_agent: Any, **kwargs: Any) -> None:
        if self.read_multi_agent(session_id, multi_agent.id) is None:
            raise SessionException(
                f"MultiAgent state {multi_agent.id} in session {session_id} does not exist")
        self.create_multi_agent(session_id, multi_agent)


class AnnealSessionManager(RepositorySessionManager):
    """Strands' ``RepositorySessionManager`` over :class:`AnnealSessionRepository`:
    ``Agent(session_manager=AnnealSessionManager("chat-1", store, namespace={"user": "alice"}))``
    keeps that conversation in the memory's database, in alice's namespace."""

    def __init__(self, session_id: str, memory: Store | MemorySession | str | os.PathLike[str],
                 *, namespace: Any = None, **kwargs: Any) -> None:
        self.repository = AnnealSessionRepository(memory, namespace=namespace)
        super().__init__(session_id=session_id, session_repository=self.repository, **kwargs)
