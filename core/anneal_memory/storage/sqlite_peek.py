"""Read-only looks at a SQLite store's file without opening a Store: what ``verify`` and
``audit head`` read (a meta value, the chain's tip, its entries, a raw read-only
connection for the verifier's walk), none of which writes a byte or upgrades anything."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .._audit_chain import MIRRORED_SEQ_KEY
from ..errors import StoreError
from .audit_sql import audit_entry
from .driver import sqlite_driver
from .rows import AuditEntry, AuditTip
from .sqlite_audit import ChainRow, chain_rows, tip_row
from .sqlite_conn import RawConnection


def open_read_only(p: Path, **kw: object) -> tuple[RawConnection, str, str | None]:
    """A read-only connection to the database ``p`` that works where its folder or file
    cannot be written, with how it was opened and the private folder to remove after it
    is closed (or None). SQLite's ``mode=ro`` ("ro": it sees other writers) must create or
    write the ``-shm`` of a WAL database, which a read-only folder refuses ("unable to
    open database file"); there the file is opened ``immutable=1`` ("immutable": nobody
    can change it through that folder), or, when its ``-wal`` holds committed pages that
    immutable would not read, from a private copy of the database and its log ("copy").
    ``kw`` goes to ``connect``. DatabaseError propagates for any other cause."""
    sqlite3 = sqlite_driver()
    uri = p.resolve().as_uri()
    conn: RawConnection | None = None
    try:
        conn = sqlite3.connect(uri + "?mode=ro", uri=True, **kw)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn, "ro", None
    except sqlite3.OperationalError as exc:
        if conn is not None:
            conn.close()
        if "unable to open" not in str(exc) and "readonly" not in str(exc).replace("-", ""):
            raise
        if os.access(str(p.parent), os.W_OK) and os.access(str(p), os.W_OK):
            raise  # not a read-only folder: its own cause
    wal = p.with_name(p.name + "-wal")
    if not (wal.is_file() and wal.stat().st_size > 0):
        return sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, **kw), "immutable", None
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="anneal-ro-")
    try:
        shutil.copy2(p, os.path.join(tmp, p.name))
        shutil.copy2(wal, os.path.join(tmp, wal.name))
        conn = sqlite3.connect(Path(tmp, p.name).as_uri() + "?mode=ro", uri=True, **kw)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"cannot read the store {str(p)!r} in its read-only folder "
                         f"({exc.strerror or exc}): copy the store's files to a writable "
                         "folder and open the copy") from None
    return conn, "copy", tmp


def connect_read_only(db: Path, *, immutable: bool = False) -> RawConnection | None:
    """A read-only connection to the database at ``db`` (``immutable``: not even a lock
    or a journal is touched), or None when there is no readable database there."""
    if not db.is_file() or db.stat().st_size == 0:
        return None
    sqlite3 = sqlite_driver()
    try:
        conn: RawConnection = sqlite3.connect(db.resolve().as_uri() + "?mode=ro" + (
            "&immutable=1" if immutable else ""), uri=True)
        return conn
    except sqlite3.DatabaseError:
        return None


@contextlib.contextmanager
def read_only(db: Path, *, immutable: bool = False) -> Iterator[RawConnection | None]:
    """A read-only connection (or None when there is no readable database there),
    closed after; works in a read-only folder too (see :func:`open_read_only`)."""
    if immutable:
        conn, tmp = connect_read_only(db, immutable=True), None
    elif not db.is_file() or db.stat().st_size == 0:
        conn, tmp = None, None
    else:
        try:
            conn, _mode, tmp = open_read_only(db)
        except (sqlite_driver().DatabaseError, StoreError):
            conn, tmp = None, None
    try:
        yield conn
    finally:
        if conn is not None:
            conn.close()
        if tmp:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


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


def audit_tip(db: Path) -> AuditTip | None:
    """(seq, hash) of the newest entry in the database's copy of the chain (None when it
    holds none or cannot be read)."""
    with read_only(db) as conn:
        if conn is None:
            return None
        try:
            return tip_row(conn)
        except sqlite_driver().DatabaseError:
            return None


def audit_entries_after(db: Path, after: int) -> list[AuditEntry]:
    """The database's full entries after ``after`` (empty when it cannot be read)."""
    with read_only(db) as conn:
        if conn is None:
            return []
        try:
            rows = conn.execute("SELECT seq, ts, actor, event, data, prev_hash, hash FROM "
                                "audit_log WHERE seq > ? ORDER BY seq", (after,)).fetchall()
            return [audit_entry(r) for r in rows]
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
        self.rows: Iterator[ChainRow] = iter(())
        self._conn: RawConnection | None = None
        self._tmp: str | None = None
        if not db.exists() or db.stat().st_size == 0:
            return
        try:
            conn, self.mode, self._tmp = open_read_only(db)
        except StoreError as exc:
            raise ValueError(str(exc)) from None
        try:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                                "name='audit_log'").fetchone():
                self.close_conn(conn)
                return
            got = conn.execute("SELECT value FROM meta WHERE key=?",
                               (MIRRORED_SEQ_KEY,)).fetchone()
            self.mirrored = int(str(got[0])) if got and str(got[0]).isdigit() else 0
            tail = conn.execute("SELECT value FROM meta WHERE key=?",
                                (legacy_tail_key,)).fetchone()
            self.legacy_tail = str(tail[0]) if tail else None
            self.rows = chain_rows(conn)
        except BaseException:
            self.close_conn(conn)
            raise
        self._conn = conn
        self.available = True

    #: how the database was opened (see :func:`open_read_only`)
    mode = "ro"

    def close_conn(self, conn: RawConnection) -> None:
        conn.close()
        if self._tmp:
            import shutil

            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def conn(self) -> RawConnection | None:
        """The open read-only connection (None once closed, or when not available)."""
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self.close_conn(self._conn)
            self._conn = None


class LiveItems:
    """One item collection of the root, read on a connection of its own: read-only and
    autocommit, so every read sees the last commit of any process (a server's tokens: a
    revocation counts at once), opened by SQLite alone (never ``open()`` on the file, which
    would drop the process's locks on it). ``open`` gives None where no such connection to
    the live database can be had (PostgreSQL, a read-only folder read frozen or copied)."""

    _SQL = "SELECT value FROM items WHERE ns_key = '' AND collection = ? AND key = ?"

    def __init__(self, conn: RawConnection, collection: str) -> None:
        self._conn = conn
        self.collection = collection

    @classmethod
    def open(cls, path: str | Path, collection: str) -> LiveItems | None:
        try:
            conn, mode, tmp = open_read_only(Path(path), isolation_level=None,
                                             check_same_thread=False)
        except Exception:
            return None
        if mode != "ro" or tmp is not None:  # not the live database: its copy or frozen
            conn.close()
            if tmp is not None:
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
            return None
        return cls(conn, collection)

    def get(self, key: str) -> str | None:
        """The stored value text of ``key`` (None: no such item)."""
        rows = self._conn.execute(self._SQL, (self.collection, key)).fetchall()
        return str(rows[0][0]) if rows else None

    def close(self) -> None:
        self._conn.close()
