"""Agno's memory database (``agno.db.base.BaseDb``, its memory methods) over an anneal store.

:class:`AnnealMemoryDb` is the ``db`` of :class:`~anneal_memory.adapters.agno.AnnealMemory`:
every path of Agno's own ``MemoryManager`` that reads or writes through ``self.db`` (the
memory tools its model calls, ``optimize_memories``, an app's own ``db.get_user_memories``)
lands in the same store, one namespace per Agno user. A ``UserMemory`` is one episode:

- ``memory`` is the episode's text; ``memory_id`` its id, or the id Agno (or the app) gave
  the memory, kept in the episode's metadata (``agno_memory_id``) so a memory keeps its id
  for good: added with its own id, replaced, updated by the model or optimized;
- ``topics``, ``input``, ``created_at``, ``updated_at``, ``agent_id``, ``team_id`` and
  ``feedback`` ride in the metadata (``topics``, ``agno_<field>``); an episode written
  otherwise (the run hooks: the user's request, a tool result, an answer) shows its type
  as its topic,
  its time as ``created_at`` / ``updated_at`` and, for the user's request, itself as ``input``;
- an upsert of an id the user already has replaces that memory: the new text is recorded
  (``created_at`` kept) and the old episode erased, as Agno overwrites its row.

Only the memory methods are served: sessions, metrics, knowledge and the rest belong to the
agent's own ``db`` and raise ``NotImplementedError`` here. ``clear_memories()`` (every
user's memories at once) is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agno.db.base import BaseDb
from agno.memory import UserMemory

from anneal_memory import Episode
from anneal_memory.clock import parse_timestamp, utcnow
from anneal_memory.errors import ValidationError
from anneal_memory.governance.scoped import UnscopedView
from anneal_memory.session import MemorySession

#: the user id Agno's memory code uses for a call without one
AGNO_DEFAULT_USER = "default"

#: metadata keys of a memory's own fields
META_ID = "agno_memory_id"
META_TOPICS = "topics"
_FIELDS = ("input", "created_at", "updated_at", "agent_id", "team_id", "feedback")

#: one user's memory (None: this user has none, by the adapter's anonymous policy)
Resolve = Callable[["str | None"], "MemorySession | None"]


def _epoch(timestamp: str) -> int | None:
    try:
        return int(parse_timestamp(timestamp).timestamp())
    except (TypeError, ValueError):  # ValidationError is a ValueError
        return None


def memory_id_of(episode: Episode) -> str:
    """The Agno memory id an episode stands for: the one kept in its metadata, else its
    own id."""
    kept = (episode.metadata or {}).get(META_ID)
    return kept if isinstance(kept, str) and kept else episode.id


def to_user_memory(episode: Episode, user_id: str | None) -> UserMemory:
    """The ``UserMemory`` an episode of ``user_id``'s memory is."""
    meta = episode.metadata or {}
    kind = str(getattr(episode.type, "value", episode.type))
    topics = meta.get(META_TOPICS)
    stamp = _epoch(episode.timestamp)
    created = meta.get("agno_created_at", stamp)
    user_input = meta.get("agno_input")
    if user_input is None and kind == "context" and meta.get("role") == "user":
        user_input = episode.content  # the user's own request: the memory is its input
    return UserMemory(
        memory=episode.content, memory_id=memory_id_of(episode),
        topics=list(topics) if isinstance(topics, list) else (
            None if "agno_created_at" in meta else [kind]),
        user_id=user_id or AGNO_DEFAULT_USER, input=user_input, created_at=created,
        updated_at=meta.get("agno_updated_at", created), feedback=meta.get("agno_feedback"),
        agent_id=meta.get("agno_agent_id"), team_id=meta.get("agno_team_id"))


def _shape(memory: UserMemory, deserialize: bool | None) -> UserMemory | dict[str, Any]:
    return memory if deserialize or deserialize is None else memory.to_dict()


