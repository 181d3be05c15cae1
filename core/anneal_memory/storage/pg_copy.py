"""Table-for-table copy between two backends (SQLite <-> PostgreSQL).

Both schemas use the same table and column names, so one list drives the copy. Episodes
go in their original order (row ids stay relative), wrap ids are kept (episodes point
at them), and the audit chain is copied entry for entry, so the destination's chain is
the source's chain. A governed store's tables (records, the current projection,
tombstones with their receipts and request keys, events, the review queue, the
removed-episode trace) are created on the destination by the runtime's own dialect and
copied with their sequence numbers, so replay order and later numbering carry over.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import StoreError
from . import governance_sql as gov
from .base import Backend
from .roles import AuditChain, Meta

Table = tuple[str, str, str]  # (table, columns, order)

TABLES: list[Table] = [
    ("meta", "key, value", "key"),
    ("episodes", "id, timestamp, type, content, source, session_id, metadata, trust, "
                 "state_key, wrap_id, ns_owner, ns_project", "rowid"),
    ("supersessions", "old_id, new_id, kind, created_at", "old_id, new_id"),
    ("derivations", "episode_id, source_id, removed_trust", "episode_id, source_id"),
    ("tombstones", "id, type, timestamp, content_hash, removed_at, reason, trust, ns_owner, "
                   "ns_project", "id"),
    ("wraps", "id, started_at, completed_at, status, token, session_id, episode_ids, today, "
              "chars, episodes_compressed, metrics, ns_key", "id"),
    ("pattern_history", "ns_key, name, level, max_level_reached, first_seen_at, last_seen_at, "
                        "last_saved_at, explanations, grounding", "ns_key, name"),
    ("drift_probes", "id, kind, pattern, min_level, fact, section, created_at, last_status, "
                     "last_detail, last_wrap_id, ns_key", "id"),
    ("items", "ns_key, collection, key, value, metadata, created_at, updated_at", "seq"),
    ("audit_log", "seq, ts, actor, event, data, prev_hash, hash", "seq"),
]
# The governance tables of governance_schema.TABLES, every column (a test holds this list to
# the tables both dialects create).
GOV_TABLES: list[Table] = [
    ("gov_records", "seq, record_id, memory_id, ns_key, ns_owner, ns_project, version, "
                    "payload_digest, body, created_at", "seq"),
    ("gov_current", "memory_id, ns_key, ns_owner, ns_project, record_id, version, state, "
                    "hidden", "memory_id"),
    ("gov_tombstones", "memory_id, ns_key, ns_owner, ns_project, receipt_id, request_key, "
                       "receipt, deleted_at", "memory_id"),
    ("gov_events", "seq, kind, memory_id, ns_key, ref, at", "seq"),
    ("gov_reviews", "review_id, memory_id, ns_key, ns_owner, ns_project, candidate, reason, "
                    "status, created_at, decided_at, decided_by, record_id", "review_id"),
    ("gov_episode_removed", "id, ns_owner, ns_project", "id"),
]
# Columns PostgreSQL generates ALWAYS: copied values need OVERRIDING SYSTEM VALUE there,
# and the sequence moves past them afterwards.
_IDENTITY = {"gov_records": "seq", "gov_events": "seq"}
BLOBS = (".continuity.md", ".baton.json")
# A scoped view's continuity and baton: ".ns-<digest>.continuity.md" / ".baton.json".
_NS_BLOB = (".ns-", BLOBS)
# Metadata that belongs to the destination database itself, not to the memory.
_OWN_META = {"schema_version", "application"}
BATCH = 2000

Progress = Callable[[str, int, int], None]


def _is_pg(backend: Backend) -> bool:
    return not backend.mirrors_audit_to_files


def tables(governed: bool) -> list[Table]:
    """The tables a copy moves, in copy order."""
    return TABLES + GOV_TABLES if governed else list(TABLES)


def is_governed(backend: Backend) -> bool:
    """Whether the store holds the governed runtime's tables."""
    return gov.has_schema(backend)


def _count(backend: Backend, table: str) -> int:
    if table == "audit_log":  # SQLite keeps mirrored entries as hashes: count every entry
        return AuditChain(backend).audit_count()  # (with 1.0.2's part, whose record is in meta on both)
    return int(backend.execute(f"SELECT COUNT(*) FROM {table}")[0][0])


def _rows(src: Backend, name: str, cols: str, order: str) -> list[tuple[object, ...]]:
    if name == "audit_log" and not _is_pg(src):
        # SQLite keeps mirrored entries as their hashes: audit_entries reads their text back
        return [(e["seq"], e["ts"], e["actor"], e["event"],
                 json.dumps(e["data"], sort_keys=True, ensure_ascii=False), e["prev_hash"],
                 e["hash"]) for e in AuditChain(src).audit_entries()]
    return [tuple(r) for r in src.execute(f"SELECT {cols} FROM {name} ORDER BY {order}")]


def counts(backend: Backend, governed: bool = False) -> dict[str, int]:
    """Rows per copied table (``governed``: the governance tables too)."""
    return {t: _count(backend, t) for t, _c, _o in tables(governed) if t != "meta"}


def _check_empty(dst: Backend) -> None:
    taken = dst.count_episodes() or AuditChain(dst).audit_count() or _count(dst, "tombstones")
    if not taken and is_governed(dst):  # a runtime opened on it may have left its tables
        taken = any(_count(dst, t) for t, _c, _o in GOV_TABLES)
    if taken:
        raise StoreError("the destination store is not empty: migrate into a new store")


