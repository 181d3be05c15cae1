"""SQL for the governed memory runtime and the namespace-scoped episode view.

The governance tables live in the store's own database (beside the episodes, in the
PostgreSQL store's own schema) and are created idempotently on first use. Every table
carries the namespace (``ns_key`` for exact identity, ``ns_owner`` + ``ns_project`` for
the visibility rule) and every index leads with it. Writes run inside the caller's
``Store.transaction()`` unit of work, which serialises racing first writes across threads,
processes and hosts: SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's advisory write lock.

The queries here are written once, with ``?`` placeholders (both backends' ``q``
take them) and SQL both databases accept (``ON CONFLICT``, ``RETURNING``); a
:class:`Dialect` chosen by the backend's type supplies the rest: the schema and the
namespace stamp inside an episode's JSON metadata. The tables and the
:class:`Dialect` type are in ``governance_schema``; the SQLite dialect is below, the
PostgreSQL one is ``governance_pg``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import GovernanceError
from .base import Backend
from .common import SQLBackend
from .governance_schema import NS_META_KEY, Dialect, table_statements
from .rows import (
    GovernedCount,
    GovernedCurrentRow,
    GovernedEvent,
    GovernedTombstoneRow,
    GovernedVersion,
    GovernedVersionRow,
    GovernedVisibleRow,
    ReviewRow,
)
from .scoped import ScopedBackend
from .sqlite import SQLiteBackend

#: what the governed tables are reached through: a backend, or a namespace's view of one
GovBackend = Backend | ScopedBackend


# ---------------------------------------------------------------------- SQLite dialect
def _sqlite_ep_ns(field: str, p: str) -> str:
    return f"json_extract({p}metadata, '$.{NS_META_KEY}.{field}')"


_SQLITE_EPISODE_DDL = [
    # (no index on the metadata stamp: no query reads episodes by it since the namespace
    # has its own columns, and every record paid for it: see sqlite_migrate.UNUSED_INDEXES)
    # Namespaced episodes deleted from the Store keep a trace, so a scoped view can
    # count and list its own tombstones (the tombstone rows carry no namespace).
    f"""CREATE TRIGGER IF NOT EXISTS gov_episode_ad AFTER DELETE ON episodes
WHEN {_sqlite_ep_ns('owner', 'old.')} IS NOT NULL BEGIN
    INSERT OR IGNORE INTO gov_episode_removed(id, ns_owner, ns_project) VALUES (
        old.id, {_sqlite_ep_ns('owner', 'old.')}, {_sqlite_ep_ns('project', 'old.')});
END""",
]


def _sqlite_create(b: SQLiteBackend) -> None:
    for stmt in table_statements(seq="INTEGER PRIMARY KEY AUTOINCREMENT", text="TEXT"):
        b.q(stmt)
    for stmt in _SQLITE_EPISODE_DDL:
        b.q(stmt)


def _sqlite_has_schema(b: SQLiteBackend) -> bool:
    return b.q1("SELECT 1 FROM sqlite_master WHERE name='gov_records'") is not None


SQLITE = Dialect("sqlite", _sqlite_create, _sqlite_has_schema, _sqlite_ep_ns)


def dialect(backend: GovBackend) -> Dialect:
    """The dialect of a backend (or of the backend under a scoped view)."""
    inner = backend.inner if isinstance(backend, ScopedBackend) else backend
    if isinstance(inner, SQLiteBackend):
        return SQLITE
    # Only a loaded postgres module can have made this backend; never import psycopg here.
    pg = sys.modules.get(f"{__package__}.postgres")
    if pg is not None and isinstance(inner, pg.PostgresBackend):
        from .governance_pg import POSTGRES

        return POSTGRES
    raise GovernanceError(
        f"governed memory and scoped views need the SQLite or PostgreSQL backend; this "
        f"store uses {type(inner).__name__}: open it with Store(path) or "
        "Store('postgresql://...')")


def ensure_schema(backend: GovBackend) -> None:
    """Create the governance tables if this database does not have them yet."""
    d = dialect(backend)
    if getattr(backend, "_gov_schema_ready", False):
        return
    if backend.read_only:
        if not d.has_schema(backend):
            raise GovernanceError(
                f"the store at {backend.path} holds no governed memory yet, and it was "
                "opened read_only: open it once without read_only (MemoryRuntime or a "
                "scoped view creates the governance tables)")
        return
    with backend.transaction():
        d.create_schema(backend)
    if isinstance(backend, (SQLBackend, ScopedBackend)):  # dialect() let only these through
        backend._gov_schema_ready = True


def has_schema(backend: GovBackend) -> bool:
    return dialect(backend).has_schema(backend)


def _visible(alias: str = "") -> str:
    """The namespace visibility rule: same owner; user-level rows (no project) or the
    reader's own project."""
    p = f"{alias}." if alias else ""
    return f"{p}ns_owner = ? AND ({p}ns_project IS NULL OR {p}ns_project = ?)"


