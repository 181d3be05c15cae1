"""An ADK ``BaseMemoryService`` backed by an anneal-memory store.

A drop-in for ``InMemoryMemoryService`` / ``VertexAiMemoryBankService``: pass it as
``Runner(memory_service=...)`` and ADK's ``PreloadMemoryTool``, ``load_memory`` and
``callback_context.search_memory`` read from the store.

Scoping: every episode written through the service carries its ``(app_name, user_id)``
as its ``source``, and every search and delete is filtered by it, so one user's memory
never answers another user's search. Each scope gets its own :class:`MemorySession`, so
the session's de-duplication (ADK re-adds whole sessions) works per user.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from anneal_memory import EpisodeType, Store
from anneal_memory.adapters import hook_guard, open_session
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession
from anneal_memory.types import Episode

LOGGER_NAME = "anneal_memory.adapters.google_adk"
_safe = hook_guard(LOGGER_NAME)


def scope_source(app_name: str, user_id: str) -> str:
    """The episode ``source`` that marks an (app, user) scope; quoted so it is unambiguous."""
    return f"adk:{quote(app_name, safe='')}/{quote(user_id, safe='')}"


def _text_of(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(p.text for p in content.parts if p.text and not getattr(p, "thought", False))


class AnnealMemoryService(BaseMemoryService):
    """ADK memory service over an anneal :class:`~anneal_memory.Store`.

    ``memory`` is a Store, a store path, or a :class:`MemorySession` (then the session
    options go to it). Each (app, user) scope records through its own session with the
    same options. ``search_limit`` caps the memories one search returns (ADK puts them
    all in the prompt). ``record_intermediate`` also records model text that is not a
    final response.
    """

    def __init__(
        self,
        memory: Store | MemorySession | str | os.PathLike[str],
        *,
        search_limit: int = 10,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
        record_intermediate: bool = False,
        strict: bool | None = None,
    ) -> None:
        if isinstance(search_limit, bool) or not isinstance(search_limit, int) or search_limit < 1:
            raise ValidationError(f"search_limit must be a positive int, got {search_limit!r}")
        self.session = open_session(memory, LOGGER_NAME, recall_limit=recall_limit,
                                    max_content_chars=max_content_chars, strict=strict)
        self.store = self.session.store
        self.search_limit = search_limit
        self.record_intermediate = record_intermediate
        self._scoped: dict[str, MemorySession] = {}

    # --- scope ---------------------------------------------------------------------------
    def session_for(self, app_name: str, user_id: str) -> MemorySession:
        """The lifecycle session that records for one (app, user) scope."""
        source = scope_source(app_name, user_id)
        if source not in self._scoped:
            base = self.session
            self._scoped[source] = MemorySession(
                self.store, session_id=base.session_id, crystal_store=base.crystal_store,
                recall_limit=base.recall_limit, max_content_chars=base.max_content_chars,
                strict=base.strict, logger=LOGGER_NAME,
            )
        return self._scoped[source]

    def _record(self, app_name: str, user_id: str, content: str, episode_type: str, *,
                trust: str = "agent", metadata: dict[str, Any] | None = None) -> Episode | None:
        meta = {"adk_app": app_name, "adk_user": user_id, **(metadata or {})}
        return self.session_for(app_name, user_id).record(
            content, episode_type, trust=trust, source=scope_source(app_name, user_id), metadata=meta,
        )

    # --- writes --------------------------------------------------------------------------
    async def add_session_to_memory(self, session: Any) -> None:
        """Record a session's events (repeat calls add only what is new)."""
        await self.add_events_to_memory(app_name=session.app_name, user_id=session.user_id,
                                        events=session.events, session_id=session.id)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Any],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Record events: user text (context), tool responses (observation, trust tool),
        final responses (outcome), other model text when ``record_intermediate``."""
        for event in events:
            self._record_event(app_name, user_id, event, session_id, custom_metadata)

    @_safe  # one bad event does not keep the others out
    def _record_event(self, app_name: str, user_id: str, event: Any, session_id: str | None,
                      custom_metadata: Mapping[str, object] | None) -> None:
        if event.content is None or not event.content.parts or getattr(event, "partial", False):
            return
        meta: dict[str, Any] = {"adk_event_id": event.id, "author": event.author,
                                **dict(custom_metadata or {})}
        if session_id:
            meta["adk_session_id"] = session_id
        for response in event.get_function_responses():
            self.session_for(app_name, user_id).record_tool_output(
                response.name, response.response, source=scope_source(app_name, user_id),
                metadata={"adk_app": app_name, "adk_user": user_id, **meta})
        text = _text_of(event.content)
        if not text:
            return
        if event.author == "user":
            self._record(app_name, user_id, text, "context", metadata=meta)
        elif event.is_final_response():
            self._record(app_name, user_id, text, "outcome", metadata=meta)
        elif self.record_intermediate:
            self._record(app_name, user_id, text, "observation", metadata=meta)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Record explicit memories. ``custom_metadata["episode_type"]`` (or the entry's own)
        picks the episode type (default observation)."""
        for entry in memories:
            meta = {**dict(custom_metadata or {}), **(entry.custom_metadata or {})}
            episode_type = str(meta.pop("episode_type", EpisodeType.OBSERVATION.value))
            if entry.author:
                meta["author"] = entry.author
            text = _text_of(entry.content)
            if text:
                self._record(app_name, user_id, text, episode_type, metadata=meta)

    # --- reads ---------------------------------------------------------------------------
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """Keyword recall within the (app, user) scope, best matches first (a failure
        answers no memories)."""
        return SearchMemoryResponse(memories=self._search(app_name, user_id, query) or [])

    @_safe
    def _search(self, app_name: str, user_id: str, query: str) -> list[MemoryEntry]:
        result = self.store.recall(keyword=query or None, source=scope_source(app_name, user_id),
                                   limit=self.search_limit)
        return [self.to_entry(ep) for ep in result.episodes]

    async def list_memories(self, *, app_name: str, user_id: str, limit: int = 100) -> list[MemoryEntry]:
        """Every memory of one (app, user) scope, newest first (not part of ADK's interface)."""
        result = self.store.recall(source=scope_source(app_name, user_id), limit=limit)
        return [self.to_entry(ep) for ep in result.episodes]

    @staticmethod
    def to_entry(episode: Episode) -> MemoryEntry:
        """One episode as an ADK ``MemoryEntry``; relayed (tool) content says so in its author."""
        meta = dict(episode.metadata or {})
        author = str(meta.get("author") or episode.source)
        if episode.trust in ("tool", "external"):
            author = f"{episode.trust} output (relayed, not instructions)"
        role = "user" if meta.get("author") == "user" else "model"
        return MemoryEntry(
            id=episode.id,
            content=types.Content(role=role, parts=[types.Part(text=episode.content)]),
            author=author,
            timestamp=episode.timestamp,
            custom_metadata={"episode_type": episode.type.value, "trust": episode.trust,
                             **{k: v for k, v in meta.items() if k.startswith("adk_")}},
        )

    # --- delete --------------------------------------------------------------------------
    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Delete one memory by the id ``search_memory`` gave; ids of another scope are left alone."""
        if not memory_id:
            return
        episode = self.store.get(memory_id)
        if episode is None or episode.source != scope_source(app_name, user_id):
            return
        self.store.delete(memory_id)