def _copy_table(src: Backend, dst: Backend, table: Table, progress: Progress) -> int:
    name, cols, order = table
    rows = _rows(src, name, cols, order)
    if name == "meta":
        rows = [r for r in rows if r[0] not in _OWN_META]
        dst.execute("DELETE FROM meta WHERE key NOT IN (?, ?)", sorted(_OWN_META))
    return insert_rows(dst, name, rows, progress)


def table_rows(src: Backend, name: str) -> list[list[object]]:
    """Every row of a copied table (TABLES / GOV_TABLES), every column, in copy order."""
    _n, cols, order = next(t for t in [*TABLES, *GOV_TABLES] if t[0] == name)
    return [list(r) for r in _rows(src, name, cols, order)]


def row_count(backend: Backend, name: str) -> int:
    return _count(backend, name)


def insert_rows(dst: Backend, name: str, rows: Sequence[Sequence[object]],
                progress: Progress | None = None) -> int:
    """Insert whole rows (every column of ``name`` in TABLES / GOV_TABLES order) into
    ``dst``, in batches; identity columns keep their values and their sequence moves on."""
    cols = next(c for t, c, _o in [*TABLES, *GOV_TABLES] if t == name)
    marks = ", ".join(["?"] * len(cols.split(",")))
    override = " OVERRIDING SYSTEM VALUE" if name in _IDENTITY and _is_pg(dst) else ""
    sql = f"INSERT INTO {name} ({cols}){override} VALUES ({marks})"
    for i in range(0, len(rows), BATCH):
        dst.executemany(sql, [tuple(r) for r in rows[i:i + BATCH]])
        if progress is not None:
            progress(name, min(i + BATCH, len(rows)), len(rows))
    if not rows:
        if progress is not None:
            progress(name, 0, 0)
    elif override:  # later rows must number on from the copied ones
        col = _IDENTITY[name]
        dst.execute(f"SELECT setval(pg_get_serial_sequence('{name}', '{col}'), "
                    f"(SELECT MAX({col}) FROM {name}))")
    if name == "wraps" and rows and _is_pg(dst):
        dst.execute("SELECT setval(pg_get_serial_sequence('wraps', 'id'), "
                    "GREATEST((SELECT MAX(id) FROM wraps), 1))")
    return len(rows)


def blob_names(src: Backend) -> list[str]:
    """The store's own blobs plus every scoped view's continuity and baton."""
    head, tail = _NS_BLOB
    if _is_pg(src):
        scoped = [r[0] for r in src.execute("SELECT name FROM blobs ORDER BY name")]
    else:
        db = Path(src.path)
        scoped = sorted(p.name[len(db.stem):] for p in db.parent.iterdir()
                        if p.name.startswith(db.stem + head))
    return [*BLOBS, *(n for n in scoped if n.startswith(head) and n.endswith(tail))]  # type: ignore[arg-type]


def _copy_blobs(src: Backend, dst: Backend, names: Sequence[str]) -> None:
    for name in names:
        text = Meta(src).read_blob(name)
        if text is not None:
            Meta(dst).write_blob(name, text)


def copy_all(src: Backend, dst: Backend, progress: Progress) -> dict[str, int]:
    """Copy every table and blob of ``src`` into the empty store ``dst`` in one
    transaction; returns the rows copied per table."""
    _check_empty(dst)
    governed = is_governed(src)
    done: dict[str, int] = {}
    with dst.transaction():
        for table in TABLES:
            done[table[0]] = _copy_table(src, dst, table, progress)
        if _is_pg(dst):  # later wraps must number on from the copied ones
            dst.execute("SELECT setval(pg_get_serial_sequence('wraps', 'id'), "
                        "GREATEST((SELECT MAX(id) FROM wraps), 1))")
        if governed:
            # The runtime's own DDL (tables, namespace index, delete trigger), inside
            # this transaction: a failed copy leaves no half-governed store behind.
            gov.dialect(dst).create_schema(dst)
            for table in GOV_TABLES:
                done[table[0]] = _copy_table(src, dst, table, progress)
        _copy_blobs(src, dst, blob_names(src))
    return done


class Tables:
    """One database's whole tables and blobs, for backup, restore and store migration:
    the only role that moves rows table by table (every other write goes through the
    rules of the role that owns the rows)."""

    def __init__(self, backend: Backend) -> None:
        self._b = backend

    def rows(self, name: str) -> list[list[object]]:
        return table_rows(self._b, name)

    def count(self, name: str) -> int:
        return row_count(self._b, name)

    def counts(self, governed: bool = False) -> dict[str, int]:
        return counts(self._b, governed)

    def insert(self, name: str, rows: Sequence[Sequence[object]],
               progress: Progress | None = None) -> int:
        return insert_rows(self._b, name, rows, progress)

    def blob_names(self) -> list[str]:
        return blob_names(self._b)

    def governed(self) -> bool:
        return is_governed(self._b)

    def create_governance_schema(self) -> None:
        """The governed runtime's tables, inside the caller's transaction."""
        gov.dialect(self._b).create_schema(self._b)

    def copy_into(self, dst: Tables, progress: Progress) -> dict[str, int]:
        """Copy everything into the empty database ``dst`` (see :func:`copy_all`)."""
        return copy_all(self._b, dst._b, progress)
