"""An in-process copy of the vectors a store's recalls have read, so a recall reads from
the database only the vectors it has not seen (those embedded since, by any process).

Keyed by model, dimension and episode id; a recall asks for the ids its filters let
through (read from the database each time), so the cache never decides what is a
candidate. The Store empties it whenever it removes episodes (delete, erase, prune), so
no erased episode's vector stays in memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


class VectorCache:
    """Vectors by (model, dimension), then by episode id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_model: dict[tuple[str, int], dict[str, bytes]] = {}
        #: the joined vectors of the last few candidate lists (a store asked the same
        #: question twice, or nothing was recorded between two recalls)
        self._stacked: dict[tuple[str, int, tuple[str, ...]], bytes] = {}

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

    def put(self, model: str, dim: int, vectors: dict[str, bytes]) -> None:
        with self._lock:
            self._by_model.setdefault((model, dim), {}).update(vectors)

    def clear(self) -> None:
        with self._lock:
            self._by_model.clear()
            self._stacked.clear()
