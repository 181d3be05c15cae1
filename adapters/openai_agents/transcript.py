"""``AnnealSession``: the SDK's ``Session`` protocol backed by the episodic store.

Each input item becomes one episode, so conversation history lands in the same store the
wrap compresses and recall searches. The exact item is kept in the episode's metadata (and
given back verbatim by :meth:`get_items`); the episode content is its readable text, typed
by role: the user's messages ``context``, tool outputs ``observation`` with
``trust="tool"``, assistant messages ``outcome``, tool calls and other items
``observation``. Items are tagged with ``source="openai-agents:<session_id>"``.

``pop_item`` and ``clear_session`` delete episodes (the store keeps an audited tombstone),
because the SDK uses them to take back items it retries or corrects.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

from agents.memory import SessionSettings

from anneal_memory import Store
from anneal_memory.errors import ValidationError

from .items import item_text

logger = logging.getLogger("anneal_memory.adapters.openai_agents")

_META_KEY = "openai_agents_item"
_SEQ_KEY = "openai_agents_seq"


def _episode_kind(item: dict[str, Any]) -> tuple[str, str]:
    """(episode type, trust) for one item."""
    kind = item.get("type")
    if kind == "function_call_output":
        return "observation", "tool"
    role = item.get("role")
    if role == "user":
        return "context", "agent"
    if role == "assistant":
        return "outcome", "agent"
    return "observation", "agent"


class AnnealSession:
    """Conversation history for one ``session_id``, stored as episodes in ``store``.

    A structural implementation of ``agents.memory.Session``: pass it as
    ``Runner.run(agent, input, session=AnnealSession("user-42", store))``.
    ``session_settings.limit`` caps what ``get_items()`` returns when no limit is given.
    """

    def __init__(self, session_id: str, store: Store, *,
                 session_settings: SessionSettings | None = None) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValidationError("session_id must be a non-empty string, e.g. the user's id")
        if not isinstance(store, Store):
            raise ValidationError(
                f"AnnealSession needs a Store, got {type(store).__name__}: pass Store('memory.db')")
        self.session_id = session_id
        self.store = store
        self.session_settings = session_settings
        self.source = f"openai-agents:{session_id}"
        # One writer at a time keeps the sequence numbers ordered. Nothing awaits inside the
        # lock, so a thread lock also covers runs on several threads.
        self._lock = threading.Lock()

    def _episodes(self) -> list[Any]:
        """This session's item episodes, oldest first."""
        result = self.store.recall(source=self.source, limit=1_000_000)
        episodes = [e for e in result.episodes if _META_KEY in (e.metadata or {})]
        return sorted(episodes, key=lambda e: e.metadata[_SEQ_KEY])

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest ``limit`` items (all when no limit is set), oldest first."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        episodes = self._episodes()
        if limit is not None:
            episodes = episodes[-limit:] if limit > 0 else []
        return [copy.deepcopy(e.metadata[_META_KEY]) for e in episodes]

    async def add_items(self, items: list[Any]) -> None:
        """Store each item as one episode, in order."""
        with self._lock:
            existing = self._episodes()
            seq = existing[-1].metadata[_SEQ_KEY] + 1 if existing else 0
            for item in items:
                data = item if isinstance(item, dict) else item.model_dump(exclude_unset=True)
                episode_type, trust = _episode_kind(data)
                text = item_text(data).strip() or f"[{data.get('type', 'item')}]"
                self.store.record(text, episode_type, source=self.source, trust=trust,
                                  metadata={_META_KEY: data, _SEQ_KEY: seq,
                                            "session_id": self.session_id})
                seq += 1

    async def pop_item(self) -> Any | None:
        """Remove and return the most recent item, or None when the session is empty."""
        with self._lock:
            episodes = self._episodes()
            if not episodes:
                return None
            last = episodes[-1]
            self.store.delete(last.id)
            return copy.deepcopy(last.metadata[_META_KEY])

    async def clear_session(self) -> None:
        """Remove every item of this session (other sessions' items are untouched)."""
        with self._lock:
            for episode in self._episodes():
                self.store.delete(episode.id)
