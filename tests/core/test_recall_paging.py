"""Paging a keyword recall shows every match once, in one order.

A word search ranks a pool of the index's best matches; had the pool been sized by the page
(``offset + limit``), each page would be ranked from a different pool, and walking the pages
of a search repeated some episodes and skipped others (41 repeats in 200 results measured
before the fix). The ranked order is now one order whatever the page: a page of ten is the
start of a page of fifty, and pages of ten tile a page of two hundred."""

from __future__ import annotations

import random

import pytest

from anneal_memory import Store

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon").split()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    rng = random.Random(3)
    s = Store(tmp_path_factory.mktemp("paging") / "p.db")
    s.record_many([{"content": " ".join(rng.choice(WORDS) for _ in range(12)),
                    "episode_type": rng.choice(["observation", "decision"])}
                   for _ in range(3000)])
    return s


@pytest.mark.parametrize("keyword, match", [("alpha beta omega", "words"),
                                            ("kappa", "phrase")])
@pytest.mark.parametrize("episode_type", [None, "decision"])
def test_pages_tile_one_order(store: Store, keyword: str, match: str,
                              episode_type: str | None) -> None:
    whole = store.recall(keyword=keyword, limit=300, episode_type=episode_type)
    assert whole.query_params["match"] == match and len(whole.episodes) == 300
    ids = [e.id for e in whole.episodes]
    for size in (10, 7, 50):
        paged = []
        for offset in range(0, 300, size):
            page = store.recall(keyword=keyword, limit=min(size, 300 - offset), offset=offset,
                                episode_type=episode_type)
            assert page.total_matching == whole.total_matching
            paged += [e.id for e in page.episodes]
        assert paged == ids, f"pages of {size} differ from one page"
    for limit in (1, 10, 50, 120):
        assert [e.id for e in store.recall(keyword=keyword, limit=limit,
                                           episode_type=episode_type).episodes] == ids[:limit]
