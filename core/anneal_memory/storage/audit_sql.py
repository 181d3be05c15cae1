"""The audit chain's SQL, owned by the :class:`~.roles.AuditChain` role.

:class:`AuditSQL` is the statements every database shares (the chain in ``audit_log``,
every entry in full: PostgreSQL keeps it so). A backend names its dialect in
``_AUDIT_SQL``: SQLite's (``sqlite_audit.SQLiteAuditSQL``) also keeps mirrored entries as
their hashes only; PostgreSQL's (``postgres.PostgresAuditSQL``) takes the write lock and
reads the tip in one round trip. The role builds the dialect once over the backend's
connection; the backend itself declares none of these methods.

The guarantees are the connection's, unchanged: a writer holds the write lock from its
first statement (BEGIN IMMEDIATE, or PostgreSQL's advisory lock, taken at the first
append of an appends-only transaction), so nobody appends between the tip's read and
the insert.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

from .rows import AuditDigest, AuditEntry, AuditRowValues, AuditTip

AUDIT_COLS = ("seq", "ts", "actor", "event", "data", "prev_hash", "hash")
#: one entry's row
INSERT_ONE_SQL = f"INSERT INTO audit_log({', '.join(AUDIT_COLS)}) VALUES (?,?,?,?,?,?,?)"
#: the full rows after a seq, oldest first
ROWS_SQL = ("SELECT seq, ts, actor, event, data, prev_hash, hash FROM audit_log "
            "WHERE seq > ? ORDER BY seq")
#: the tip of an empty chain
GENESIS_TIP = AuditTip(0, "0" * 64)


class SQLConnection(Protocol):
    """What the audit statements need of a backend's connection (``SQLBackend``'s raw
    SQL primitives and helpers)."""

    @property
    def path(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    def q(self, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]: ...
    def q1(self, sql: str, params: Sequence[object] = ()) -> tuple[object, ...] | None: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> None: ...
    def _rowcount(self, sql: str, params: Sequence[object] = ()) -> int: ...
    def _scalar(self, sql: str, params: Sequence[object] = ()) -> int: ...
    def _insert_rows(self, table: str, cols: Sequence[str],
                     rows: Sequence[Sequence[object]]) -> None: ...


def row_values(r: Sequence[object]) -> AuditRowValues:
    """A ``ROWS_SQL`` row as its named values (seq as an int, data still JSON text)."""
    seq = r[0]
    return AuditRowValues(seq if type(seq) is int else int(str(seq)), str(r[1]), str(r[2]),
                          str(r[3]), str(r[4]), str(r[5]), str(r[6]))


def audit_entry(r: Sequence[object]) -> AuditEntry:
    """A ``ROWS_SQL`` row as the chain's entry (its data parsed from JSON): the dict the
    audit files hold one per line."""
    v = row_values(r)
    return AuditEntry(seq=v.seq, ts=v.ts, actor=v.actor, event=v.event,
                      data=json.loads(v.data), prev_hash=v.prev_hash, hash=v.hash)


def entry_row(entry: AuditEntry) -> AuditRowValues:
    """An entry as the column values ``insert_rows`` writes (data as sorted JSON text)."""
    return AuditRowValues(entry["seq"], entry["ts"], entry["actor"], entry["event"],
                          json.dumps(entry["data"], sort_keys=True, ensure_ascii=False),
                          entry["prev_hash"], entry["hash"])


class AuditSQL:
    """The audit statements over one backend's connection: every entry in full."""

    __slots__ = ("db",)

    def __init__(self, db: SQLConnection) -> None:
        self.db = db

    def _tip(self, r: Sequence[object] | None) -> AuditTip:
        return GENESIS_TIP if r is None else AuditTip(int(str(r[0])), str(r[1]))

    def tip(self) -> AuditTip:
        """The newest entry (read under the writer's lock: see the module's note)."""
        return self._tip(self.db.q1("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1"))

    def insert_rows(self, rows: Sequence[AuditRowValues]) -> None:
        """Insert consecutive entries, oldest first (one, as every lone record appends:
        a statement written once)."""
        if len(rows) == 1:
            self.db.q(INSERT_ONE_SQL, rows[0])
        else:
            self.db._insert_rows("audit_log", AUDIT_COLS, rows)

    def _full(self, after_seq: int, limit: int | None) -> list[tuple[object, ...]]:
        return (self.db.q(ROWS_SQL + " LIMIT ?", (after_seq, limit)) if limit
                else self.db.q(ROWS_SQL, (after_seq,)))

    def rows(self, after_seq: int = 0, limit: int | None = None) -> list[AuditEntry]:
        """The entries held in full after ``after_seq``."""
        return [audit_entry(r) for r in self._full(after_seq, limit)]

    def entries(self, after_seq: int = 0, limit: int | None = None) -> list[AuditEntry]:
        """Every entry after ``after_seq`` in full (here: the full rows)."""
        return self.rows(after_seq, limit)

    def row_values(self, after_seq: int = 0) -> list[AuditRowValues]:
        return [row_values(r) for r in self.db.q(ROWS_SQL, (after_seq,))]

    def digests(self, after_seq: int = 0, limit: int | None = None) -> list[AuditDigest]:
        return [AuditDigest(e["seq"], e["hash"], False) for e in self.entries(after_seq, limit)]

    def compact(self, digests: Sequence[tuple[int, str]]) -> int:
        """Nothing: this dialect's copy is the chain's only one, kept in full."""
        return 0

    def count(self) -> int:
        """Entries in the chain (an upgraded 1.0.2 store's earlier ones are in its sealed
        files only: counted from the record of them)."""
        r = self.db.q1("SELECT value FROM meta WHERE key=?", ("audit_legacy_tail",))
        tail = None if r is None else r[0]
        before = int(json.loads(str(tail))["seq"]) if tail else 0
        return self.db._scalar("SELECT COUNT(*) FROM audit_log") + before
