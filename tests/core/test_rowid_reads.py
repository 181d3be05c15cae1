"""Reads of rows by a list of row ids (the ranked rows, their neighbours' times, a phrase
count's candidates) pad the list to one of a few lengths, so each statement is prepared
once and then found in the connection's statement cache (issue 54 goal 3: parsing a
list of 300 placeholders cost more than the seeks it asked for). The padding repeats an
id: the rows read must be exactly the ones asked for, at every length around the bounds."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from anneal_memory import Store
from anneal_memory.storage.base import SearchFilters
from anneal_memory.testing import backend_of

N = 1200


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    s = Store(str(tmp_path_factory.mktemp("rowid") / "m.db"), project_name="rowid")
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    s.record_many([{"content": f"meteor shower note {i}" if i % 3 else f"garden plan {i}",
                    "episode_type": "decision" if i % 4 == 0 else "observation",
                    "timestamp": (start + timedelta(seconds=10 * i)).isoformat()}
                   for i in range(N)])
    return s


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 255, 257, 499, 500, 501, 1100])
def test_rows_and_times_by_rowid_are_the_ones_asked_for(store: Store, n: int) -> None:
    b = backend_of(store)
    wanted = list(range(n + 50, 50, -1))[:n] if n <= N - 100 else list(range(1, n + 1))
    wanted = [w for w in wanted if w % 5] + [N + 7]  # holes, and a row id past the end
    for filters in (SearchFilters(), SearchFilters(episode_type="decision")):
        rows = b.rows_by_rowid(wanted, filters)  # type: ignore[attr-defined]
        times = b.times_by_rowid(wanted, filters)  # type: ignore[attr-defined]
        expect = {w for w in wanted if w <= N and (
            filters.episode_type is None or (w - 1) % 4 == 0)}
        assert set(rows) == expect
        assert set(times) == expect
        assert all(rows[w].content.endswith(f" {w - 1}") for w in expect)


def test_statements_by_rowid_have_few_texts(store: Store) -> None:
    """Every read by row ids asks for a padded list (one of a few lengths), whatever
    the number of ids: the statement texts repeat across queries."""
    b = backend_of(store)
    seen: list[str] = []
    b.conn.set_trace_callback(seen.append)  # type: ignore[attr-defined]
    try:
        for q in ("meteor", "garden plan", "shower note", "garden meteor", "note plan"):
            for t in (None, "decision"):
                store.recall(keyword=q, limit=10, episode_type=t)
        for n in range(1, 40):
            b.times_by_rowid(list(range(1, n + 1)), SearchFilters())  # type: ignore[attr-defined]
    finally:
        b.conn.set_trace_callback(None)  # type: ignore[attr-defined]
    lists = [m.group(1) for s in seen if (m := re.search(r"rowid IN \(([^)]*)\)", s))]
    assert lists
    lengths = {len(x.split(",")) for x in lists}
    assert lengths <= {8, 16, 32, 64, 128, 256, 500}, lengths



@pytest.mark.parametrize("keyword", ["meteor plan", "garden note"])
def test_no_word_walk_probe_in_a_store_of_few_rows(store: Store, keyword: str) -> None:
    """A store of at most WORD_WALK rows cannot hold more matches than that, so a word
    query matching more than its pool is ranked without the walk's probes (a count of
    every match up to WORD_WALK, then one count per query word)."""
    b = backend_of(store)
    assert b._top_rowid() <= b.WORD_WALK  # type: ignore[attr-defined]
    seen: list[str] = []
    b.conn.set_trace_callback(seen.append)  # type: ignore[attr-defined]
    try:
        r = store.recall(keyword=keyword, limit=10)
    finally:
        b.conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert r.query_params["match"] == "words" and r.total_matching > 100 and r.episodes
    assert not [s for s in seen if "MAX(rowid) FROM (SELECT rowid FROM episodes_words" in s]
    assert len([s for s in seen if "episodes_words MATCH" in s]) <= 3  # count, pool, words
