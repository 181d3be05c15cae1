"""``AnnealSession``: the SDK's ``Session`` protocol over an item collection of the store.

A Session is the conversation's transcript: framework state the SDK reads back at the
start of every run. Its items live in the namespace's ``openai_agents.session`` item
collection (``store.items``), kept apart from memory: they are never recalled, wrapped or
recorded as episodes (the hooks of :class:`AnnealMemory` record the episodes, once), so
hooks and Session together never store a message twice.

Identity: a session is one memory's (by default ``{"user": session_id}``, or
``namespace=``). When a run uses it, :class:`AnnealMemory`'s instructions and hooks in that
run recall from and record into that memory: the SDK hands the session the run's context
(the ``wrapper`` argument of each method), and the session leaves its namespace there.
"""

from __future__ import annotations

import asyncio
import copy
import os
import secrets
import threading
import time
import weakref
from typing import Any
from urllib.parse import quote

from agents.memory import SessionSettings

from anneal_memory import MemoryNamespace, Store
from anneal_memory.adapters import (
    MemoryAdapter,
    check_identity,
    check_namespace,
    from_item_value,
    item_value,
)
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

COLLECTION = "openai_agents.session"

#: id(run usage) -> the AnnealSession that run uses (the SDK shares one Usage object
#: between a run's context wrapper, its hook contexts and its tool contexts)
_RUNS: dict[int, AnnealSession] = {}


def session_of_run(context: Any) -> AnnealSession | None:
    """The AnnealSession the run of ``context`` (any of the SDK's run contexts) uses."""
    usage = getattr(context, "usage", None)
    return _RUNS.get(id(usage)) if usage is not None else None


class SessionMemory(MemoryAdapter):
    """The base of this adapter's :class:`AnnealMemory`: what an :class:`AnnealSession`
    recognises as the memory whose hooks run with it. Declared here, below the hooks'
    module, so that module imports this one and never the other way round."""


def _item_of(item: Any) -> Any:
    """A session item as stored (a copy): NaN / ±Infinity in it (a tool's output, a
    model's scores) come back as the SDK's own SQLiteSession gives them."""
    return copy.deepcopy(from_item_value(item.value, f"session item {item.key!r}"))


class AnnealSession:
    """Conversation history for one ``session_id``, kept in ``memory``'s store.

    A structural implementation of ``agents.memory.Session``: pass it as
    ``Runner.run(agent, input, session=AnnealSession("user-42", memory))``. ``memory`` is
    the :class:`AnnealMemory` whose hooks run with it (recommended), a ``Store``, a store
    path or a ``MemorySession``. ``namespace`` is whose memory the session belongs to
    (default: a fixed namespace of ``memory``, else ``{"user": session_id}``).
    ``session_settings.limit`` caps what ``get_items()`` returns when no limit is given.
    """

    def __init__(self, session_id: str,
                 memory: SessionMemory | Store | MemorySession | str | os.PathLike[str], *,
                 namespace: Any = None, session_settings: SessionSettings | None = None) -> None:
        if not isinstance(session_id, str):
            raise ValidationError("session_id must be a non-empty string, e.g. the user's id")
        check_identity(session_id, "the AnnealSession's session_id")
        base = _base_session(memory)
        self.session_id = session_id
        self.session_settings = session_settings
        self._owned = base if base.owns_store else None
        if getattr(base.store, "namespace", None) is not None:  # a view: that one memory
            if namespace is not None:
                raise ValidationError("the memory you pass is already one namespace view: "
                                      "drop namespace=")
            view = base.store
        else:
            if namespace is None:
                namespace = _fixed_namespace(memory)
            if namespace is None:
                namespace = {"user": session_id}
            check_namespace(namespace)
            if callable(namespace):
                raise ValidationError("an AnnealSession belongs to one memory: pass a mapping "
                                      "or a MemoryNamespace, not a callable")
            try:
                view = base.store.scoped(namespace)
            except ValidationError as exc:
                raise ValidationError(f"{exc} (the default namespace is {{'user': session_id}}: "
                                      "pass namespace= for a session id that is no user id)"
                                      ) from None
        self.store = view
        #: the memory this session's runs use
        self.namespace: MemoryNamespace = view.namespace
        self._root = getattr(view, "parent", view)
        self._items = view.items(COLLECTION)
        self._prefix = quote(session_id, safe="") + "/"
        # One writer at a time keeps an add's items in order; nothing awaits inside it.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AnnealSession({self.session_id!r}, namespace={self.namespace.label()!r})"

    def belongs_to(self, store: Store) -> bool:
        """Whether this session's memory is in ``store``'s database."""
        return self._root is getattr(store, "parent", store)

    def _bind(self, wrapper: Any) -> None:
        usage = getattr(wrapper, "usage", None)
        if usage is None:
            return
        key = id(usage)
        if _RUNS.get(key) is not self:
            _RUNS[key] = self
            weakref.finalize(usage, _RUNS.pop, key, None)

    # ------------------------------------------------------------------ the protocol
    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Any]:
        """The latest ``limit`` items (all when no limit is set), oldest first."""
        self._bind(wrapper)
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit <= 0:
            return []
        found = await asyncio.to_thread(self._items.list, prefix=self._prefix, order="desc",
                                        limit=limit)
        return [_item_of(item) for item in reversed(found)]

    async def add_items(self, items: list[Any], *, wrapper: Any = None) -> None:
        """Store each item, in order."""
        self._bind(wrapper)
        values = [i if isinstance(i, dict) else i.model_dump(mode="json", exclude_unset=True)
                  for i in items]

        def put() -> None:
            with self._lock:
                for value in values:
                    key = f"{self._prefix}{time.time_ns():020d}-{secrets.token_hex(4)}"
                    self._items.put(key, item_value(value),
                                    metadata={"session_id": self.session_id})
        await asyncio.to_thread(put)

    async def pop_item(self, *, wrapper: Any = None) -> Any | None:
        """Remove and return the most recent item, or None when the session is empty."""
        self._bind(wrapper)

        def pop() -> Any | None:
            with self._lock:
                last = self._items.list(prefix=self._prefix, order="desc", limit=1)
                if not last:
                    return None
                self._items.delete(last[0].key)
                return _item_of(last[0])
        return await asyncio.to_thread(pop)

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Remove every item of this session (other sessions' items are untouched)."""
        self._bind(wrapper)

        def clear() -> None:
            with self._lock:
                self._items.delete_prefix(self._prefix)
        await asyncio.to_thread(clear)

    def close(self) -> None:
        """Close the store if this session opened it (from a path)."""
        if self._owned is not None:
            self._owned.close()


def _base_session(memory: Any) -> MemorySession:
    if isinstance(memory, SessionMemory):
        return memory.base_session
    try:
        return MemorySession.ensure(memory)
    except ValidationError:
        raise ValidationError(
            f"AnnealSession needs an AnnealMemory, a Store, a store path or a MemorySession, "
            f"not {type(memory).__name__}") from None


def _fixed_namespace(memory: Any) -> Any:
    if isinstance(memory, SessionMemory):
        option = memory._anneal.namespace
        if option is not None and not callable(option):
            return memory.session.namespace  # the option, as the MemoryNamespace it names
    return None
