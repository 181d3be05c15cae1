"""Issue 54, goal 1 on PostgreSQL: how a large store's word walk is written is a plan's
choice only. Ordered by ``(e.rowid + 0)`` (the word index's matches read and sorted) or by
the row id (the row id index walked newest first), every query ranks the same episodes
in the same order with the same count; the cheaper form is taken from the words' counts.
Every pooled session runs with JIT compilation off (a compile cost 50-100 ms in a large
store's statements)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from conftest import PG_DSN

from anneal_memory import Store
from anneal_memory.testing import backend_of

pytestmark = pytest.mark.skipif(not PG_DSN, reason="PostgreSQL only: the plans of its walk")

QUERIES = [("tea zzz", None), ("tea comet zzz", None), ("coffee zzz", None),
           ("coffee tea zzz", None), ("tea zzz", "decision"), ("coffee zzz", "decision"),
           ("tea comet zzz", "observation")]


@pytest.fixture
def walk_store(pg_location: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """400 episodes saying "coffee", 60 saying "tea" (one with "comet"), two types, and a
    walk of 50 matches in a store taken as large: queries past the walk on both words."""
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    items = [{"content": f"coffee again number {i} today",
              "episode_type": "decision" if i % 3 == 0 else "observation",
              "timestamp": (start + timedelta(minutes=i)).isoformat()} for i in range(400)]
    for j in range(60):  # tea spread over the store, some rows sharing a timestamp
        items[j * 6 + 3]["content"] = f"tea by the window {j}" + (" comet" if j == 7 else "")
        items[j * 6 + 3]["timestamp"] = items[j * 6]["timestamp"]
        items[j * 6 + 3]["episode_type"] = "decision" if j % 2 else "observation"
    store = Store(pg_location)
    store.record_many(items)
    backend = type(backend_of(store))
    monkeypatch.setattr(backend, "WORD_WALK", 50)
    monkeypatch.setattr(backend, "RARE_MATCHES", 5)
    monkeypatch.setattr(backend, "RARE_FIRST", 0)
    yield store
    store.close()


def _answers(location: str, queries: list[tuple[str, str | None]] = QUERIES,
             limit: int = 10) -> list[tuple[list[str], int, bool, str]]:
    """Each query's ids, total, whether the total is estimated and how it was answered
    (phrase or words), from a fresh store (nothing memoized)."""
    store = Store(location)
    try:
        out = []
        for keyword, etype in queries:
            r = store.recall(keyword=keyword, limit=limit, episode_type=etype)
            out.append(([e.id for e in r.episodes], r.total_matching,
                        bool(r.query_params.get("total_estimated")), r.query_params["match"]))
        return out
    finally:
        store.close()


def _statements(backend: type, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL each statement of ``backend`` runs from now on, in order."""
    ran: list[str] = []
    run = backend._run

    def spy(self: object, sql: str, params: object, fetch: object) -> object:
        ran.append(sql)
        return run(self, sql, params, fetch)

    monkeypatch.setattr(backend, "_run", spy)
    return ran


def test_postgres_walk_ranks_alike_read_off_either_index(
        walk_store: Store, pg_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = type(backend_of(walk_store))
    chosen = backend._walk_key
    monkeypatch.setattr(backend, "_walk_key",
                        lambda self, counts, filters: ("e.rowid DESC", "e.rowid"))
    by_rowid = _answers(pg_location)
    monkeypatch.setattr(backend, "_walk_key",
                        lambda self, counts, filters: ("(e.rowid + 0) DESC", "(e.rowid + 0)"))
    by_words = _answers(pg_location)
    monkeypatch.setattr(backend, "_walk_key", chosen)
    assert by_words == by_rowid
    assert _answers(pg_location) == by_rowid
    # the queries do walk: past the walk the count is an estimate, said so
    assert by_rowid[2][2] and by_rowid[0][2]
    assert all(ids and how == "words" for ids, _n, _e, how in by_rowid)


def test_postgres_walk_reads_the_word_index_for_words_held_by_few(
        walk_store: Store, pg_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = type(backend_of(walk_store))
    ran = _statements(backend, monkeypatch)
    store = Store(pg_location)
    try:
        # tea: 60 matches, 5 * 60^2 <= 50 * 460: read off the word index
        store.recall(keyword="tea zzz", limit=10)
        assert any("(e.rowid + 0)" in sql for sql in ran)
        # coffee: 400 matches, walked by row id
        ran.clear()
        store.recall(keyword="coffee zzz", limit=10)
        walks = [sql for sql in ran if "ORDER BY e.rowid DESC LIMIT" in sql]
        assert walks and not any("(e.rowid + 0)" in sql for sql in ran)
        # a typed query: its type is taken to keep TYPE_SHARE of the matches
        ran.clear()
        monkeypatch.setattr(backend, "TYPE_SHARE", 100.0)
        store.recall(keyword="tea zzz", limit=10, episode_type="decision")
        assert not any("(e.rowid + 0)" in sql for sql in ran)
    finally:
        store.close()


def test_postgres_sessions_run_without_jit(pg_location: str) -> None:
    for read_only in (False, True):
        if read_only:
            Store(pg_location).close()  # a read-only store needs one to exist
        store = Store(pg_location, read_only=read_only)
        try:
            row = backend_of(store).q1("SHOW jit")
            assert row is not None and row[0] == "off"
        finally:
            store.close()


PHRASES = [("coffee again", None), ("tea by", None), ("window 1", None),
           ("coffee again", "decision"), ("tea by", "observation"), ("number 3", "decision")]


def _phrase_answers(location: str) -> list[tuple[list[str], int, bool, str]]:
    return _answers(location, PHRASES, limit=5)


def test_postgres_phrase_count_alike_scanned_or_read_off_the_index(
        walk_store: Store, pg_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = type(backend_of(walk_store))
    monkeypatch.setattr(backend, "EXACT_COUNT", 30)  # 460 episodes: a store to choose in
    chosen = backend._scan_finds_first
    monkeypatch.setattr(backend, "_scan_finds_first", lambda self, inner, args: True)
    scanned = _phrase_answers(pg_location)
    monkeypatch.setattr(backend, "_scan_finds_first", lambda self, inner, args: False)
    indexed = _phrase_answers(pg_location)
    assert indexed == scanned
    # past the exact bound: estimated, said so; under it: exact
    assert scanned[0][2] and scanned[0][1] > 30
    assert scanned[4][1:] == (30, False, "phrase")  # 30 tea observations, counted
    assert all(how == "phrase" for _ids, _n, _e, how in scanned)
    monkeypatch.setattr(backend, "_scan_finds_first", chosen)
    ran = _statements(backend, monkeypatch)
    assert _phrase_answers(pg_location) == scanned
    # the choice is the planner's estimate, asked once per count
    assert any(sql.startswith("EXPLAIN (FORMAT JSON)") for sql in ran)
