"""Schema upgrades of an existing SQLite store, run once in one transaction on open.

Version 2 makes the namespace first-class: ``ns_owner`` / ``ns_project`` columns on
episodes and tombstones (and the namespace as a word of the word index, which is rebuilt) (filled from the ``_anneal_ns`` metadata stamp that scoped views
of version 1 wrote, which is then removed), ``ns_key`` on wraps, pattern history and
drift probes, one open wrap per namespace, and the item collections table.

Version 3 rebuilds the trigram index with ``detail='none'`` (row ids per trigram, no
positions: a third of the disk); phrase search intersects the trigrams and checks the
substring on the row itself.

Version 5 feeds the word index through a view that spells out ß, æ, ø, ł, ... as
PostgreSQL's unaccent does (text.LETTER_SPELLINGS): the index is rebuilt.

Version 4 adds ``audit_hashes``, where the audit chain's entries are kept as their
hashes once the JSONL files hold them (see :mod:`.sqlite_audit`). The rows already there
stay in full; the next mirror compacts those the files are found to hold.

Version 6 adds ``episode_vectors`` (see :mod:`.vectors`): an embedder's vectors by
episode, model id and dimension, removed with their episode (``ON DELETE CASCADE``).
Existing episodes get theirs when an embedder first catches up.
"""

from __future__ import annotations

from typing import Any

from .sqlite_conn import RawConnection

#: the SQL of the episodes' generated ns_tag column (the schema and the migration that adds it)
NS_TAG_SQL = ("CASE WHEN ns_owner IS NULL THEN '' WHEN ns_project IS NULL THEN "
              "'u' || hex(ns_owner) ELSE 'p' || hex(ns_owner || char(31) || ns_project) END")

_STAMP = "$._anneal_ns"


def _columns(conn: Any, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _to_v2(conn: Any, schema: list[str]) -> None:
    for table, cols in (("episodes", ("ns_owner", "ns_project")),
                        ("tombstones", ("ns_owner", "ns_project")),
                        ("drift_probes", ("ns_key",)), ("wraps", ("ns_key",))):
        have = _columns(conn, table)
        for col in cols:
            if col not in have:
                default = " NOT NULL DEFAULT ''" if col == "ns_key" else ""
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {col} TEXT{default}")
    if "ns_key" not in _columns(conn, "pattern_history"):
        conn.execute("ALTER TABLE pattern_history RENAME TO pattern_history_v1")
        stmt = next(s for s in schema if "CREATE TABLE IF NOT EXISTS pattern_history" in s)
        conn.execute(stmt)
        conn.execute("INSERT INTO pattern_history(ns_key, name, level, max_level_reached, "
                     "first_seen_at, last_seen_at, last_saved_at, explanations, grounding) "
                     "SELECT '', name, level, max_level_reached, first_seen_at, last_seen_at, "
                     "last_saved_at, explanations, grounding FROM pattern_history_v1")
        conn.execute("DROP TABLE pattern_history_v1")
    # version 1's scoped views stamped the namespace into the metadata JSON
    conn.execute(
        f"UPDATE episodes SET ns_owner = json_extract(metadata, '{_STAMP}.owner'), "
        f"ns_project = json_extract(metadata, '{_STAMP}.project'), "
        f"metadata = CASE WHEN json_remove(metadata, '{_STAMP}') = '{{}}' THEN NULL "
        f"ELSE json_remove(metadata, '{_STAMP}') END "
        f"WHERE metadata IS NOT NULL AND json_valid(metadata) "
        f"AND json_extract(metadata, '{_STAMP}.owner') IS NOT NULL")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "gov_episode_removed" in tables:
        conn.execute("UPDATE tombstones SET ns_owner = (SELECT r.ns_owner FROM "
                     "gov_episode_removed r WHERE r.id = tombstones.id), ns_project = (SELECT "
                     "r.ns_project FROM gov_episode_removed r WHERE r.id = tombstones.id) "
                     "WHERE id IN (SELECT id FROM gov_episode_removed)")
    if "ns_tag" not in _columns(conn, "episodes"):
        conn.execute(f"ALTER TABLE episodes ADD COLUMN ns_tag TEXT GENERATED ALWAYS AS "
                     f"({NS_TAG_SQL}) VIRTUAL")
    # the word index gains the namespace word: recreate it (and the triggers feeding it)
    _recreate_index(conn, schema, "episodes_words")


def _recreate_index(conn: Any, schema: list[str], table: str) -> None:
    """Drop ``table`` and the triggers feeding the indexes, recreate both from the
    current schema and rebuild ``table`` from the episodes."""
    for trig in ("episodes_ai", "episodes_ad", "episodes_au"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trig}")
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    for stmt in schema:  # new tables, indexes, the dropped index, triggers (IF NOT EXISTS)
        if stmt.lstrip().upper().startswith(("CREATE TABLE", "CREATE INDEX", "CREATE UNIQUE",
                                             "CREATE VIRTUAL", "CREATE TRIGGER", "CREATE VIEW")):
            conn.execute(stmt)
    conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")


def _to_v3(conn: Any, schema: list[str]) -> None:
    _recreate_index(conn, schema, "episodes_tri")


def _to_v4(conn: Any, schema: list[str]) -> None:
    stmt = next(s for s in schema if "CREATE TABLE IF NOT EXISTS audit_hashes" in s)
    conn.execute(stmt)  # IF NOT EXISTS: running it twice changes nothing


def _to_v5(conn: Any, schema: list[str]) -> None:
    # the word index reads the episodes through a view that spells out the letters
    # PostgreSQL's unaccent spells (ß -> ss, ø -> o, ...): one folding rule on both
    _recreate_index(conn, schema, "episodes_words")


def _to_v6(conn: Any, schema: list[str]) -> None:
    for stmt in schema:  # IF NOT EXISTS: running them twice changes nothing
        if "episode_vectors" in stmt:
            conn.execute(stmt)


_STEPS = {2: _to_v2, 3: _to_v3, 4: _to_v4, 5: _to_v5, 6: _to_v6}

#: indexes earlier builds made that no query uses, which every durable record still paid
#: for (an index entry and a page of the write-ahead log each): dropped on open, with no
#: new schema version, so an earlier build still opens the store (none of its queries
#: used them either). ``gov_ix_episode_ns`` indexed the namespace stamp inside the
#: metadata JSON, which no episode holds since the namespace has its own columns (schema 2).
UNUSED_INDEXES = ("gov_ix_episode_ns",)


def unused_indexes(conn: RawConnection) -> list[str]:
    """Which of :data:`UNUSED_INDEXES` this database still has (a read)."""
    marks = ",".join("?" * len(UNUSED_INDEXES))
    return [str(r[0]) for r in conn.execute(
        f"SELECT name FROM sqlite_master WHERE type='index' AND name IN ({marks})",
        UNUSED_INDEXES)]


def drop_indexes(conn: RawConnection, names: list[str]) -> None:
    """Drop these of :data:`UNUSED_INDEXES` (inside the caller's transaction)."""
    for name in names:
        if name in UNUSED_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {name}")


def upgrade(conn: Any, current: int, schema: list[str]) -> None:
    """Bring a store at schema ``current`` to the newest version (inside a transaction)."""
    for version in sorted(v for v in _STEPS if v > current):
        _STEPS[version](conn, schema)
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(version),))
