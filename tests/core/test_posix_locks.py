"""A second Store on one database in the same process must not drop the first one's locks.

SQLite's locks are POSIX advisory locks, which belong to the process: closing ANY
descriptor the process holds on the database file releases all of them. Had opening a
Store read the file's header with ``open()``, a second Store (a server's token check, an
adapter beside the app's own store) would strip the first of its locks, and another process
closing its connection would believe itself the last one: it would checkpoint and delete
the write-ahead log and shared-memory files under live connections ("disk I/O error",
then "database disk image is malformed")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from anneal_memory import Store

CHILD = ("import sys; from anneal_memory import Store; s = Store(sys.argv[1]); "
         "s.record('from the other process', 'observation'); s.close()")


@pytest.mark.parametrize("second", ["writable", "read_only", "scoped"])
def test_a_second_store_in_one_process_keeps_the_first_ones_locks(tmp_path: Path,
                                                                   second: str) -> None:
    db = tmp_path / "memory.db"
    first = Store(db)
    try:
        first.record("from the first store", "observation")
        other = Store(db, read_only=(second == "read_only"))
        if second == "scoped":
            other.scoped({"user": "alice"}).record("alice's note", "observation")
        other.close()
        subprocess.run([sys.executable, "-c", CHILD, str(db)], check=True, timeout=120)
        # the other process was not the last connection: the log and its index stay
        assert (tmp_path / "memory.db-wal").exists()
        assert (tmp_path / "memory.db-shm").exists()
        assert first.recall(keyword="other process").total_matching == 1
        first.record("after the other process closed", "observation")
    finally:
        first.close()
    with Store(db, read_only=True) as again:
        assert again.status().total_episodes == (4 if second == "scoped" else 3)
    from anneal_memory import AuditTrail

    assert AuditTrail.verify(db).valid


def test_a_file_that_is_not_a_store_is_refused_unchanged(tmp_path: Path) -> None:
    from anneal_memory import StoreError

    text = tmp_path / "notes.db"
    text.write_text("plain text, not a database " * 10)
    before = text.read_bytes()
    with pytest.raises(StoreError, match="not a SQLite database"):
        Store(text)
    assert text.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    """Neither a database with another application id (in WAL mode, so reading it wants
    a -shm) nor a plain one with other tables is changed, switched to WAL, or given
    sidecar files: the refusal comes before anything is written."""
    import hashlib
    import sqlite3

    from anneal_memory import StoreError

    wal = tmp_path / "wal.db"
    c = sqlite3.connect(wal, isolation_level=None)  # autocommit: WAL needs no open transaction
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA application_id=77")
    c.execute("CREATE TABLE t(a)")
    c.commit()
    c.close()
    plain = tmp_path / "plain.db"
    c = sqlite3.connect(plain, isolation_level=None)
    c.execute("CREATE TABLE notes(a)")
    c.execute("INSERT INTO notes VALUES ('mine')")
    c.commit()
    c.close()
    for db, says in ((wal, "another application"), (plain, "not an anneal-memory store")):
        before = hashlib.sha256(db.read_bytes()).hexdigest()
        with pytest.raises(StoreError, match=says):
            Store(db)
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.db", "wal.db"]
    c = sqlite3.connect(plain)
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    c.close()
