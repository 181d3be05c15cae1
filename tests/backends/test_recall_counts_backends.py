"""Issue 54: past its exact bound a phrase recall's total is estimated, said so, and near
the truth, on every backend (PostgreSQL counted every matching row for the total alone:
1.6-3.2 s for a common word at a million episodes)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from anneal_memory import Store
from anneal_memory.testing import backend_of


def _fill(store: Store) -> None:
    """80 episodes: three in four say "coffee", spread evenly (as the estimate assumes)."""
    store.record_many([{"content": (f"coffee at the lab, cup {i}" if i % 4 else
                                    f"tea in the garden {i}"), "episode_type": "observation"}
                       for i in range(1, 81)])


def test_a_total_past_the_exact_bound_is_estimated(
        open_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store()
    _fill(store)
    exact = store.recall(keyword="coffee", limit=5)
    assert exact.total_matching == 60 and "total_estimated" not in exact.query_params
    backend = type(backend_of(store))
    monkeypatch.setattr(backend, "EXACT_COUNT", 10)
    monkeypatch.setattr(backend, "SCAN_ROWS", 0, raising=False)  # SQLite: the index path
    again = open_store()  # a fresh connection: nothing memoized
    r = again.recall(keyword="coffee", limit=5)
    assert [e.content for e in r.episodes] == [e.content for e in exact.episodes]
    assert r.query_params["total_estimated"] is True
    assert 50 <= r.total_matching <= 75
    few = again.recall(keyword="tea in the", limit=5)  # 20 > 10, also estimated
    assert few.query_params.get("total_estimated") is True
    rare = again.recall(keyword="cup 77", limit=5)  # one match: counted exactly
    assert rare.total_matching == 1 and "total_estimated" not in rare.query_params
