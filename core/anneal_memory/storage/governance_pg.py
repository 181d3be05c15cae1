"""The PostgreSQL dialect of the governance SQL (the queries are in ``governance_sql``, the tables in ``governance_schema``).

The tables are created in the store's own schema (the connection's search path), under
the schema advisory lock and inside the backend's write transaction, so hosts opening a
governed store at once create them once. The namespace stamp of an episode is read from
its JSON metadata with ``->>`` and served by an expression index; a trigger records
deleted namespaced episodes, as the SQLite trigger does.
"""

from __future__ import annotations

from .governance_schema import NS_META_KEY, Dialect, table_statements
from .pg_schema import SCHEMA_LOCK
from .postgres import PostgresBackend

# Byte-wise comparison and order, like SQLite and the rest of the PostgreSQL schema.
_TEXT = 'TEXT COLLATE "C"'
_SEQ = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"


def _ep_ns(field: str, p: str) -> str:
    # ``metadata`` is JSON text; the cast is immutable, so an index can serve it.
    return f"(({p}metadata)::jsonb -> '{NS_META_KEY}' ->> '{field}')"


_EPISODE_DDL = [
    f"CREATE INDEX IF NOT EXISTS gov_ix_episode_ns ON episodes ({_ep_ns('owner', '')})",
    # SET search_path FROM CURRENT pins the function to the store's schema, whatever
    # the search path of the session that later deletes an episode.
    f"""CREATE OR REPLACE FUNCTION gov_episode_removed_row() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO gov_episode_removed(id, ns_owner, ns_project)
    VALUES (OLD.id, {_ep_ns('owner', 'OLD.')}, {_ep_ns('project', 'OLD.')})
    ON CONFLICT DO NOTHING;
    RETURN OLD;
END $$""",
]

_TRIGGER = (f"CREATE TRIGGER gov_episode_ad AFTER DELETE ON episodes FOR EACH ROW "
            f"WHEN ({_ep_ns('owner', 'OLD.')} IS NOT NULL) "
            "EXECUTE PROCEDURE gov_episode_removed_row()")


def _create(b: PostgresBackend) -> None:
    # The caller's write transaction holds the write lock already, so the lock order is
    # always write lock, then schema lock (the store's own migrations take only the
    # latter): no deadlock with a host that is migrating.
    b.q("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
    for stmt in table_statements(seq=_SEQ, text=_TEXT) + _EPISODE_DDL:
        b.q(stmt)
    # CREATE TRIGGER has no IF NOT EXISTS before PostgreSQL 14.
    if b.q1("SELECT 1 FROM pg_trigger WHERE tgname = 'gov_episode_ad' "
            "AND tgrelid = 'episodes'::regclass") is None:
        b.q(_TRIGGER)


def _has_schema(b: PostgresBackend) -> bool:
    r = b.q1("SELECT to_regclass('gov_records') IS NOT NULL")
    return bool(r and r[0])


POSTGRES = Dialect("postgres", _create, _has_schema, _ep_ns)
