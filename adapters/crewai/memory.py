"""``AnnealCrewMemory``: a CrewAI ``Memory`` whose recall and remember are anneal's.

CrewAI's agent loop calls ``recall(query)`` before each task (the matches are appended to the
task prompt as "Relevant memories") and ``extract_memories`` + ``remember_many`` after it.
Both go to the core :class:`MemorySession` here, without CrewAI's LLM analysis, its embedder
or LanceDB: the store's own storage backend (:class:`AnnealStorage`) answers list, forget,
update, reset and the scope views.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from crewai.memory.types import MemoryMatch, MemoryRecord
from crewai.memory.unified_memory import Memory
from pydantic import PrivateAttr

from anneal_memory import Store
from anneal_memory.adapters import hook_guard, open_session
from anneal_memory.session import MemorySession, WrapOutcome

from .storage import SOURCE, AnnealStorage, record_metadata

LOGGER_NAME = "anneal_memory.adapters.crewai"
logger = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)

Compress = Callable[[str], "str | Awaitable[str]"]


def llm_compressor(llm: Any) -> Compress:
    """A compressor that sends the wrap prompt to a CrewAI LLM as one user message."""

    def compress(prompt: str) -> str:
        return str(llm.call([{"role": "user", "content": prompt}]))

    return compress


class AnnealCrewMemory(Memory):
    """Anneal memory for a crew: ``Crew(memory=AnnealCrewMemory(store, llm=my_llm))``.

    ``llm`` (CrewAI's own memory-LLM field) is the default compressor of the wrap;
    ``compress`` overrides it. ``wrap_on_end`` (default ``False``) makes
    :meth:`after_kickoff` (add it to ``Crew(after_kickoff_callbacks=[...])``) wrap after
    every kickoff; otherwise call :meth:`wrap`. ``episode_type`` is the type given to what
    the crew remembers. ``memory`` is a Store, a store path (opened and owned:
    ``memory.session.close()`` closes it) or a MemorySession (then the session options go to it).
    """

    _session: MemorySession = PrivateAttr()
    _compress: Compress | None = PrivateAttr(default=None)
    _wrap_on_end: bool = PrivateAttr(default=False)
    _episode_type: str = PrivateAttr(default="observation")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 wrap_on_end: bool = False, compress: Compress | None = None,
                 episode_type: str = "observation", recall_limit: int | None = None,
                 max_content_chars: int | None = None, session_id: str | None = None,
                 crystal_store: Any = None, strict: bool | None = None, **fields: Any) -> None:
        MemorySession.check_compress(compress)
        session = open_session(memory, LOGGER_NAME, session_id=session_id,
                               crystal_store=crystal_store, recall_limit=recall_limit,
                               max_content_chars=max_content_chars, strict=strict)
        # A storage object keeps CrewAI from building its default LanceDB store.
        fields.setdefault("storage", AnnealStorage(session.store, episode_type=episode_type))
        super().__init__(**fields)
        self._session = session
        self._compress = compress
        self._wrap_on_end = wrap_on_end
        self._episode_type = episode_type

    @property
    def session(self) -> MemorySession:
        """The core session this memory records into and recalls from."""
        return self._session

    # --- what the agent loop calls ----------------------------------------------------
    def recall(self, query: str, scope: str | None = None, categories: list[str] | None = None,
               limit: int = 10, depth: str = "deep", source: str | None = None,
               include_private: bool = False) -> list[MemoryMatch]:
        """The continuity first, then anneal's recall for ``query`` as labelled items
        (relayed tool/external ones last and marked), scored by rank."""
        matches: list[MemoryMatch] = []
        continuity = self._session.start()
        if continuity:
            matches.append(MemoryMatch(record=MemoryRecord(content=continuity), score=1.0,
                                       match_reasons=["continuity"]))
        items = self._session.recall_items(query, limit=limit)
        for rank, item in enumerate(items):
            matches.append(MemoryMatch(record=MemoryRecord(content=item.removeprefix("- ")),
                                       score=1.0 - rank / len(items),
                                       match_reasons=["anneal recall"]))
        return matches

    def extract_memories(self, content: str) -> list[str]:
        """No LLM extraction: the task summary is remembered as it is."""
        return [content] if content and content.strip() else []

    def remember(self, content: str, scope: str | None = None,
                 categories: list[str] | None = None, metadata: dict[str, Any] | None = None,
                 importance: float | None = None, source: str | None = None,
                 private: bool = False, agent_role: str | None = None,
                 root_scope: str | None = None) -> MemoryRecord | None:
        """Record ``content`` as an episode carrying its CrewAI fields."""
        if self.read_only:
            return None
        full_scope = "/".join(p.strip("/") for p in (root_scope or self.root_scope or "",
                                                     scope or "") if p.strip("/"))
        record = MemoryRecord(
            content=content, scope="/" + full_scope, categories=categories or [],
            metadata={**(metadata or {}), **({"agent_role": agent_role} if agent_role else {})},
            importance=self.default_importance if importance is None else importance,
            source=source, private=private)
        episode = self._session.record(content, self._episode_type, source=SOURCE,
                                       metadata=record_metadata(record))
        return record if episode is not None else None

    def remember_many(self, contents: list[str], scope: str | None = None,
                      categories: list[str] | None = None, metadata: dict[str, Any] | None = None,
                      importance: float | None = None, source: str | None = None,
                      private: bool = False, agent_role: str | None = None,
                      root_scope: str | None = None) -> list[MemoryRecord]:
        records = [self.remember(c, scope, categories, metadata, importance, source, private,
                                 agent_role, root_scope) for c in contents]
        return [r for r in records if r is not None]

    def update(self, record_id: str, content: str | None = None, scope: str | None = None,
               categories: list[str] | None = None, metadata: dict[str, Any] | None = None,
               importance: float | None = None) -> MemoryRecord:
        """Replace a record's fields (no re-embedding: this memory has no vectors)."""
        existing = self._storage.get_record(record_id)
        if existing is None:
            raise ValueError(f"no memory record with id {record_id!r}: list_records() shows them")
        if self.read_only:
            return existing
        changes = {k: v for k, v in {"content": content, "scope": scope, "categories": categories,
                                     "metadata": metadata, "importance": importance}.items()
                   if v is not None}
        updated = existing.model_copy(update=changes)
        self._storage.update(updated)
        return updated

    def drain_writes(self) -> None:
        """Writes are synchronous here: nothing is pending."""

    # --- the wrap --------------------------------------------------------------------
    def compressor(self) -> Compress:
        """``compress`` if given, else this memory's ``llm`` (CrewAI's own model)."""
        return self._compress or llm_compressor(self._llm)

    def wrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Compress the session's episodes into the continuity. A failed wrap loses nothing;
        the outcome is also kept on ``session.last_wrap``."""
        fallback = None
        if compress is None and self._compress is None:
            try:
                fallback = llm_compressor(self._llm)
            except Exception as exc:  # e.g. no API key for CrewAI's default memory LLM
                if self._session.strict:
                    raise
                logger.warning("anneal-memory: no model for the wrap: %s", exc)
        return self._session.wrap_first(compress, self._compress, fallback)

    def after_kickoff(self, output: Any) -> Any:
        """A ``Crew(after_kickoff_callbacks=[...])`` callback: record the crew's final
        output as the outcome, and wrap when ``wrap_on_end``. Returns ``output`` unchanged."""
        self._end_kickoff(output)
        return output

    @_safe
    def _end_kickoff(self, output: Any) -> None:
        raw = getattr(output, "raw", None)
        self._session.record_outcome(str(raw if raw is not None else output))
        if self._wrap_on_end:
            from crewai.events import crewai_event_bus

            crewai_event_bus.flush(timeout=30.0)  # pending event records join this wrap
            self.wrap()
