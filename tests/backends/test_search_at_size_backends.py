"""Issue 54, goal 1 on every backend: ranked words past WORD_WALK matches are ranked among
the newest WORD_WALK matches and every match of the query's rare words, and the count past
the walk is an estimate said to be one; under the walk every match is ranked as before.
On PostgreSQL, word_counts takes a word its statistics put far above the cap as held by
the cap without counting (exact unless the statistics are stale)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from conftest import PG_DSN, admin_sql

from anneal_memory import Store, ranking
from anneal_memory.recall import build_filters
from anneal_memory.testing import backend_of


def _walk_store(store: Store) -> None:
    """400 episodes saying a common word, one old episode also saying a rare one."""
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    items = [{"content": f"coffee again number {i} today", "episode_type": "observation",
              "timestamp": (start + timedelta(minutes=i)).isoformat()} for i in range(400)]
    items[5]["content"] = "coffee with the astronomer at dawn"
    store.record_many(items)


def test_a_word_query_past_the_walk_ranks_newest_matches_and_every_rare_one(
        open_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store()
    _walk_store(store)
    whole = store.recall(keyword="coffee astronomer zzz", limit=10)
    assert "total_estimated" not in whole.query_params
    assert whole.total_matching == 400
    backend = type(backend_of(store))
    monkeypatch.setattr(backend, "WORD_WALK", 50)
    monkeypatch.setattr(backend, "RARE_MATCHES", 5)
    again = open_store()  # a fresh connection: nothing memoized
    walked = again.recall(keyword="coffee astronomer zzz", limit=10)
    # the rare word's one match is 395 rows older than the newest: still first
    assert walked.episodes[0].content == "coffee with the astronomer at dawn"
    assert [e.id for e in walked.episodes] == [e.id for e in whole.episodes]
    # the count past the walk is an estimate, said so, and near the truth
    assert walked.query_params["total_estimated"] is True
    assert 380 <= walked.total_matching <= 420
    if hasattr(backend, "RARE_FIRST"):  # PostgreSQL: rare words found before the walk
        monkeypatch.setattr(backend, "RARE_FIRST", 0)
        first = open_store().recall(keyword="coffee astronomer zzz", limit=10)
        assert [e.id for e in first.episodes] == [e.id for e in whole.episodes]
        assert first.total_matching == walked.total_matching
    # a common word alone: the newest matches of the walk only
    common = again.recall(keyword="coffee zzz", limit=5, context=False)
    assert all(int(e.content.split()[3]) >= 350 for e in common.episodes)
    # without the rare word among the walked rows, its match is not found at all
    monkeypatch.setattr(backend, "RARE_MATCHES", 0)
    third = open_store()
    missed = third.recall(keyword="coffee astronomer zzz", limit=10)
    assert "coffee with the astronomer at dawn" not in [e.content for e in missed.episodes]


def test_the_walk_leaves_a_query_under_its_bound_alone(
        open_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store()
    _walk_store(store)
    before = store.recall(keyword="coffee number zzz", limit=10)
    typed_before = store.recall(keyword="coffee number zzz", limit=10,
                                episode_type="observation")
    monkeypatch.setattr(type(backend_of(store)), "WORD_WALK", 400)  # every match fits
    again = open_store()
    after = again.recall(keyword="coffee number zzz", limit=10)
    assert [e.id for e in after.episodes] == [e.id for e in before.episodes]
    assert after.total_matching == 400 and "total_estimated" not in after.query_params
    typed = again.recall(keyword="coffee number zzz", limit=10, episode_type="observation")
    assert [e.id for e in typed.episodes] == [e.id for e in typed_before.episodes]
    # a page past the first: the pool grows, the order holds
    deep = again.recall(keyword="coffee number zzz", limit=10, offset=30)
    whole = again.recall(keyword="coffee number zzz", limit=40)
    assert [e.id for e in deep.episodes] == [e.id for e in whole.episodes][30:40]
    # a store past the walk whose query matches fewer rows than it, with a rare word:
    # every match is ranked (with the rare word's), as without the walk
    store.record_many([{"content": f"tea by the window {i}" + (" comet" if i == 2 else ""),
                        "episode_type": "observation"} for i in range(30)])
    tea_before = store.recall(keyword="tea comet zzz", limit=40)
    monkeypatch.setattr(type(backend_of(store)), "WORD_WALK", 100)
    monkeypatch.setattr(type(backend_of(store)), "RARE_MATCHES", 5)
    monkeypatch.setattr(type(backend_of(store)), "RARE_FIRST", 0, raising=False)
    tea = open_store().recall(keyword="tea comet zzz", limit=40)
    assert [e.id for e in tea.episodes] == [e.id for e in tea_before.episodes]
    assert tea.total_matching == tea_before.total_matching == 30
    assert "total_estimated" not in tea.query_params


@pytest.mark.skipif(not PG_DSN, reason="PostgreSQL only: SQLite counts in its index")
def test_postgres_word_counts_take_far_common_words_from_the_statistics(
        pg_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(pg_location)
    store.record_many([{"content": f"coffee at the lab {i}" + (" telescope" if i < 3 else ""),
                        "episode_type": "observation"} for i in range(400)])
    schema = pg_location.rsplit("search_path%3D", 1)[-1]
    admin_sql(f"ANALYZE {schema}.episodes")
    backend = backend_of(store)
    words = ["coffee", "lab", "telescope", "zebra", "caroline's"]
    # the statistics and counting agree while they are fresh
    from_stats = backend.word_counts(build_filters(), words, 10)
    monkeypatch.setattr(type(backend), "STATS_MARGIN", float("inf"))
    counted = backend.word_counts(build_filters(), words, 10)
    assert from_stats == counted
    assert counted.per_word == {"coffee": 10, "lab": 10, "telescope": 3, "zebra": 0,
                                "caroline's": 0}
    # what is taken from them: a word whose episodes were removed behind the statistics'
    # back (raw SQL, no ANALYZE since) still counts as common, until analysed again
    admin_sql(f"DELETE FROM {schema}.episodes WHERE content LIKE 'coffee at the lab %' "
              "AND rowid > 5")
    assert backend.word_counts(build_filters(), ["coffee"], 10).per_word == {"coffee": 5}
    monkeypatch.setattr(type(backend), "STATS_MARGIN", 1.25)
    assert backend.word_counts(build_filters(), ["coffee"], 10).per_word == {"coffee": 10}
    admin_sql(f"ANALYZE {schema}.episodes")
    assert backend.word_counts(build_filters(), ["coffee"], 10).per_word == {"coffee": 5}
    # a namespace's words are always counted: the statistics are the whole store's
    scoped = backend_of(store.scoped({"user": "alice"}))
    assert scoped.word_counts(build_filters(), ["coffee"], 10).per_word == {"coffee": 0}
    store.close()


@pytest.mark.skipif(not PG_DSN, reason="PostgreSQL only: SQLite memoizes in memo()")
def test_postgres_word_counts_are_kept_for_the_database_state_they_were_counted_in(
        pg_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(pg_location)
    other = Store(pg_location)
    try:
        store.record_many([{"content": f"coffee at the lab {i}", "episode_type": "observation"}
                           for i in range(30)])
        backend = backend_of(store)
        ran: list[str] = []
        run = type(backend)._run

        def spy(self: object, sql: str, params: object, fetch: object) -> object:
            ran.append(sql)
            return run(self, sql, params, fetch)  # type: ignore[arg-type]

        monkeypatch.setattr(type(backend), "_run", spy)

        def counts() -> tuple[int, dict[str, int]]:
            with backend.read():
                wc = backend.word_counts(build_filters(), ["coffee", "lab"], 100)
            return wc.total, wc.per_word

        assert counts() == (30, {"coffee": 30, "lab": 30})
        ran.clear()
        assert counts() == (30, {"coffee": 30, "lab": 30})  # the same state: kept
        assert not any("COUNT" in sql or "MAX(rowid)" in sql for sql in ran)
        other.record("coffee once more", "observation")  # another connection commits
        assert counts() == (31, {"coffee": 31, "lab": 30})
        ran.clear()
        monkeypatch.setattr(type(backend), "RARE_FIRST", 0)
        monkeypatch.setattr(type(backend), "RARE_MATCHES", 5)  # coffee: common
        with backend.read():  # a walk's rare words and word_counts: one count per word
            backend.ranked_ids(build_filters(), ["tea", "at"], 100)
            assert any("COUNT(*) FROM (SELECT 1" in sql for sql in ran)
            ran.clear()
            assert backend.word_counts(build_filters(), ["tea", "at"],
                                       ranking.COUNT_CAP).per_word == {"tea": 0, "at": 30}
            assert not any("COUNT(*) FROM (SELECT 1" in sql for sql in ran)
        assert type(backend).WORD_COUNT_CAP == ranking.COUNT_CAP
        ran.clear()
        with backend.read():  # a lower cap is answered from the count kept
            assert backend.word_counts(build_filters(), ["coffee"], 10).per_word == {
                "coffee": 10}
        assert not any("COUNT" in sql for sql in ran)
        # outside a read snapshot nothing is kept: each statement sees the latest commits
        ran.clear()
        assert backend.word_counts(build_filters(), ["coffee"], 100).per_word == {"coffee": 31}
        assert any("COUNT" in sql for sql in ran)
    finally:
        other.close()
        store.close()


@pytest.mark.skipif(not PG_DSN, reason="PostgreSQL only: the SQLite schema has its own steps")
def test_postgres_store_of_schema_3_upgrades_on_open(pg_location: str) -> None:
    from anneal_memory.storage import pg_schema

    store = Store(pg_location)
    kept = store.record("coffee with the astronomer", "decision")
    store.close()
    schema = pg_location.rsplit("search_path%3D", 1)[-1]
    # what a store written by the previous release has: schema 3, no type/row id index
    admin_sql(f"DROP INDEX {schema}.ix_episodes_type_rowid")
    admin_sql(f"UPDATE {schema}.meta SET value = '3' WHERE key = 'schema_version'")
    old = Store(pg_location, read_only=True)  # read-only: read as it is, not upgraded
    assert [e.id for e in old.recall(keyword="astronomer", episode_type="decision").episodes] \
        == [kept.id]
    old.close()
    store = Store(pg_location)
    try:
        import psycopg
        from conftest import with_schema
        with psycopg.connect(with_schema(PG_DSN, schema)) as conn:
            assert conn.execute("SELECT to_regclass('ix_episodes_type_rowid')").fetchone()[0]
            assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                ).fetchone()[0] == str(pg_schema.SCHEMA_VERSION) == "4"
        assert [e.id for e in store.recall(keyword="astronomer",
                                           episode_type="decision").episodes] == [kept.id]
        assert backend_of(store).integrity_check() == "ok"
    finally:
        store.close()
