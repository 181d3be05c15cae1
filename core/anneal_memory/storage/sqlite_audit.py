"""SQLite's copy of the audit chain: full rows until mirrored, then only their hashes.

Each entry is inserted in full into ``audit_log`` in the transaction of the mutation it
records. Once the JSONL files hold it (written from the row and fsynced, or found there
field for field), the row is *compacted*: moved to ``audit_hashes`` as its seq and its
32-byte hash, which is what verification needs to name a changed file entry (its
recomputed hash is not the one the database keeps for that seq). So ``audit_log`` holds
only the unmirrored tail, and the pages a large batch's rows leave free are given back
in the compacting transaction (stores created with incremental auto-vacuum). PostgreSQL
keeps every entry in full (it has no files; see :mod:`.audit_sql`).

``entries`` returns the whole chain in full, reading compacted entries back from
the files (each checked against the hash kept here); ``rows`` only the rows held
in full, which a mirror writes out; ``digests`` the chain as (seq, hash, compacted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from ..errors import AuditError
from .audit_sql import AuditSQL, SQLConnection
from .rows import AuditDigest, AuditEntry, AuditTip
from .sqlite_conn import RawConnection

#: The database's copy in seq order: full rows, then compacted ones with NULL content
#: (the last column says which). One statement, so one snapshot of both tables.
CHAIN_SQL = ("SELECT seq, ts, actor, event, data, prev_hash, hash, 0 FROM audit_log "
             "WHERE seq > ? UNION ALL SELECT seq, NULL, NULL, NULL, NULL, NULL, "
             "lower(hex(hash)), 1 FROM audit_hashes WHERE seq > ? ORDER BY 1")
#: The same without the compacted table (a store of schema 2 opened read-only).
FULL_SQL = ("SELECT seq, ts, actor, event, data, prev_hash, hash, 0 FROM audit_log "
            "WHERE seq > ? ORDER BY seq")

#: The newest full row when it is newer than every compacted entry (what a writer's tip
#: is but right after a mirror): two index seeks, no sort. Measured at 10,100 entries:
#: 12 us against TIP_SQL's 41 (its two co-routines and their sorts); when it finds no
#: row, TIP_SQL answers.
TIP_TAIL_SQL = ("SELECT seq, hash FROM audit_log WHERE seq > (SELECT COALESCE(MAX(seq), 0) "
                "FROM audit_hashes) ORDER BY seq DESC LIMIT 1")
TIP_SQL = ("SELECT seq, hash FROM (SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1) "
            "UNION ALL SELECT seq, h FROM (SELECT seq, lower(hex(hash)) AS h FROM audit_hashes "
            "ORDER BY seq DESC LIMIT 1) ORDER BY 1 DESC LIMIT 1")

#: a ``CHAIN_SQL`` row: seq, ts, actor, event, data, prev_hash, hash (NULL but seq and
#: hash when compacted), compacted (0 or 1)
ChainRow = tuple[object, ...]


def has_compacted_table(conn: RawConnection) -> bool:
    """Whether this database has ``audit_hashes`` (schema 3 on)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                        "name='audit_hashes'").fetchone() is not None


