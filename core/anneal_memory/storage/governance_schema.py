"""The governance tables both dialects create, and what differs between the databases
(:class:`Dialect`). Below ``governance_sql`` (the queries and the SQLite dialect) and
``governance_pg`` (the PostgreSQL dialect), so neither imports the other for them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Reserved metadata key under which a scoped view stamps an episode's namespace.
NS_META_KEY = "_anneal_ns"

# The governance tables, shared by both dialects. {seq}: an auto-increasing key in
# commit order; {t}: text that sorts and compares byte-wise on both databases.
TABLES = """
CREATE TABLE IF NOT EXISTS gov_records (
    seq {seq},
    record_id {t} NOT NULL UNIQUE,
    memory_id {t} NOT NULL,
    ns_key {t} NOT NULL,
    ns_owner {t} NOT NULL,
    ns_project {t},
    version INTEGER NOT NULL,
    payload_digest TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at {t} NOT NULL,
    UNIQUE (memory_id, version)
);
CREATE INDEX IF NOT EXISTS gov_ix_records_ns ON gov_records(ns_owner, ns_project, memory_id);
CREATE TABLE IF NOT EXISTS gov_current (
    memory_id {t} PRIMARY KEY,
    ns_key {t} NOT NULL,
    ns_owner {t} NOT NULL,
    ns_project {t},
    record_id {t},
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS gov_ix_current_ns ON gov_current(ns_owner, ns_project, state);
CREATE TABLE IF NOT EXISTS gov_tombstones (
    memory_id {t} PRIMARY KEY,
    ns_key {t} NOT NULL,
    ns_owner {t} NOT NULL,
    ns_project {t},
    receipt_id {t} NOT NULL UNIQUE,
    request_key {t} UNIQUE,
    receipt TEXT NOT NULL,
    deleted_at {t} NOT NULL
);
CREATE TABLE IF NOT EXISTS gov_events (
    seq {seq},
    kind TEXT NOT NULL,
    memory_id {t} NOT NULL,
    ns_key {t} NOT NULL,
    ref {t} NOT NULL,
    at {t} NOT NULL
);
CREATE INDEX IF NOT EXISTS gov_ix_events_ns ON gov_events(ns_key, memory_id, seq);
CREATE TABLE IF NOT EXISTS gov_reviews (
    review_id {t} PRIMARY KEY,
    memory_id {t} NOT NULL,
    ns_key {t} NOT NULL,
    ns_owner {t} NOT NULL,
    ns_project {t},
    candidate TEXT NOT NULL,
    reason TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at {t} NOT NULL,
    decided_at {t},
    decided_by TEXT,
    record_id {t}
);
CREATE INDEX IF NOT EXISTS gov_ix_reviews_ns ON gov_reviews(ns_owner, ns_project, status);
CREATE TABLE IF NOT EXISTS gov_episode_removed (
    id {t} PRIMARY KEY,
    ns_owner {t} NOT NULL,
    ns_project {t}
)
"""


def table_statements(*, seq: str, text: str) -> list[str]:
    """The shared table DDL in one dialect, one statement per item."""
    script = TABLES.format(seq=seq, t=text)
    return [s.strip() for s in script.split(";") if s.strip()]


@dataclass(frozen=True)
class Dialect:
    """What differs between the databases; everything else in this module is shared."""

    name: str
    create_schema: Callable[[Any], None]  # inside the backend's write transaction
    has_schema: Callable[[Any], bool]
    # SQL expression for a field of the namespace stamped in an episode's metadata
    # (``field`` is ``owner`` or ``project``; ``p`` is ``""`` or a table alias + ``.``).
    ep_ns: Callable[[str, str], str]