class AnnealMemoryDb(BaseDb):
    """Agno's memory database over anneal memory: ``resolve(user_id)`` is that user's
    memory session (Agno's ``"default"`` user or None: the memory of runs without a user,
    as the adapter's ``anonymous=`` policy says; never every user's)."""

    def __init__(self, resolve: Resolve, *, id: str = "anneal-memory") -> None:
        super().__init__(id=id)
        self._resolve = resolve

    def __repr__(self) -> str:
        return f"AnnealMemoryDb(id={self.id!r})"

    # ------------------------------------------------------------------ reading
    def _session(self, user_id: str | None) -> MemorySession | None:
        return self._resolve(None if user_id in (None, AGNO_DEFAULT_USER) else user_id)

    def episodes(self, user_id: str | None) -> list[Episode]:
        """Every current episode of ``user_id``'s memory (oldest first; a replaced memory
        keeps its place by ``created_at``). The shared memory lists only the episodes
        written without a namespace."""
        session = self._session(user_id)
        if session is None:
            return []
        view = session.store
        if getattr(view, "namespace", None) is None and not hasattr(view, "parent"):
            view = UnscopedView(view)
        found: list[Episode] = []
        while True:
            page = view.recall(limit=1000, offset=len(found)).episodes
            found.extend(page)
            if len(page) < 1000:
                break

        def order(e: Episode) -> tuple[int, str]:
            created = (e.metadata or {}).get("agno_created_at")
            return (created if isinstance(created, int) else _epoch(e.timestamp) or 0,
                    e.timestamp)
        return sorted(found, key=order)

    def find(self, memory_id: str, user_id: str | None) -> Episode | None:
        """The episode of ``user_id``'s memory that is ``memory_id`` (None: not theirs)."""
        if not isinstance(memory_id, str) or not memory_id.strip():
            return None
        return next((e for e in self.episodes(user_id) if memory_id_of(e) == memory_id),
                    None)

    def memories(self, user_id: str | None) -> list[UserMemory]:
        """``user_id``'s memories as Agno's ``UserMemory`` (oldest first)."""
        return [to_user_memory(e, user_id) for e in self.episodes(user_id)]

    def get_user_memory(self, memory_id: str, deserialize: bool | None = True,
                        user_id: str | None = None) -> UserMemory | dict[str, Any] | None:
        """One of ``user_id``'s memories by id (None when it is not theirs)."""
        found = self.find(memory_id, user_id)
        return None if found is None else _shape(to_user_memory(found, user_id), deserialize)

    def get_user_memories(self, user_id: str | None = None, agent_id: str | None = None,
                          team_id: str | None = None, topics: list[str] | None = None,
                          search_content: str | None = None, limit: int | None = None,
                          page: int | None = None, sort_by: str | None = None,
                          sort_order: str | None = None, deserialize: bool | None = True
                          ) -> Any:
        """``user_id``'s memories, filtered, sorted and paged as Agno's databases do
        (``deserialize=False``: ``(dicts, total)``). One user's only: None is Agno's
        ``"default"`` user, never every user's."""
        found = self.memories(user_id)
        if agent_id is not None:
            found = [m for m in found if m.agent_id == agent_id]
        if team_id is not None:
            found = [m for m in found if m.team_id == team_id]
        if topics:
            found = [m for m in found if set(m.topics or ()) & set(topics)]
        if search_content:
            needle = search_content.lower()
            found = [m for m in found if needle in m.memory.lower()]
        if sort_by:
            found.sort(key=lambda m: (getattr(m, sort_by, None) is None,
                                      getattr(m, sort_by, None) or 0),
                       reverse=(sort_order or "desc").lower() != "asc")
        total = len(found)
        if limit is not None and limit > 0:
            start = ((page or 1) - 1) * limit
            found = found[start:start + limit]
        if deserialize or deserialize is None:
            return found
        return [m.to_dict() for m in found], total

    def get_all_memory_topics(self, user_id: str | None = None) -> list[str]:
        """The topics of ``user_id``'s memories, sorted."""
        return sorted({t for m in self.memories(user_id) for t in m.topics or ()})

    def get_user_memory_stats(self, limit: int | None = None, page: int | None = None,
                              user_id: str | None = None) -> tuple[list[dict[str, Any]], int]:
        """``user_id``'s count and last update (one user's: never a list of every user)."""
        found = self.memories(user_id)
        if not found:
            return [], 0
        last = max(m.updated_at or m.created_at or 0 for m in found)
        return [{"user_id": user_id or AGNO_DEFAULT_USER, "total_memories": len(found),
                 "last_memory_updated_at": last}], 1

    # ------------------------------------------------------------------ writing
    def upsert_user_memory(self, memory: UserMemory, deserialize: bool | None = True
                           ) -> UserMemory | dict[str, Any] | None:
        """Write ``memory`` to its user's memory (``memory.user_id``; None: Agno's
        ``"default"``): a new memory is a new ``observation``; an id the user already has
        is replaced (its ``created_at`` kept). ``memory_id`` (made when None) and
        ``updated_at`` are set on ``memory``. None when this user has no memory (the
        adapter's ``anonymous="none"``)."""
        if not isinstance(memory, UserMemory):
            raise ValidationError(f"upsert_user_memory takes a UserMemory, not "
                                  f"{type(memory).__name__}")
        if not isinstance(memory.memory, str) or not memory.memory.strip():
            raise ValidationError("a memory needs its text (UserMemory.memory is empty)")
        session = self._session(memory.user_id)
        if session is None:
            return None
        old = self.find(memory.memory_id, memory.user_id) if memory.memory_id else None
        now = int(utcnow().timestamp())  # the store's clock (a frozen one in tests)
        if old is not None:
            created = to_user_memory(old, memory.user_id).created_at
        else:
            created = memory.created_at if memory.created_at is not None else now
        memory.created_at = created
        if not memory.updated_at:
            memory.updated_at = now
        meta: dict[str, Any] = {f"agno_{f}": getattr(memory, f) for f in _FIELDS
                                if getattr(memory, f) is not None}
        if memory.topics:
            meta[META_TOPICS] = [str(t) for t in memory.topics]
        if memory.memory_id:
            meta[META_ID] = memory.memory_id
        episode = session.store.record(memory.memory, "observation", metadata=meta)
        if old is not None:
            session.store.delete(old.id)
        if not memory.memory_id:
            memory.memory_id = episode.id
        memory.user_id = memory.user_id or AGNO_DEFAULT_USER
        return _shape(memory, deserialize)

    def upsert_memories(self, memories: list[UserMemory], deserialize: bool | None = True,
                        preserve_updated_at: bool = False) -> list[Any]:
        """:meth:`upsert_user_memory` of each."""
        done = [self.upsert_user_memory(m, deserialize) for m in memories]
        return [m for m in done if m is not None]

    def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> None:
        """Delete one of ``user_id``'s memories for good (another user's id: nothing)."""
        found = self.find(memory_id, user_id)
        session = self._session(user_id)
        if found is not None and session is not None:
            session.store.delete(found.id)

    def delete_user_memories(self, memory_ids: list[str], user_id: str | None = None) -> None:
        """Delete those of ``memory_ids`` that are ``user_id``'s memories, at once."""
        wanted = set(memory_ids)
        ids = [e.id for e in self.episodes(user_id) if memory_id_of(e) in wanted]
        session = self._session(user_id)
        if ids and session is not None:
            session.store.erase(ids)

    def clear_memories(self) -> None:
        """Refused: it would erase every user's memories at once."""
        raise ValidationError("clearing every user's memories at once is refused: clear one "
                              "user's with clear_user_memories(user_id), or erase a namespace "
                              "with Store.erase_namespace (CLI / console)")


def _not_served(name: str) -> Callable[..., Any]:
    def method(self: AnnealMemoryDb, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"AnnealMemoryDb holds memories only: {name}() belongs to the agent's own db "
            "(Agent(db=SqliteDb(...)) for sessions, metrics, knowledge...)")
    method.__name__ = name
    return method


# Agno's BaseDb declares every table's methods abstract (their number changes between
# releases): the ones this memory database does not serve say so when called.
for _name in sorted(BaseDb.__abstractmethods__ - set(vars(AnnealMemoryDb))):
    setattr(AnnealMemoryDb, _name, _not_served(_name))
AnnealMemoryDb.__abstractmethods__ = frozenset()
