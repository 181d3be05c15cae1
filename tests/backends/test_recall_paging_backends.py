"""Pages of a keyword recall tile one order on every backend (see tests/core/
test_recall_paging.py): walking ``offset``/``limit`` pages shows every match once, and a
short page is the start of a longer one, for the ranked words and for a phrase."""

from __future__ import annotations

import random

import pytest

from anneal_memory import Store

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon").split()


@pytest.mark.parametrize("keyword", ["alpha beta omega", "kappa"])
def test_pages_tile_one_order(store: Store, keyword: str) -> None:
    rng = random.Random(5)
    store.record_many([{"content": " ".join(rng.choice(WORDS) for _ in range(12)),
                        "episode_type": "observation"} for _ in range(1500)])
    whole = [e.id for e in store.recall(keyword=keyword, limit=250).episodes]
    assert len(whole) == 250
    paged = []
    for offset in range(0, 250, 10):
        paged += [e.id for e in store.recall(keyword=keyword, limit=10, offset=offset).episodes]
    assert paged == whole
    assert [e.id for e in store.recall(keyword=keyword, limit=30).episodes] == whole[:30]
