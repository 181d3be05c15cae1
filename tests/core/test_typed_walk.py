"""A typed word query past the word walk (issue 54 goal 1) is ranked with the type
outside the index's BM25: BM25 reads the whole doclist of every phrase of its query for
its statistics, and a type's doclist is a fifth of the store or more, though the type
weighs 0 in every score. The walk's candidates are the type's matches among the newest
WORD_WALK matches of the words, plus every typed match of a rare word; each scored by the
words alone, which is the very score FTS5 gives it with the type in the query. Checked
here against that reference computed in raw SQL with the type inside the query, on a
real SQLite file, with the bounds made small so that a few hundred rows take the walk."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.storage.base import SearchFilters
from anneal_memory.storage.sqlite import SQLiteBackend, fts_quote
from anneal_memory.testing import backend_of

N = 600
WALK = 60
RARE = 5


def _content(i: int) -> str:
    if i in (7, 30, 31, 200):  # a rare word, in old rows (7 and 31 are decisions)
        return f"coffee with the astronomer number {i}"
    if i % 10 == 0:
        return f"coffee coffee and tea number {i} today"
    if i % 50 == 3:  # 12 rows, 4 decisions (103, 253, 403, 553): rare in the type only
        return f"coffee and a comet number {i}"
    return f"coffee again number {i} " + "long " * (i % 7)


def _type(i: int) -> str:
    return "decision" if i % 3 == 1 else "observation"


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    s = Store(str(tmp_path / "m.db"), project_name="walk")
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    s.record_many([{"content": _content(i), "episode_type": _type(i),
                    "timestamp": (start + timedelta(minutes=i)).isoformat()}
                   for i in range(N)])
    monkeypatch.setattr(SQLiteBackend, "WORD_WALK", WALK)
    monkeypatch.setattr(SQLiteBackend, "RARE_MATCHES", RARE)
    try:
        yield s
    finally:
        s.close()


def _reference(store: Store, words: list[str], etype: str, pool: int
               ) -> list[tuple[int, float]]:
    """The walk's ranking computed the plain way: the candidates picked by their rows,
    each scored by FTS5 with the type inside the query."""
    conn = backend_of(store).conn  # type: ignore[attr-defined]
    bm25 = "-bm25(episodes_words, 1.0, 0.0, 0.0)"
    content = "content : (" + " OR ".join(fts_quote(w) for w in words) + ")"
    typed = f"({content}) AND type : {fts_quote(etype)}"
    def newest(expr: str, n: int) -> list[int]:
        return [r[0] for r in conn.execute("SELECT rowid FROM episodes_words WHERE "
                                           "episodes_words MATCH ? ORDER BY rowid DESC "
                                           "LIMIT ?", [expr, n])]

    # the words' newest WALK matches, or further back to the type's newest ``pool``
    low = min(newest(content, WALK)[-1], newest(typed, pool)[-1])
    # rare: held by at most RARE episodes of any type (those with none of the type
    # add no row and, weighing nothing in a row without them, no score)
    rare = [w for w in words if 0 < conn.execute(
        "SELECT COUNT(*) FROM episodes_words WHERE episodes_words MATCH ?",
        [f"content : {fts_quote(w)}"]).fetchone()[0] <= RARE]
    full = dict(conn.execute(f"SELECT rowid, {bm25} FROM episodes_words WHERE "
                             "episodes_words MATCH ?", [typed]).fetchall())
    scores = {rid: sc for rid, sc in full.items() if rid >= low}
    if rare:
        rexpr = ("(content : (" + " OR ".join(fts_quote(w) for w in rare) + ")) AND type : "
                 + fts_quote(etype))
        for rid, sc in conn.execute(f"SELECT rowid, {bm25} FROM episodes_words WHERE "
                                    "episodes_words MATCH ?", [rexpr]):
            scores[rid] = max(sc, scores.get(rid, sc))
    return sorted(scores.items(), key=lambda x: (-x[1], -x[0]))[:pool]


@pytest.mark.parametrize("pool", [20, 45])
@pytest.mark.parametrize("words", [["coffee"], ["coffee", "astronomer"],
                                   ["coffee", "zzqx"], ["tea", "coffee", "astronomer"],
                                   ["comet", "coffee"]])
def test_a_typed_walk_ranks_as_fts5_with_the_type_inside(store: Store, words: list[str],
                                                         pool: int) -> None:
    """Same rows, same order, the same scores to the last bit as FTS5's BM25 with the type
    in the query, for queries with and without rare words (a walk of one part only must
    not let BM25 be flattened into an aggregate). A pool larger than the type's matches
    among the words' newest WALK (20 of 60 here) reaches back to fill it."""
    b = backend_of(store)
    filters = SearchFilters(episode_type="decision")
    page = b.ranked_ids(filters, words, pool)  # type: ignore[attr-defined]
    assert page.total != len(page.hits)  # the walk was taken: its total is estimated
    got = [(h.rowid, h.score) for h in page.hits]
    assert got == _reference(store, words, "decision", pool)
    assert len(got) == pool
    # every row is of the type; the newest ones come from the words' newest WALK matches
    rows = b.rows_by_rowid([r for r, _s in got], SearchFilters())  # type: ignore[attr-defined]
    assert {rows[r].type for r, _s in got} == {"decision"}