def _dumps(data: object) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


# ---------------------------------------------------------------------- helpers
FORGOTTEN_FIELDS = ("content", "subject", "source_id", "candidate_id")


def _said(value: object) -> bool:
    return value is not None and not (isinstance(value, dict) and not any(value.values()))


def _blank(data: dict[str, object]) -> None:
    data.update(dict.fromkeys(FORGOTTEN_FIELDS))
    src = data.get("source")
    if isinstance(src, dict):
        data["source"] = dict.fromkeys(src)


_REVIEW_COLS = ("review_id", "memory_id", "ns_key", "candidate", "reason", "status", "created_at",
                "decided_at", "decided_by", "record_id")


def _object(text: str, what: str) -> dict[str, object]:
    """A stored JSON object (a record's body, a receipt, a candidate), checked to be one."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise GovernanceError(f"a stored {what} is not a JSON object: the governance tables "
                              "were changed outside anneal-memory")
    return value


def _review(r: Sequence[Any]) -> ReviewRow:
    return ReviewRow(r[0], r[1], r[2], _object(r[3], "review candidate"), *r[4:])


class GovernanceRepo:
    """The governed runtime's tables of one database: immutable record versions, the
    current projection, tombstones with their receipts, events and the review queue.
    Writes run inside the caller's unit of work (``Store.transaction()``)."""

    def __init__(self, backend: GovBackend) -> None:
        self._b = backend

    def has_schema(self) -> bool:
        return has_schema(self._b)

    def ensure_schema(self) -> None:
        """Create the governance tables if this database does not have them yet."""
        ensure_schema(self._b)

    # -- records
    def insert_record(self, *, record_id: str, memory_id: str, ns_key: str,
                      ns_owner: str, ns_project: str | None, version: int, payload_digest: str,
                      body: Mapping[str, object], created_at: str) -> bool:
        """Insert one immutable version; False when (memory_id, version) is already taken."""
        b = self._b
        # DO NOTHING rather than catching the violation: on PostgreSQL a failed statement
        # would abort the whole write transaction.
        got = b.q("INSERT INTO gov_records(record_id, memory_id, ns_key, ns_owner, ns_project, "
                  "version, payload_digest, body, created_at) VALUES (?,?,?,?,?,?,?,?,?) "
                  "ON CONFLICT DO NOTHING RETURNING seq",
                  (record_id, memory_id, ns_key, ns_owner, ns_project, version, payload_digest,
                   _dumps(body), created_at))
        if not got:
            return False
        b.q("INSERT INTO gov_events(kind, memory_id, ns_key, ref, at) VALUES ('record',?,?,?,?)",
            (memory_id, ns_key, record_id, created_at))
        return True

    def record_by_id(self, record_id: str) -> GovernedVersion | None:
        """(payload_digest, body) of one version, or None."""
        b = self._b
        r = b.q1("SELECT payload_digest, body FROM gov_records WHERE record_id=?", (record_id,))
        return None if r is None else GovernedVersion(r[0], json.loads(r[1]))

    def versions(self, memory_id: str) -> list[GovernedVersionRow]:
        """Every version of a memory, oldest first."""
        b = self._b
        return [GovernedVersionRow(r[0], int(r[1]), _object(r[2], "record body")) for r in b.q(
            "SELECT record_id, version, body FROM gov_records WHERE memory_id=? "
            "ORDER BY version", (memory_id,))]

    def scrub_versions(self, memory_id: str) -> None:
        """Blank what a forgotten memory said in every version: its content, subject and
        the source and candidate it came from (ids and digests stay)."""
        b = self._b
        for rid, body in b.q("SELECT record_id, body FROM gov_records WHERE memory_id=?",
                             (memory_id,)):
            data = json.loads(body)
            _blank(data)
            b.q("UPDATE gov_records SET body=? WHERE record_id=?", (_dumps(data), rid))

    # -- projection
    def current(self, memory_id: str) -> GovernedCurrentRow | None:
        b = self._b
        r = b.q1("SELECT record_id, version, state, hidden FROM gov_current WHERE memory_id=?",
                 (memory_id,))
        if r is None:
            return None
        return GovernedCurrentRow(r[0], r[1], r[2], bool(r[3]))

    def set_current(self, *, memory_id: str, ns_key: str, ns_owner: str,
                    ns_project: str | None, record_id: str | None, version: int, state: str) -> None:
        b = self._b
        b.q("INSERT INTO gov_current(memory_id, ns_key, ns_owner, ns_project, record_id, version, "
            "state) VALUES (?,?,?,?,?,?,?) ON CONFLICT(memory_id) DO UPDATE SET "
            "record_id=excluded.record_id, version=excluded.version, state=excluded.state",
            (memory_id, ns_key, ns_owner, ns_project, record_id, version, state))

    def set_hidden(self, memory_id: str, hidden: bool) -> int:
        b = self._b
        return len(b.q("UPDATE gov_current SET hidden=? WHERE memory_id=? RETURNING memory_id",
                       (1 if hidden else 0, memory_id)))

    def visible_current(self, owner: str, project: str | None) -> list[GovernedVisibleRow]:
        """Bodies of the active current versions the reader's namespace may see."""
        b = self._b
        rows = b.q("SELECT r.body, c.hidden FROM gov_current c JOIN gov_records r "
                   f"ON r.record_id = c.record_id WHERE c.state='active' AND {_visible('c')} "
                   "ORDER BY c.memory_id", (owner, project))
        return [GovernedVisibleRow(_object(body, "record body"), bool(h)) for body, h in rows]

    def all_current_unscoped(self) -> list[GovernedVersionRow]:
        """Every active current version of every namespace: for the evaluation's unscoped
        baseline and for operators, never for an agent's recall."""
        b = self._b
        return [GovernedVersionRow(r[0], int(r[1]), _object(r[2], "record body")) for r in b.q(
            "SELECT r.record_id, r.version, r.body FROM gov_current c JOIN gov_records r "
            "ON r.record_id = c.record_id WHERE c.state='active' ORDER BY c.memory_id")]

    def events(self) -> list[GovernedEvent]:
        """(kind, memory_id, ns_key, ref) in commit order: the replay source."""
        b = self._b
        return [GovernedEvent(*r) for r in b.q(
            "SELECT kind, memory_id, ns_key, ref FROM gov_events ORDER BY seq")]

    def clear_projection(self) -> dict[str, bool]:
        """Drop the projection (keeping the hidden flags to restore) before a replay."""
        b = self._b
        hidden = {r[0]: True for r in b.q("SELECT memory_id FROM gov_current WHERE hidden=1")}
        b.q("DELETE FROM gov_current")
        return hidden

    # -- tombstones
    def tombstone(self, memory_id: str) -> GovernedTombstoneRow | None:
        b = self._b
        r = b.q1("SELECT memory_id, receipt FROM gov_tombstones WHERE memory_id=?", (memory_id,))
        return None if r is None else GovernedTombstoneRow(r[0], _object(r[1], "receipt"))

    def tombstone_by_request(self, request_key: str) -> GovernedTombstoneRow | None:
        b = self._b
        r = b.q1("SELECT memory_id, receipt FROM gov_tombstones WHERE request_key=?",
                 (request_key,))
        return None if r is None else GovernedTombstoneRow(r[0], _object(r[1], "receipt"))

    def insert_tombstone(self, *, memory_id: str, ns_key: str, ns_owner: str,
                         ns_project: str | None, receipt: Mapping[str, object],
                         request_key: str | None) -> None:
        b = self._b
        b.q("INSERT INTO gov_tombstones(memory_id, ns_key, ns_owner, ns_project, receipt_id, "
            "request_key, receipt, deleted_at) VALUES (?,?,?,?,?,?,?,?)",
            (memory_id, ns_key, ns_owner, ns_project, receipt["receipt_id"], request_key,
             json.dumps(receipt, sort_keys=True), receipt["deleted_at"]))
        b.q("INSERT INTO gov_events(kind, memory_id, ns_key, ref, at) VALUES ('tombstone',?,?,?,?)",
            (memory_id, ns_key, receipt["receipt_id"], receipt["deleted_at"]))

    # -- reviews
    def insert_review(self, *, review_id: str, memory_id: str, ns_key: str,
                      ns_owner: str, ns_project: str | None, candidate: Mapping[str, object], reason: str,
                      created_at: str) -> bool:
        """Queue one item; False when this review id is already queued (a retry)."""
        b = self._b
        return bool(b.q(
            "INSERT INTO gov_reviews(review_id, memory_id, ns_key, ns_owner, ns_project, "
            "candidate, reason, status, created_at) VALUES (?,?,?,?,?,?,?, 'pending', ?) "
            "ON CONFLICT DO NOTHING RETURNING review_id",
            (review_id, memory_id, ns_key, ns_owner, ns_project,
             json.dumps(candidate, sort_keys=True), reason, created_at)))

    def review(self, review_id: str) -> ReviewRow | None:
        b = self._b
        r = b.q1(f"SELECT {', '.join(_REVIEW_COLS)} FROM gov_reviews WHERE review_id=?",
                 (review_id,))
        return None if r is None else _review(r)

    def reviews(self, owner: str, project: str | None,
                status: str | None = "pending") -> list[ReviewRow]:
        b = self._b
        sql = f"SELECT {', '.join(_REVIEW_COLS)} FROM gov_reviews WHERE {_visible()}"
        params: list[object] = [owner, project]
        if status is not None:
            sql += " AND status=?"
            params.append(status)
        return [_review(r) for r in b.q(sql + " ORDER BY created_at, review_id", params)]

    def all_reviews(self, status: str | None = "pending") -> list[ReviewRow]:
        """Review items of every namespace: the operator's queue, never an agent's."""
        b = self._b
        sql = f"SELECT {', '.join(_REVIEW_COLS)} FROM gov_reviews"
        params: list[object] = []
        if status is not None:
            sql += " WHERE status=?"
            params.append(status)
        return [_review(r) for r in b.q(sql + " ORDER BY created_at, review_id", params)]

    def namespace_counts(self) -> list[GovernedCount]:
        """(owner, project, active governed records, pending reviews) per namespace."""
        b = self._b
        counts: dict[tuple[str, str | None], list[int]] = {}
        for i, sql in enumerate((
                "SELECT ns_owner, ns_project, COUNT(*) FROM gov_current WHERE state='active' "
                "GROUP BY ns_owner, ns_project",
                "SELECT ns_owner, ns_project, COUNT(*) FROM gov_reviews WHERE status='pending' "
                "GROUP BY ns_owner, ns_project")):
            for owner, project, n in b.q(sql):
                counts.setdefault((owner, project), [0, 0])[i] = int(n)
        return [GovernedCount(o, p, r, q) for (o, p), (r, q) in counts.items()]

    def cancel_reviews(self, memory_id: str, *, decided_at: str) -> int:
        """Close every pending review of a forgotten memory so no approval can revive it."""
        b = self._b
        return len(b.q(
            "UPDATE gov_reviews SET status='cancelled', decided_at=?, decided_by='forget', "
            "candidate='{}' WHERE memory_id=? AND status='pending' RETURNING review_id",
            (decided_at, memory_id)))

    def scrub_reviews(self, memory_id: str) -> int:
        """Blank the candidate text of every review item of a forgotten memory, decided
        ones too (an approved or rejected item still held the text it was shown)."""
        b = self._b
        n = 0
        for rid, cand in b.q("SELECT review_id, candidate FROM gov_reviews WHERE memory_id=?",
                             (memory_id,)):
            data = json.loads(cand)
            if any(_said(data.get(f)) for f in (*FORGOTTEN_FIELDS, "source")):
                _blank(data)
                b.q("UPDATE gov_reviews SET candidate=? WHERE review_id=?",
                    (json.dumps(data, sort_keys=True), rid))
                n += 1
        return n

    def decide_review(self, review_id: str, *, status: str, decided_at: str,
                      decided_by: str, record_id: str | None) -> int:
        b = self._b
        return len(b.q(
            "UPDATE gov_reviews SET status=?, decided_at=?, decided_by=?, record_id=? "
            "WHERE review_id=? AND status='pending' RETURNING review_id",
            (status, decided_at, decided_by, record_id, review_id)))

    def erase_owner(self, owner: str, project: str | None = None) -> int:
        """Remove every governed row of ``owner``'s namespaces (records, their history and
        projection, reviews, tombstone receipts), or of its one ``project``: erasing a user
        leaves no governed trace. Returns how many record versions went."""
        b = self._b
        if not has_schema(b):
            return 0
        cond, params = ("ns_owner=?", [owner]) if project is None else (
            "ns_owner=? AND ns_project=?", [owner, project])
        for t in ("gov_records", "gov_current", "gov_tombstones", "gov_reviews"):
            b.q(f"DELETE FROM gov_events WHERE memory_id IN (SELECT memory_id FROM {t} "
                f"WHERE {cond})", params)
        n = len(b.q(f"DELETE FROM gov_records WHERE {cond} RETURNING record_id", params))
        for t in ("gov_current", "gov_tombstones", "gov_reviews", "gov_episode_removed"):
            b.q(f"DELETE FROM {t} WHERE {cond}", params)
        return n
