"""``AnnealStorage``: CrewAI's memory ``StorageBackend`` over the store.

A CrewAI record is two things here: framework state, kept in the ``crewai.records`` item
collection of the store given (keyed by its scope path, so a scope's records are one SQL
prefix query: list, count, info, forget and reset never read the rest of the store), and
memory, one episode in the namespace its scope names (see :mod:`._scope`), so recall,
continuity and wraps stay each user's own.

Embeddings: the vector a record carries (``record.embedding``, which CrewAI's ``Memory``
computes with its embedder) is kept with the record, as float32, and comes back on it
from :meth:`~AnnealStorage.search`, :meth:`~AnnealStorage.get_record` and
:meth:`~AnnealStorage.list_records`. :meth:`~AnnealStorage.search` given a query
embedding ranks the records of the scope that pass the category and metadata filters by
cosine similarity (the score CrewAI's Qdrant backend returns, which its composite score
weighs with recency and importance); records without a vector, or with one of another
dimension (another model), score 0. Given text it ranks by the query's words.
"""

from __future__ import annotations

import base64
import math
import sys
import threading
from array import array
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from crewai.memory.types import MemoryRecord, ScopeInfo
from pydantic_core import to_jsonable_python

from anneal_memory import ItemCollection, Store
from anneal_memory.adapters import from_item_value, item_value
from anneal_memory.session import MemorySession

from . import _scope

COLLECTION = "crewai.records"
META_KEY = "crewai"
_SEP = "\x1f"
_PAGE = 500
#: the item value's key holding a record's embedding (little-endian float32, base64)
VECTOR_KEY = "_vector"


def record_fields(record: MemoryRecord) -> dict[str, Any]:
    """A record's CrewAI fields as JSON (everything but its embedding); its metadata with
    NaN / ±Infinity kept, as CrewAI's LanceDB storage keeps them (``json.dumps``), where
    pydantic's JSON mode would write them as null."""
    fields = record.model_dump(mode="json", exclude={"embedding"})
    fields["metadata"] = to_jsonable_python(record.metadata)
    return fields