def test_a_rare_word_is_found_far_past_the_walk(store: Store) -> None:
    b = backend_of(store)
    page = b.ranked_ids(SearchFilters(episode_type="decision"),  # type: ignore[attr-defined]
                        ["coffee", "astronomer"], 20)
    rows = b.rows_by_rowid([h.rowid for h in page.hits], SearchFilters())  # type: ignore[attr-defined]
    texts = [rows[h.rowid].content for h in page.hits]
    # the two typed rows with the rare word (7 and 31) are hundreds of rows older than
    # the walk's newest 60, and rank first
    assert sorted(texts[:2]) == sorted(_content(i) for i in (7, 31))
    assert all("astronomer" not in t for t in texts[2:])


def test_the_type_never_enters_a_scored_statement_of_the_walk(store: Store) -> None:
    """The statements that score (BM25) name no type: the type is an unscored AND."""
    b = backend_of(store)
    seen: list[str] = []
    b.conn.set_trace_callback(seen.append)  # type: ignore[attr-defined]
    try:
        r = store.recall(keyword="coffee astronomer", limit=10, episode_type="decision")
    finally:
        b.conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert r.query_params.get("total_estimated") is True  # the walk was taken
    scored = [s for s in seen if "bm25(" in s]
    assert scored
    for sql in scored:  # the statements as run, their parameters written in
        # the type's unscored AND: the IN list's own statement, text up to its MATCH's
        # closing quote (an FTS5 string doubles any quote inside: '' never ends it)
        outside = re.sub(r"\+w\.rowid IN \(SELECT rowid FROM episodes_words WHERE "
                         r"episodes_words MATCH '(?:[^']|'')*'", "", sql)
        assert "type :" not in outside, sql
        assert "type :" in sql  # the walk's typed AND is there, unscored


def test_a_typed_query_under_the_walk_is_ranked_as_before(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past WORD_WALK rows but not past WORD_WALK matches of the type, every typed match
    is ranked: the result is the one of a store too small to walk."""
    monkeypatch.setattr(SQLiteBackend, "WORD_WALK", N)
    whole = store.recall(keyword="coffee tea", limit=10, episode_type="decision")
    monkeypatch.setattr(SQLiteBackend, "WORD_WALK", N // 3 + 1)  # 200 decisions: no walk
    under = store.recall(keyword="coffee tea", limit=10, episode_type="decision")
    assert "total_estimated" not in under.query_params
    assert [e.id for e in under.episodes] == [e.id for e in whole.episodes]
    assert under.total_matching == whole.total_matching == N // 3


@pytest.mark.parametrize("replaced", [False, True])
def test_the_walks_probe_count_is_the_total_under_the_walk(store: Store,
                                                           replaced: bool) -> None:
    """Under the walk's bound the probe has counted every match: the total is that
    count (less the replaced matches), not a second count of the index's matches."""
    b = backend_of(store)
    if replaced:
        tea = store.recall(keyword="tea", limit=2, context=False).episodes
        assert store.supersede(old_id=tea[1].id, new_id=tea[0].id)
    seen: list[str] = []
    b.conn.set_trace_callback(seen.append)  # type: ignore[attr-defined]
    try:
        r = b.ranked_ids(SearchFilters(), ["tea", "zzqx"], 20)  # type: ignore[attr-defined]
    finally:
        b.conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert r.total == N // 10 - 2 - replaced  # every tenth row says tea, but 30 and 200
    assert len(r.hits) == 20
    assert not [s for s in seen if s.startswith("SELECT COUNT(*) FROM episodes_words WHERE")]


@pytest.mark.parametrize("outside", [1, 10_000])
def test_a_typed_query_under_the_walk_ranks_as_fts5_either_way(
        store: Store, monkeypatch: pytest.MonkeyPatch, outside: int) -> None:
    """Under the walk's bound every typed match is ranked; when the words' matches are
    few for the store's size (TYPE_OUTSIDE) the type is kept out of BM25: the same rows,
    order, scores and total as FTS5 with the type inside, either way."""
    monkeypatch.setattr(SQLiteBackend, "WORD_WALK", 250)  # 200 decisions at most: no walk
    monkeypatch.setattr(SQLiteBackend, "TYPE_OUTSIDE", outside)
    b = backend_of(store)
    conn = b.conn  # type: ignore[attr-defined]
    typed = '(content : ("tea" OR "comet")) AND type : "decision"'
    bm25 = "bm25(episodes_words, 1.0, 0.0, 0.0)"
    expect = [(r, -s) for r, s in conn.execute(
        f"SELECT rowid, {bm25} FROM episodes_words WHERE episodes_words MATCH ? "
        f"ORDER BY {bm25} ASC, rowid DESC", [typed])]
    assert len(expect) == 24  # 20 tea and 4 comet rows are decisions
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        page = b.ranked_ids(SearchFilters(episode_type="decision"),  # type: ignore[attr-defined]
                            ["tea", "comet"], 10)
    finally:
        conn.set_trace_callback(None)
    assert [(h.rowid, h.score) for h in page.hits] == expect[:10]
    assert page.total == 24
    scored = [s for s in seen if "bm25(" in s]
    kept_out = all("type :" not in re.sub(
        r"\+w\.rowid IN \(SELECT rowid FROM episodes_words WHERE episodes_words MATCH "
        r"'(?:[^']|'')*'", "", s) for s in scored)
    assert kept_out == (outside == 1), scored
