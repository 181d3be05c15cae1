"""Read-only looks at a SQLite store's file without opening a Store: what ``verify`` and
``audit head`` read (a meta value, the chain's tip, its entries, a raw read-only
connection for the verifier's walk), none of which writes a byte or upgrades anything."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._audit_chain import MIRRORED_SEQ_KEY
from .driver import sqlite_driver
from .sqlite_audit import chain_rows, tip_row


def connect_read_only(db: Path, *, immutable: bool = False) -> Any:
    """A read-only connection to the database at ``db`` (``immutable``: not even a lock
    or a journal is touched), or None when there is no readable database there."""
    if not db.is_file() or db.stat().st_size == 0:
        return None
    sqlite3 = sqlite_driver()
    try:
        return sqlite3.connect(db.resolve().as_uri() + "?mode=ro" + (
            "&immutable=1" if immutable else ""), uri=True)
    except sqlite3.DatabaseError:
        return None


@contextlib.contextmanager
def read_only(db: Path, *, immutable: bool = False) -> Iterator[Any]:
    """:func:`connect_read_only` as a context (the connection, or None), closed after."""
    conn = connect_read_only(db, immutable=immutable)
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()


def meta_value(db: Path, key: str) -> str | None:
    """One meta value of the store at ``db`` (None when absent or unreadable)."""
    with read_only(db) as conn:
        if conn is None:
            return None
        try:
            r = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
            return None if r is None else str(r[0])
        except Exception:
            return None


def audit_tip(db: Path) -> tuple[int, str] | None:
    """(seq, hash) of the newest entry in the database's copy of the chain (None when it
    holds none or cannot be read)."""
    with read_only(db) as conn:
        if conn is None:
            return None
        try:
            return tip_row(conn)
        except sqlite_driver().DatabaseError:
            return None


def audit_entries_after(db: Path, after: int) -> list[dict[str, Any]]:
    """The database's full entries after ``after`` (empty when it cannot be read)."""
    with read_only(db) as conn:
        if conn is None:
            return []
        try:
            rows = conn.execute("SELECT seq, ts, actor, event, data, prev_hash, hash FROM "
                                "audit_log WHERE seq > ? ORDER BY seq", (after,)).fetchall()
            return [{"seq": r[0], "ts": r[1], "actor": r[2], "event": r[3],
                     "data": json.loads(r[4]), "prev_hash": r[5], "hash": r[6]} for r in rows]
        except (sqlite_driver().DatabaseError, ValueError):
            return []


class ChainReader:
    """The database's copy of the chain for the verifier's walk, on one read-only
    connection: ``available`` is False for a database without an audit table; ``rows``
    the copy in seq order; ``mirrored`` how far the files hold it; ``legacy_tail`` the
    raw record of an upgraded 1.0.2 store's part (None otherwise). DatabaseError and
    ValueError propagate: the caller reports the copy as unreadable."""

    def __init__(self, db: Path, legacy_tail_key: str) -> None:
        self.available = False
        self.mirrored = 0
        self.legacy_tail: str | None = None
        self.rows: Iterator[tuple[Any, ...]] = iter(())
        self._conn: Any = None
        if not db.exists() or db.stat().st_size == 0:
            return
        conn = sqlite_driver().connect(db.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                                "name='audit_log'").fetchone():
                conn.close()
                return
            got = conn.execute("SELECT value FROM meta WHERE key=?",
                               (MIRRORED_SEQ_KEY,)).fetchone()
            self.mirrored = int(got[0]) if got and str(got[0]).isdigit() else 0
            tail = conn.execute("SELECT value FROM meta WHERE key=?",
                                (legacy_tail_key,)).fetchone()
            self.legacy_tail = str(tail[0]) if tail else None
            self.rows = chain_rows(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self.available = True

    @property
    def conn(self) -> Any:
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