def _is_vector(value: Any) -> bool:
    """A non-empty sequence of finite numbers (an embedding, not text)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        return False
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
               for x in value)


def _pack(vector: Sequence[float]) -> str:
    a = array("f", [float(x) for x in vector])
    if sys.byteorder == "big":
        a.byteswap()
    return base64.b64encode(a.tobytes()).decode("ascii")


def _unpack(text: str) -> list[float]:
    a = array("f")
    a.frombytes(base64.b64decode(text))
    if sys.byteorder == "big":
        a.byteswap()
    return a.tolist()


def _cosines(query: Sequence[float], vectors: list[list[float]]) -> list[float]:
    """Cosine similarity of ``query`` to each vector (all of its dimension)."""
    try:
        import numpy as np
    except ImportError:
        qn = math.sqrt(sum(x * x for x in query)) or 1.0
        out = []
        for vec in vectors:
            vn = math.sqrt(sum(x * x for x in vec)) or 1.0
            out.append(sum(a * b for a, b in zip(query, vec)) / (qn * vn))
        return out
    if not vectors:
        return []
    m = np.asarray(vectors, dtype="float64")
    q = np.asarray(query, dtype="float64")
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    norms[norms == 0] = 1.0
    return (m @ q / norms).tolist()  # type: ignore[no-any-return]


def _key(record: MemoryRecord) -> str:
    return f"{_scope.key_prefix(record.scope)}{_SEP}{record.id}"


def _record(item: Any) -> MemoryRecord:
    fields = dict(from_item_value(item.value, f"memory record {item.key!r}"))
    packed = fields.pop(VECTOR_KEY, None)
    return MemoryRecord(**fields, embedding=_unpack(packed) if packed else None)


def _matches(record: MemoryRecord, categories: list[str] | None,
             metadata_filter: dict[str, Any] | None) -> bool:
    if categories and not set(categories) & set(record.categories):
        return False
    return all(record.metadata.get(k) == v for k, v in (metadata_filter or {}).items())


class AnnealStorage:
    """A CrewAI ``StorageBackend`` whose records live in an anneal store (newest first).

    ``memory_of(scope)`` gives the :class:`MemorySession` a record of that scope is
    remembered through (:class:`AnnealCrewMemory` passes its own; alone, the store's).
    """

    def __init__(self, store: Store, *, episode_type: str = "observation",
                 memory_of: Callable[[str], MemorySession] | None = None) -> None:
        self.store = store
        self.episode_type = episode_type
        self._items = ItemCollection(store, COLLECTION)
        self._memory_of = memory_of or (lambda scope: MemorySession(store))
        self._lock = threading.RLock()  # CrewAI saves from a background thread pool

    # --- reading ------------------------------------------------------------------------
    def _rows(self, scope_prefix: str | None = None, **kwargs: Any) -> list[Any]:
        prefix = _scope.key_prefix(scope_prefix)
        return self._items.list(prefix=None if prefix == "/" else prefix, **kwargs)

    def _all(self, scope_prefix: str | None = None) -> list[Any]:
        found: list[Any] = []
        while True:
            page = self._rows(scope_prefix, order="desc", limit=_PAGE, offset=len(found))
            found.extend(page)
            if len(page) < _PAGE:
                return found

    def get_record(self, record_id: str) -> MemoryRecord | None:
        rows = self._items.list(where={"record_id": str(record_id)}, limit=1)
        return _record(rows[0]) if rows else None

    def list_records(self, scope_prefix: str | None = None, limit: int = 200,
                     offset: int = 0) -> list[MemoryRecord]:
        return [_record(r) for r in self._rows(scope_prefix, order="desc", limit=limit,
                                               offset=offset)]

    def search(self, query_embedding: list[float] | str, scope_prefix: str | None = None,
               categories: list[str] | None = None, metadata_filter: dict[str, Any] | None = None,
               limit: int = 10, min_score: float = 0.0) -> list[tuple[MemoryRecord, float]]:
        """The scope's records that pass the filters, best first: by cosine similarity to
        ``query_embedding`` (0 for a record without a vector of its dimension), by the words of
        a text query, or all of them (score 1.0) for neither. Scores below ``min_score``
        are dropped, then ``limit`` is applied."""
        records = [r for r in map(_record, self._all(scope_prefix))
                   if _matches(r, categories, metadata_filter)]
        if _is_vector(query_embedding):
            query = [float(x) for x in query_embedding]
            ranked = [r for r in records if r.embedding and len(r.embedding) == len(query)]
            sims = _cosines(query, [list(r.embedding or ()) for r in ranked])
            # a record without a vector of this dimension scores 0 (the default storages
            # zero-fill it): CrewAI's composite score still weighs its recency and importance
            unranked = [(r, 0.0) for r in records if not r.embedding
                        or len(r.embedding) != len(query)]
            scored = sorted([*zip(ranked, sims, strict=True), *unranked],
                            key=lambda pair: -pair[1])
        elif isinstance(query_embedding, str) and query_embedding.strip():
            words = {w.lower() for w in query_embedding.split()}
            scored = []
            for record in records:
                text = record.content.lower()
                hits = sum(1 for w in words if w in text)
                if hits:
                    scored.append((record, hits / len(words)))
            scored.sort(key=lambda pair: -pair[1])
        else:
            scored = [(r, 1.0) for r in records]
        return [(r, s) for r, s in scored if s >= min_score][:limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        path = _scope.normalize(scope)
        records = [_record(r) for r in self._all(path)]
        return ScopeInfo(
            path=path, record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min((r.created_at for r in records), default=None),
            newest_record=max((r.created_at for r in records), default=None),
            child_scopes=self._children(path, records),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        path = _scope.normalize(parent)
        return self._children(path, [_record(r) for r in self._all(path)])

    @staticmethod
    def _children(path: str, records: list[MemoryRecord]) -> list[str]:
        base = "" if path == "/" else path
        children = set()
        for record in records:
            rest = _scope.normalize(record.scope)[len(base):].strip("/")
            if rest:
                children.add(f"{base}/{rest.split('/')[0]}")
        return sorted(children)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in map(_record, self._all(scope_prefix)):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        prefix = _scope.key_prefix(scope_prefix)
        return self._items.count(prefix=None if prefix == "/" else prefix)

    # --- writing ------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        for record in records:
            self.remember(record)

    def remember(self, record: MemoryRecord, *, episode_type: str | None = None,
                 session: MemorySession | None = None,
                 replacing: bool = False) -> MemoryRecord | None:
        """Keep ``record`` and remember its content as an episode of its scope's memory;
        None when its memory already holds the same content (nothing new). ``replacing``:
        the record's old episode is gone, so its content is recorded even if this
        session recorded it before."""
        record = record.model_copy(update={"scope": _scope.normalize(record.scope)})
        memory = session or self._memory_of(record.scope)
        fields = record_fields(record)
        if record.embedding and not _is_vector(record.embedding):
            raise ValueError("a record's embedding must be a list of finite numbers")
        meta = {META_KEY: {k: fields[k] for k in ("id", "scope", "categories", "source",
                                                 "private")}}
        kind = episode_type or self.episode_type
        episode = (memory.store.record(record.content, kind, source="crewai", metadata=meta)
                   if replacing else
                   memory.record(record.content, kind, source="crewai", metadata=meta))
        if episode is None:
            return None
        value = {**fields, VECTOR_KEY: _pack(record.embedding)} if record.embedding else fields
        with self._lock:
            self._items.put(_key(record), item_value(value), metadata={
                "record_id": record.id, "episode": episode.id, "private": record.private,
                **({"source": record.source} if record.source else {})})
        return record

    def update(self, record: MemoryRecord) -> None:
        """Replace a record (its memory episode too: episodes are append-only, so the old
        one goes and a new one keeps the record's id)."""
        with self._lock:
            rows = self._items.list(where={"record_id": record.id})
            old = [self.store.get(r.metadata["episode"]) for r in rows
                   if r.metadata.get("episode")]
            kind = next((str(getattr(e.type, "value", e.type)) for e in old if e is not None),
                        None)
            self._forget(rows)
            self.remember(record, episode_type=kind, replacing=True)

    def delete(self, scope_prefix: str | None = None, categories: list[str] | None = None,
               record_ids: list[str] | None = None, older_than: datetime | None = None,
               metadata_filter: dict[str, Any] | None = None) -> int:
        with self._lock:
            doomed = []
            for row in self._all(scope_prefix):
                record = _record(row)
                if record_ids and record.id not in record_ids:
                    continue
                if older_than is not None and record.created_at >= older_than:
                    continue
                if not _matches(record, categories, metadata_filter):
                    continue
                doomed.append(row)
            return self._forget(doomed)

    def _forget(self, rows: list[Any]) -> int:
        for row in rows:
            self._items.delete(row.key)
            episode = row.metadata.get("episode")
            if episode:
                try:
                    self.store.delete(episode)
                except Exception:  # already gone: the record is what was asked
                    pass
        return len(rows)

    def reset(self, scope_prefix: str | None = None) -> None:
        self.delete(scope_prefix=scope_prefix)

    # --- async twins ----------------------------------------------------------------------
    async def asave(self, records: list[MemoryRecord]) -> None:
        import asyncio

        await asyncio.to_thread(self.save, records)

    async def asearch(self, query_embedding: list[float] | str, **kwargs: Any
                      ) -> list[tuple[MemoryRecord, float]]:
        import asyncio

        return await asyncio.to_thread(self.search, query_embedding, **kwargs)

    async def adelete(self, **kwargs: Any) -> int:
        import asyncio

        return await asyncio.to_thread(self.delete, **kwargs)
