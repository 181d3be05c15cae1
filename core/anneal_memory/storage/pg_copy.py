"""Table-for-table copy between two backends (SQLite <-> PostgreSQL).

Both schemas use the same table and column names, so one list drives the copy. Episodes
go in their original order (row ids stay relative), wrap ids are kept (episodes point
at them), and the audit chain is copied entry for entry, so the destination's chain is
the source's chain.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import StoreError
from .base import Backend

TABLES: list[tuple[str, str, str]] = [  # (table, columns, order)
    ("meta", "key, value", "key"),
    ("episodes", "id, timestamp, type, content, source, session_id, metadata, trust, "
                 "state_key, wrap_id", "rowid"),
    ("supersessions", "old_id, new_id, kind, created_at", "old_id, new_id"),
    ("derivations", "episode_id, source_id, removed_trust", "episode_id, source_id"),
    ("tombstones", "id, type, timestamp, content_hash, removed_at, reason, trust", "id"),
    ("wraps", "id, started_at, completed_at, status, token, session_id, episode_ids, today, "
              "chars, episodes_compressed, metrics", "id"),
    ("pattern_history", "name, level, max_level_reached, first_seen_at, last_seen_at, "
                        "last_saved_at, explanations, grounding", "name"),
    ("drift_probes", "id, kind, pattern, min_level, fact, section, created_at, last_status, "
                     "last_detail, last_wrap_id", "id"),
    ("audit_log", "seq, ts, actor, event, data, prev_hash, hash", "seq"),
]
BLOBS = (".continuity.md", ".baton.json")
# Metadata that belongs to the destination database itself, not to the memory.
_OWN_META = {"schema_version", "application"}
BATCH = 2000


def _is_pg(backend: Backend) -> bool:
    return not backend.mirrors_audit_to_files


def counts(backend: Backend) -> dict[str, int]:
    return {t: int(backend.execute(f"SELECT COUNT(*) FROM {t}")[0][0])
            for t, _c, _o in TABLES if t != "meta"}


def copy_all(src: Backend, dst: Backend, progress: Callable[[str, int, int], None]) -> dict[str, int]:
    """Copy every table and blob of ``src`` into the empty store ``dst`` in one
    transaction; returns the rows copied per table."""
    if dst.count_episodes() or dst.audit_count() or dst.count_tombstones():
        raise StoreError("the destination store is not empty: migrate into a new store")
    done: dict[str, int] = {}
    with dst.transaction():
        for table, cols, order in TABLES:
            rows = [tuple(r) for r in src.execute(f"SELECT {cols} FROM {table} ORDER BY {order}")]
            if table == "meta":
                rows = [r for r in rows if r[0] not in _OWN_META]
                dst.execute("DELETE FROM meta WHERE key NOT IN (?, ?)", sorted(_OWN_META))
            marks = ", ".join(["?"] * len(cols.split(",")))
            sql = f"INSERT INTO {table} ({cols}) VALUES ({marks})"
            for i in range(0, len(rows), BATCH):
                dst.executemany(sql, rows[i:i + BATCH])
                progress(table, min(i + BATCH, len(rows)), len(rows))
            if not rows:
                progress(table, 0, 0)
            done[table] = len(rows)
        if _is_pg(dst):  # later wraps must number on from the copied ones
            dst.execute("SELECT setval(pg_get_serial_sequence('wraps', 'id'), "
                        "GREATEST((SELECT MAX(id) FROM wraps), 1))")
        for name in BLOBS:
            text = src.read_blob(name)
            if text is not None:
                dst.write_blob(name, text)
    return done
