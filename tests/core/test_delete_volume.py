"""Deleting and pruning thousands of episodes leaves a store that opens, verifies and works.

Guards the FTS5 delete path: on SQLite 3.39/3.40 each delete's index merge used to add
levels to the index structure until, near delete 1,000, FTS5 declared the store
malformed and every later statement failed. These tests run on whatever SQLite the
session links (the core session's, and the nox sessions pinned to 3.39 and 3.51).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from anneal_memory import AuditTrail, Store, StoreError
from anneal_memory.storage import fts
from anneal_memory.storage.driver import choose_driver, sqlite_driver
from anneal_memory.testing import backend_of


def _fill(store: Store, n: int, *, days_ago: int = 0, tag: str = "bulk") -> list[str]:
    ts = (datetime.now(timezone.utc) - timedelta(days=days_ago)).isoformat()
    eps = store.record_many(
        {"content": f"{tag} episode {i} about the connection pool zq{i:05d}",
         "episode_type": "observation", "timestamp": ts} for i in range(n))
    return [e.id for e in eps]


def _check_healthy(path: Path, *, survivors: int) -> None:
    """Reopen, check both SQLite's and FTS5's own integrity, then write and read again."""
    with Store(path) as s:
        conn = backend_of(s).conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for table in fts.FTS_TABLES:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            assert fts.structure_levels(conn, table) <= fts.MAX_LEVELS
        assert s.status().total_episodes == survivors
        new = s.record("after the deletes qqresized happened", "observation")
        got = s.recall(keyword="qqresized")
        assert [e.id for e in got.episodes] == [new.id]
        assert s.recall(keyword="connection pool").total_matching == survivors
        assert s.delete(new.id)
        assert s.recall(keyword="qqresized").total_matching == 0


def test_delete_thousands_one_by_one(db: Path) -> None:
    with Store(db) as s:
        ids = _fill(s, 2600)
        for n, eid in enumerate(ids[:2500]):
            assert s.delete(eid), f"delete #{n} refused"
        assert s.recall(keyword="zq00007").total_matching == 0
        assert s.recall(keyword="zq02555").total_matching == 1
    _check_healthy(db, survivors=100)
    assert AuditTrail.verify(db).valid


def test_prune_thousands_in_bulk_then_delete_the_rest(db: Path) -> None:
    with Store(db) as s:
        _fill(s, 6000, days_ago=40, tag="oldtag")
        keep = _fill(s, 1200, tag="new")
        assert s.prune(older_than_days=30) == 6000
        assert s.recall(keyword="oldtag").total_matching == 0
        for eid in keep[:1100]:
            assert s.delete(eid)
    _check_healthy(db, survivors=100)


def test_repeated_cycles_of_record_and_delete(db: Path) -> None:
    with Store(db) as s:
        for cycle in range(6):
            ids = _fill(s, 400, tag=f"cycle{cycle}")
            for eid in ids[:350]:
                s.delete(eid)
    _check_healthy(db, survivors=6 * 50)


def _break_index(path: Path, table: str) -> None:
    """Damage one index the way the earlier delete path did on old SQLite, or, where this
    SQLite keeps the structure bounded, by overwriting its structure record."""
    conn = sqlite_driver().connect(str(path), isolation_level=None)
    try:
        rows = [r[0] for r in conn.execute("SELECT rowid FROM episodes ORDER BY rowid LIMIT 1200")]
        try:
            for rowid in rows:
                conn.execute(f"INSERT INTO {table}({table}, rowid, content, type) "
                             "SELECT 'delete', rowid, content, type FROM episodes WHERE rowid=?",
                             (rowid,))
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        except sqlite_driver().DatabaseError:
            pass  # the old failure itself: "database disk image is malformed"
        conn.execute(f"UPDATE {table}_data SET block=? WHERE id=10", (b"\x00\x00\x00\x00\xff\xff",))
    finally:
        conn.close()
    conn = sqlite_driver().connect(str(path))
    try:
        with pytest.raises(sqlite_driver().DatabaseError):
            conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH 'pool'").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("table", fts.FTS_TABLES)
def test_a_store_with_a_broken_index_is_rebuilt_on_open(db: Path, table: str) -> None:
    with Store(db) as s:
        _fill(s, 1500)
    _break_index(db, table)
    with pytest.raises(StoreError, match="without read_only"):
        Store(db, read_only=True)
    _check_healthy(db, survivors=1500)
    with Store(db, read_only=True) as ro:
        assert ro.recall(keyword="zq01234").total_matching == 1


def test_driver_refuses_an_sqlite_older_than_the_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    from anneal_memory.storage import driver

    assert choose_driver([sqlite3]) is sqlite3 or sqlite3.sqlite_version_info < driver.MIN_SQLITE
    monkeypatch.setattr(driver, "MIN_SQLITE", (99, 0, 0))
    with pytest.raises(StoreError, match=r"needs SQLite 3\.39\.0 or newer.*found"):
        choose_driver([sqlite3])
