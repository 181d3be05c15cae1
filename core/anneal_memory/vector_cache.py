"""In-process copies of a store's vectors, so a recall scores them without reading them.

Two forms, both keyed by model and dimension:

* **A matrix per namespace** (:class:`VectorMatrix`, SQLite with numpy): every vector the
  namespace's readers may see, one float32 row each, scored by one matrix product. It is
  brought up to date before each use from what the database says changed: SQLite's
  ``PRAGMA data_version`` moves when another connection (another process, another Store)
  commits; this store's own writes mark it stale (:meth:`VectorCache.put`). A stale
  matrix reads the vectors added since its last row id, then counts the namespace's
  vectors: a count that differs (some were deleted) reloads it whole. The best rows are
  then checked against the database with the recall's filters before anything is served,
  so a row the matrix still holds for a deleted, erased, superseded or hidden episode is
  never returned, whatever the matrix holds.
* **Vectors by id** (the fallback without numpy, and on PostgreSQL): a recall asks for
  the ids its filters let through (read from the database each time) and reads from the
  database only the vectors it has not seen.

The Store empties both whenever it removes episodes (delete, erase, prune), so no erased
episode's vector stays in this process's memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

#: rows a matrix grows by at least when it fills
_GROW = 1024


@dataclass
class VectorMatrix:
    """The vectors one namespace sees, of one model and dimension (numpy float32 rows)."""

    dim: int
    np: ModuleType  # numpy (optional, so untyped here)
    ids: list[str] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)
    rows: Any = None
    #: the highest ``episode_vectors`` row id read, and the database's data_version then
    last_rowid: int = 0
    version: Any = None
    stale: bool = True
    #: ids of episodes seen without a vector of this model (what a recall may embed),
    #: and the highest episode row id looked at for them
    pending: set[str] = field(default_factory=set)
    checked_rowid: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rows = self.np.zeros((0, self.dim), dtype=self.np.float32)

    @property
    def size(self) -> int:
        return len(self.ids)

    def matrix(self) -> Any:
        """The rows in use (a view, no copy)."""
        return self.rows[:len(self.ids)]

    def add(self, items: Sequence[tuple[int, str, bytes]]) -> None:
        """Add or replace (row id, episode id, vector bytes) rows."""
        np = self.np
        new = [(eid, blob) for _r, eid, blob in items if len(blob) == 4 * self.dim]
        fresh = [e for e, _b in new if e not in self.pos]
        need = len(self.ids) + len(fresh)
        if need > len(self.rows):
            grown = np.zeros((max(need, 2 * len(self.rows), _GROW), self.dim), dtype=np.float32)
            grown[:len(self.ids)] = self.rows[:len(self.ids)]
            self.rows = grown
        start = len(self.ids)
        added = [(e, b) for e, b in new if e not in self.pos]
        if len(added) == len(new) and len(set(e for e, _b in added)) == len(added):
            # all new (a first load, or vectors added since): one copy of their bytes
            if added:
                block = np.frombuffer(b"".join(b for _e, b in added), dtype="<f4")
                self.rows[start:start + len(added)] = block.reshape(-1, self.dim)
                for k, (eid, _b) in enumerate(added):
                    self.pos[eid] = start + k
                    self.ids.append(eid)
                    self.pending.discard(eid)
        else:
            for eid, blob in new:
                i = self.pos.get(eid)
                if i is None:
                    i = self.pos[eid] = len(self.ids)
                    self.ids.append(eid)
                self.rows[i] = np.frombuffer(blob, dtype="<f4")
                self.pending.discard(eid)
        if items:
            self.last_rowid = max(self.last_rowid, max(r for r, _e, _b in items))


class VectorCache:
    """A store's cached vectors (shared by its scoped views)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_model: dict[tuple[str, int], dict[str, bytes]] = {}
        #: the joined vectors of the last few candidate lists (a store asked the same
        #: question twice, or nothing was recorded between two recalls)
        self._stacked: dict[tuple[str, int, tuple[str, ...]], bytes] = {}
        self._matrices: dict[tuple[str, str, int], VectorMatrix] = {}

    # ------------------------------------------------------------------ the matrix

    def matrix(self, scope_key: str, model: str, dim: int, np: ModuleType) -> VectorMatrix:
        """The matrix of this namespace (``scope_key``), model and dimension (empty and
        stale when new: the caller syncs it)."""
        key = (scope_key, model, dim)
        with self._lock:
            m = self._matrices.get(key)
            if m is None:
                m = self._matrices[key] = VectorMatrix(dim, np)
            return m

    def matrices(self) -> int:
        """How many matrices are held (for tests)."""
        with self._lock:
            return len(self._matrices)

    # ------------------------------------------------------------------ vectors by id

    def get(self, model: str, dim: int, ids: Sequence[str],
            load: Callable[[list[str]], dict[str, bytes]]) -> dict[str, bytes]:
        """The model's cached vectors, after loading those of ``ids`` not cached yet
        (``load``): a mapping that holds every one of ``ids`` that has a vector (and may
        hold others: callers look up their ids)."""
        with self._lock:
            have = self._by_model.setdefault((model, dim), {})
            missing = [i for i in ids if i not in have]
        if missing:
            fresh = load(missing)
            with self._lock:
                have.update(fresh)
        return have

    def stacked(self, model: str, dim: int, ids: Sequence[str],
                vectors: dict[str, bytes]) -> bytes:
        """The vectors of ``ids`` (all in ``vectors``) joined, in that order."""
        key = (model, dim, tuple(ids))
        with self._lock:
            found = self._stacked.get(key)
        if found is None:
            found = b"".join(vectors[i] for i in ids)
            with self._lock:
                while len(self._stacked) >= 4:
                    self._stacked.pop(next(iter(self._stacked)))
                self._stacked[key] = found
        return found

    # ------------------------------------------------------------------ changes

    def put(self, model: str, dim: int, vectors: dict[str, bytes]) -> None:
        """Vectors this store just wrote: kept by id, and every matrix of the model
        marked stale (the next use reads them, in whichever namespaces see them)."""
        with self._lock:
            self._by_model.setdefault((model, dim), {}).update(vectors)
            for (_s, m, d), mat in self._matrices.items():
                if m == model and d == dim:
                    mat.stale = True

    def clear(self) -> None:
        """Forget every vector (episodes were removed)."""
        with self._lock:
            self._by_model.clear()
            self._stacked.clear()
            self._matrices.clear()