def tip_row(conn: RawConnection) -> AuditTip | None:
    """(seq, hash) of the newest entry, full or compacted, on a raw connection."""
    if has_compacted_table(conn):
        r = conn.execute(TIP_SQL).fetchone()
    else:
        r = conn.execute("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
    return None if r is None else AuditTip(int(str(r[0])), str(r[1]))


def chain_rows(conn: RawConnection, after_seq: int = 0) -> Iterator[ChainRow]:
    """The database's copy after ``after_seq`` as ``CHAIN_SQL`` rows, on a raw connection."""
    if has_compacted_table(conn):
        return iter(conn.execute(CHAIN_SQL, (after_seq, after_seq)))
    return iter(conn.execute(FULL_SQL, (after_seq,)))


class CompactedChain(SQLConnection):
    """What SQLite's audit statements need of its backend besides SQL: the reader of
    compacted entries, which the Store hands in (the files are the audit layer's)."""

    @property
    def _compacted_entries(self) -> CompactedReader | None: ...


#: (db path, backend, after_seq, limit) -> every entry in full, compacted ones read back
#: from the audit files
CompactedReader = Callable[[str, CompactedChain, int, "int | None"], list[AuditEntry]]


class SQLiteAuditSQL(AuditSQL):
    """The audit statements of a SQLite store, which compacts mirrored entries."""

    __slots__ = ("_compact_table", "_incremental")
    db: CompactedChain

    #: free pages a compaction leaves before they are given back to the file system
    RECLAIM_PAGES = 64

    def __init__(self, db: CompactedChain) -> None:
        super().__init__(db)
        self._compact_table: bool | None = None
        self._incremental: bool | None = None

    def _compacts(self) -> bool:
        if not self._compact_table:  # once there, it stays (a migration only adds it)
            self._compact_table = bool(self.db.q1(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='audit_hashes'"))
        return bool(self._compact_table)

    def tip(self) -> AuditTip:
        # the newest entry, full or compacted (held under the write lock, see audit_sql)
        if not self._compacts():
            return super().tip()
        r = self.db.q1(TIP_TAIL_SQL)
        return self._tip(r if r is not None else self.db.q1(TIP_SQL))

    def count(self) -> int:
        full = super().count()
        return full + (self.db._scalar("SELECT COUNT(*) FROM audit_hashes")
                       if self._compacts() else 0)

    def entries(self, after_seq: int = 0, limit: int | None = None) -> list[AuditEntry]:
        if not self._compacts() or not self.db.q1(
                "SELECT 1 FROM audit_hashes WHERE seq > ? LIMIT 1", (after_seq,)):
            return self.rows(after_seq, limit)
        reader = self.db._compacted_entries
        if reader is None:
            raise AuditError("this database keeps compacted audit entries, whose text is in "
                             "the audit files: open it through Store(path) to read them")
        return reader(self.db.path, self.db, after_seq, limit)

    def digests(self, after_seq: int = 0, limit: int | None = None) -> list[AuditDigest]:
        """(seq, hash, compacted) for every entry of the database's copy after ``after_seq``."""
        if not self._compacts():
            return super().digests(after_seq, limit)
        sql, params = CHAIN_SQL, [after_seq, after_seq]
        if limit:
            sql, params = sql + " LIMIT ?", [*params, limit]
        return [AuditDigest(int(str(r[0])), str(r[6]), bool(r[7]))
                for r in self.db.q(sql, params)]

    def compact(self, digests: Sequence[tuple[int, str]]) -> int:
        """Keep only the hash of each (seq, hash) given, inside the caller's transaction;
        a row whose stored hash is not the one given is left in full. The caller vouches
        that the files hold each of these entries, durably."""
        if not digests or not self._compacts():
            return 0
        self.db.executemany("INSERT OR IGNORE INTO audit_hashes(seq, hash) SELECT seq, ? "
                            "FROM audit_log WHERE seq = ? AND hash = ?",
                            [(bytes.fromhex(h), int(s), h) for s, h in digests])
        low, high = min(int(s) for s, _ in digests), max(int(s) for s, _ in digests)
        # only a row whose hash is now kept (never one a different kept hash shadows)
        n = self.db._rowcount("DELETE FROM audit_log WHERE seq BETWEEN ? AND ? AND EXISTS "
                              "(SELECT 1 FROM audit_hashes h WHERE h.seq = audit_log.seq "
                              "AND lower(hex(h.hash)) = audit_log.hash)", (low, high))
        self._give_back_free_pages()
        return n

    def _give_back_free_pages(self, most: int = 4096) -> None:
        """Shrink the file by the free pages, inside the caller's transaction, once there
        are ``RECLAIM_PAGES`` of them: the full rows of a large batch, freed at once by its
        compaction, would otherwise stay in the file (reused only by later tails). Only a
        store created with incremental auto-vacuum (every store since schema 4) can."""
        if self._incremental is None:
            self._incremental = int(str(self.db.q("PRAGMA auto_vacuum")[0][0])) == 2
        if not self._incremental:
            return
        free = int(str(self.db.q("PRAGMA freelist_count")[0][0]))
        if free >= self.RECLAIM_PAGES:
            for _ in range(min(free, most)):  # the module steps it once: one page a call
                self.db.q("PRAGMA incremental_vacuum(1)")
