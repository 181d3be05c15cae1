"""``AnnealStorage``: CrewAI's memory ``StorageBackend`` over the episodic store.

CrewAI's ``Memory`` keeps its records (content + scope, categories, importance...) in a
storage backend; this one keeps them as episodes, so list / forget / update / reset / scope
browsing all work on anneal memory. A record's CrewAI fields live in the episode's metadata
under ``"crewai"``; only episodes carrying that key are CrewAI records (the rest of the store
is never listed or deleted through CrewAI). There are no embeddings: :meth:`search` is
anneal's keyword recall when CrewAI passes the query text, else a filtered listing.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from crewai.memory.types import MemoryRecord, ScopeInfo

from anneal_memory import Store
from anneal_memory.types import Episode

META_KEY = "crewai"
SOURCE = "crewai"


def record_metadata(record: MemoryRecord) -> dict[str, Any]:
    """The episode metadata that carries a CrewAI record's own fields."""
    fields = record.model_dump(mode="json", exclude={"content", "embedding"})
    return {META_KEY: fields}


def to_record(episode: Episode) -> MemoryRecord:
    """The CrewAI record an episode stands for (its content is the episode's)."""
    fields = dict((episode.metadata or {}).get(META_KEY) or {})
    fields.setdefault("id", episode.id)
    fields.setdefault("created_at", episode.timestamp)
    return MemoryRecord(content=episode.content, **fields)


def _in_scope(record: MemoryRecord, prefix: str | None) -> bool:
    if not prefix or prefix == "/":
        return True
    prefix = prefix.rstrip("/")
    return record.scope == prefix or record.scope.startswith(prefix + "/")


def _matches(record: MemoryRecord, scope_prefix: str | None, categories: list[str] | None,
             metadata_filter: dict[str, Any] | None) -> bool:
    if not _in_scope(record, scope_prefix):
        return False
    if categories and not set(categories) & set(record.categories):
        return False
    return all(record.metadata.get(k) == v for k, v in (metadata_filter or {}).items())


class AnnealStorage:
    """A CrewAI ``StorageBackend`` whose records are anneal episodes (newest first)."""

    def __init__(self, store: Store, *, episode_type: str = "observation") -> None:
        self.store = store
        self.episode_type = episode_type
        self._lock = threading.RLock()  # CrewAI saves from a background thread pool

    # --- reading ------------------------------------------------------------------------
    def _episodes(self) -> list[Episode]:
        result = self.store.recall(limit=1_000_000)
        return [e for e in result.episodes if META_KEY in (e.metadata or {})]

    def _records(self, scope_prefix: str | None = None) -> list[tuple[Episode, MemoryRecord]]:
        pairs = [(e, to_record(e)) for e in self._episodes()]
        pairs = [(e, r) for e, r in pairs if _in_scope(r, scope_prefix)]
        return sorted(pairs, key=lambda p: p[1].created_at, reverse=True)

    def get_record(self, record_id: str) -> MemoryRecord | None:
        return next((r for _, r in self._records() if r.id == record_id), None)

    def list_records(self, scope_prefix: str | None = None, limit: int = 200,
                     offset: int = 0) -> list[MemoryRecord]:
        return [r for _, r in self._records(scope_prefix)][offset:offset + limit]

    def search(self, query_embedding: list[float] | str, scope_prefix: str | None = None,
               categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
               limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        if isinstance(query_embedding, str) and query_embedding.strip():
            # context=False: records are unrelated, so one recorded next to a match is no hit
            hits = self.store.recall(keyword=query_embedding, limit=1_000_000,
                                     context=False).episodes
            records = [to_record(e) for e in hits if META_KEY in (e.metadata or {})]
        else:
            records = [r for _, r in self._records()]
        found = [r for r in records if _matches(r, scope_prefix, categories, metadata_filter)]
        return [(r, 1.0) for r in found[:limit] if min_score <= 1.0]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        records = [r for _, r in self._records(scope)]
        return ScopeInfo(
            path=scope, record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min((r.created_at for r in records), default=None),
            newest_record=max((r.created_at for r in records), default=None),
            child_scopes=self.list_scopes(scope),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        base = parent.rstrip("/")
        children = set()
        for _, record in self._records(parent):
            rest = record.scope[len(base):].strip("/")
            if rest:
                children.add(f"{base}/{rest.split('/')[0]}")
        return sorted(children)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, record in self._records(scope_prefix):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        return len(self._records(scope_prefix))

    # --- writing ------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        with self._lock:
            for record in records:
                self.store.record(record.content, self.episode_type, source=SOURCE,
                                  metadata=record_metadata(record))

    def update(self, record: MemoryRecord) -> None:
        # Episodes are append-only: an update replaces the old episode with a new one that
        # keeps the record's id.
        with self._lock:
            for episode, old in self._records():
                if old.id == record.id:
                    self.store.delete(episode.id)
            self.save([record])

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, older_than: datetime | None = None,
               metadata_filter: dict[str, Any] | None = None) -> int:
        deleted = 0
        with self._lock:
            for episode, record in self._records(scope_prefix):
                if record_ids is not None and record.id not in record_ids:
                    continue
                if older_than is not None and record.created_at >= older_than:
                    continue
                if not _matches(record, None, categories, metadata_filter):
                    continue
                deleted += bool(self.store.delete(episode.id))
        return deleted

    def reset(self, scope_prefix: str | None = None) -> None:
        self.delete(scope_prefix=scope_prefix)

    # --- async twins (the store is local SQLite: the sync call is the work) -------------
    async def asave(self, records: list[MemoryRecord]) -> None:
        self.save(records)

    async def asearch(self, query_embedding: list[float] | str, **kwargs: Any
                      ) -> list[tuple[MemoryRecord, float]]:
        return self.search(query_embedding, **kwargs)

    async def adelete(self, **kwargs: Any) -> int:
        return self.delete(**kwargs)
