"""The PostgreSQL backend: one memory shared by many agents on many hosts.

Same methods and semantics as the SQLite backend. A write transaction takes one
transaction-scoped advisory lock before its first statement, so writers are
serialized across processes and hosts exactly as SQLite's ``BEGIN IMMEDIATE``
serializes them: every check-then-write (the audit tip, a free episode id, the one
open wrap) sees the latest committed state. Reads run in a repeatable-read snapshot.
Connections come from a pool shared by every Store of the process on the same URL.
Needs the ``postgres`` extra (psycopg 3, psycopg-pool).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..clock import now_iso
from ..errors import ReadOnlyStoreError, StoreError
from . import pg_schema
from .base import Backend, EpisodeRow, SearchFilters
from .pg_location import redact

try:
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise StoreError("the PostgreSQL backend needs the postgres extra: "
                     "pip install 'anneal-memory[postgres]'") from exc

_EP_COLS = ("rowid, id, timestamp, type, content, source, session_id, metadata, trust, "
            "state_key, wrap_id")
_E_COLS = ", ".join(f"e.{c.strip()}" for c in _EP_COLS.split(","))
_TS = "to_tsvector('anneal_words'::regconfig, %s)"

_pools: dict[tuple[str, bool], list[Any]] = {}  # (dsn, read_only) -> [pool, users]
_pools_lock = threading.Lock()


def _row(r: Sequence[Any]) -> EpisodeRow:
    return EpisodeRow(
        rowid=int(r[0]), id=r[1], timestamp=r[2], type=r[3], content=r[4], source=r[5],
        session_id=r[6], metadata=r[7], trust=r[8], state_key=r[9],
        wrap_id=None if r[10] is None else int(r[10]),
    )


def like_pattern(text: str) -> str:
    """``%text%`` for ILIKE with the pattern characters escaped: user text is matched
    literally, never as a wildcard."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _read_only_session(conn: Any) -> None:
    # A session setting, not the URL's ``options``: that would replace the user's own
    # (a search_path, for instance).
    conn.execute("SET default_transaction_read_only = on")


def _acquire_pool(dsn: str, read_only: bool, size: int, timeout: int) -> Any:
    with _pools_lock:
        entry = _pools.get((dsn, read_only))
        if entry is None or entry[0].closed:
            kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": timeout}
            pool = ConnectionPool(dsn, min_size=1, max_size=size, kwargs=kwargs, open=False,
                                  check=ConnectionPool.check_connection,
                                  configure=_read_only_session if read_only else None,
                                  name=f"anneal-memory {redact(dsn)}")
            pool.open(wait=True, timeout=timeout)
            entry = _pools[(dsn, read_only)] = [pool, 0]
        entry[1] += 1
        return entry[0]


def _release_pool(dsn: str, read_only: bool) -> None:
    with _pools_lock:
        entry = _pools.get((dsn, read_only))
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _pools[(dsn, read_only)]
            entry[0].close()


class PostgresBackend(Backend):
    """A Store's view of one PostgreSQL database (schema created on first connect)."""

    # The chain lives in audit_log, shared by every host; no per-host JSONL mirror.
    mirrors_audit_to_files = False

    def __init__(self, dsn: str, *, read_only: bool = False, pool_size: int = 4,
                 connect_timeout: int = 10) -> None:
        self.dsn = dsn
        self.path = redact(dsn)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._local = threading.local()
        conn = pg_schema.connect(dsn, timeout=connect_timeout)
        try:
            pg_schema.ensure_schema(conn, dsn, read_only=read_only)
        except psycopg.Error as exc:
            raise StoreError(f"cannot create the anneal-memory schema in {self.path}: "
                             f"{exc}".strip()) from None
        finally:
            conn.close()
        try:
            self._pool = _acquire_pool(dsn, read_only, pool_size, connect_timeout)
        except Exception as exc:
            raise pg_schema.connection_error(dsn, exc) from None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _release_pool(self.dsn, self.read_only)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def _conn(self) -> Any:
        return getattr(self._local, "conn", None)

    @property
    def _depth(self) -> int:
        return int(getattr(self._local, "depth", 0))

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextlib.contextmanager
    def _session(self, begin: str, write: bool) -> Iterator[None]:
        loc = self._local
        if self._depth:
            if write and not getattr(loc, "write", False):
                # a write inside a read snapshot: serialize it like any other writer
                self.q("SELECT pg_advisory_xact_lock(%s)", (pg_schema.WRITE_LOCK,))
                loc.write = True
            loc.depth += 1
            try:
                yield
            finally:
                loc.depth -= 1
            return
        if self._closed:
            raise StoreError(f"the store {self.path} is closed: open a new Store")
        with self._lock, self._pool.connection() as conn:
            conn.execute(begin)
            loc.conn, loc.depth, loc.write = conn, 1, write
            try:
                if write:
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (pg_schema.WRITE_LOCK,))
                yield
            except BaseException:
                loc.conn, loc.depth, loc.write = None, 0, False
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
                raise
            loc.conn, loc.depth, loc.write = None, 0, False
            try:
                conn.execute("COMMIT")
            except psycopg.OperationalError as exc:
                raise StoreError(f"the commit to {self.path} failed ({exc}); the write was "
                                 "not acknowledged: retry it") from None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if self.read_only:
            raise ReadOnlyStoreError(f"the store {self.path!r} was opened read_only: reopen it "
                                     "without read_only to write")
        with self._session("BEGIN ISOLATION LEVEL READ COMMITTED", write=True):
            yield

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._session("BEGIN ISOLATION LEVEL REPEATABLE READ", write=False):
            yield

    def q(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._run(sql, params, lambda cur: cur.fetchall() if cur.description else [])

    def q1(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._run(sql, params, lambda cur: cur.fetchone() if cur.description else None)

    def _count(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._run(sql, params, lambda cur: cur.rowcount)

    def _run(self, sql: str, params: Sequence[Any], fetch: Callable[[Any], Any]) -> Any:
        try:
            conn = self._conn
            if conn is not None:
                return fetch(conn.execute(sql, tuple(params)))
            if self._closed:
                raise StoreError(f"the store {self.path} is closed: open a new Store")
            with self._pool.connection() as c:
                return fetch(c.execute(sql, tuple(params)))
        except psycopg.OperationalError as exc:
            raise StoreError(f"the PostgreSQL store at {self.path} failed: {exc}".strip()
                             + " (check the server and retry)") from None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.q(sql, params)

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str) -> str | None:
        r = self.q1("SELECT value FROM meta WHERE key=%s", (key,))
        return None if r is None else r[0]

    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self.q("DELETE FROM meta WHERE key=%s", (key,))
        else:
            self.q("INSERT INTO meta(key, value) VALUES (%s, %s) "
                   "ON CONFLICT (key) DO UPDATE SET value=excluded.value", (key, value))

    def add_meta_int(self, key: str, delta: int) -> None:
        self.q("INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
               "SET value=(CAST(meta.value AS BIGINT) + %s)::text", (key, str(delta), delta))

    # ------------------------------------------------------------------ blobs
    def read_blob(self, name: str) -> str | None:
        r = self.q1("SELECT body FROM blobs WHERE name=%s", (name,))
        return None if r is None else str(r[0])

    def write_blob(self, name: str, text: str, *, lock: str | None = None) -> None:
        with self.transaction():
            self.q("INSERT INTO blobs(name, body, updated_at) VALUES (%s, %s, %s) "
                   "ON CONFLICT (name) DO UPDATE SET body=excluded.body, "
                   "updated_at=excluded.updated_at", (name, text, now_iso()))

    def update_blob(self, name: str, fn: Callable[[str | None], str | None], *,
                    lock: str | None = None) -> str | None:
        """Read-modify-write under the write lock; ``fn`` returning None leaves it as is."""
        with self.transaction():
            new = fn(self.read_blob(name))
            if new is not None:
                self.write_blob(name, new)
            return new

    # ------------------------------------------------------------------ episodes
    def insert_episode(self, row: EpisodeRow) -> None:
        self.q("INSERT INTO episodes(id, timestamp, type, content, source, session_id, "
               "metadata, trust, state_key, wrap_id) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
               (row.id, row.timestamp, row.type, row.content, row.source, row.session_id,
                row.metadata, row.trust, row.state_key, row.wrap_id))

    def id_taken(self, episode_id: str) -> bool:
        return bool(self.q1("SELECT 1 FROM episodes WHERE id=%s UNION ALL "
                            "SELECT 1 FROM tombstones WHERE id=%s", (episode_id, episode_id)))

    def get_episodes(self, ids: Sequence[str]) -> dict[str, EpisodeRow]:
        rows = self.q(f"SELECT {_EP_COLS} FROM episodes WHERE id = ANY(%s)",
                      (list(dict.fromkeys(ids)),))
        return {r[1]: _row(r) for r in rows}

    def all_episodes(self, *, order: str = "timestamp ASC, rowid ASC") -> Iterator[EpisodeRow]:
        for r in self.q(f"SELECT {_EP_COLS} FROM episodes ORDER BY {order}"):
            yield _row(r)

    def unwrapped_episodes(self) -> list[EpisodeRow]:
        return [_row(r) for r in self.q(f"SELECT {_EP_COLS} FROM episodes WHERE wrap_id IS NULL "
                                        "ORDER BY timestamp ASC, rowid ASC")]

    def count_unwrapped(self) -> int:
        return self._scalar("SELECT COUNT(*) FROM episodes WHERE wrap_id IS NULL")

    def mark_wrapped(self, ids: Sequence[str], wrap_id: int) -> None:
        self.q("UPDATE episodes SET wrap_id=%s WHERE id = ANY(%s) AND wrap_id IS NULL",
               (wrap_id, list(ids)))

    def update_episode(self, episode_id: str, **fields: Any) -> None:
        cols = ", ".join(f"{k}=%s" for k in fields)
        self.q(f"UPDATE episodes SET {cols} WHERE id=%s", [*fields.values(), episode_id])

    def delete_episode_rows(self, ids: Sequence[str]) -> int:
        return int(self._count("DELETE FROM episodes WHERE id = ANY(%s)", (list(ids),)))

    def scrub_indexes(self) -> None:
        """Nothing inside the transaction: ``checkpoint`` vacuums the deleted rows and
        their index entries away once it has committed."""

    def checkpoint(self) -> None:
        with contextlib.suppress(psycopg.Error), self._pool.connection() as c:
            c.execute("VACUUM episodes")

    def ids_older_than(self, cutoff: str) -> list[str]:
        return [r[0] for r in self.q("SELECT id FROM episodes WHERE timestamp < %s", (cutoff,))]

    def counts_by_type(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.q("SELECT type, COUNT(*) FROM episodes GROUP BY type")}

    def counts_by_trust(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self.q("SELECT trust, COUNT(*) FROM episodes GROUP BY trust")}

    def count_episodes(self) -> int:
        return self._scalar("SELECT COUNT(*) FROM episodes")

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> int:
        r = self.q1(sql, params)
        return int(r[0] or 0) if r else 0

    def state_key_holders(self, key: str | None = None) -> list[EpisodeRow]:
        if key is None:
            rows = self.q(f"SELECT {_EP_COLS} FROM episodes WHERE state_key IS NOT NULL "
                          "ORDER BY state_key, timestamp ASC, rowid ASC")
        else:
            rows = self.q(f"SELECT {_EP_COLS} FROM episodes WHERE state_key=%s "
                          "ORDER BY timestamp ASC, rowid ASC", (key,))
        return [_row(r) for r in rows]

    # ------------------------------------------------------------------ search
    def _filter_sql(self, f: SearchFilters, alias: str = "e") -> tuple[str, list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        for cond, value in ((f"{alias}.timestamp >= %s", f.since),
                            (f"{alias}.timestamp <= %s", f.until),
                            (f"{alias}.type = %s", f.episode_type),
                            (f"{alias}.source = %s", f.source)):
            if value:
                where.append(cond)
                params.append(value)
        if f.only_unwrapped:
            where.append(f"{alias}.wrap_id IS NULL")
        if f.ids is not None:
            where.append(f"{alias}.id = ANY(%s)")
            params.append(list(f.ids))
        if not f.include_superseded:
            where.append(f"NOT EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = {alias}.id)")
        return (" AND ".join(where) or "TRUE"), params

    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> tuple[list[tuple[EpisodeRow, float]], int]:
        """Filtered episodes, newest first or by rank, plus the total match count.

        ``phrase``: case-insensitive substring (ILIKE over the trigram index, any script).
        ``words``: any of these words (stemmed), ranked by ``ts_rank_cd``; each word is
        a bound parameter of ``phraseto_tsquery``, so no query syntax reaches the server.
        """
        where, params = self._filter_sql(filters)
        if phrase is not None:
            src = "FROM episodes e WHERE e.content ILIKE %s AND "
            mparams: list[Any] = [like_pattern(phrase)]
            score, order_sql = "1.0", "e.timestamp DESC, e.rowid DESC"
        elif words:
            tsq = " || ".join(["phraseto_tsquery('anneal_words'::regconfig, %s)"] * len(words))
            src = f"FROM episodes e, (SELECT {tsq} AS q) tq WHERE e.content_tsv @@ tq.q AND "
            mparams = list(words)
            score = "ts_rank_cd(e.content_tsv, tq.q, 1)"
            order_sql = f"{score} DESC, e.timestamp DESC, e.rowid DESC"
        else:
            src, mparams, score = "FROM episodes e WHERE ", [], "0.0"
            order_sql = ("e.timestamp DESC, e.rowid DESC" if order == "recent"
                         else "e.timestamp ASC, e.rowid ASC")
        total = self._scalar(f"SELECT COUNT(*) {src}{where}", [*mparams, *params])
        rows = self.q(f"SELECT {_E_COLS}, {score} {src}{where} ORDER BY {order_sql} "
                      "LIMIT %s OFFSET %s", [*mparams, *params, int(limit), int(offset)])
        return [(_row(r[:11]), float(r[11] or 0.0)) for r in rows], total

    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]:
        """Episodes at these row ids that pass ``filters``."""
        where, params = self._filter_sql(filters)
        rows = self.q(f"SELECT {_E_COLS} FROM episodes e WHERE e.rowid = ANY(%s) AND {where}",
                      [list(rowids), *params])
        return {int(r[0]): _row(r) for r in rows}

    # ------------------------------------------------------------------ supersession
    def add_supersession(self, old_id: str, new_id: str, kind: str, created_at: str) -> None:
        self.q("INSERT INTO supersessions(old_id, new_id, kind, created_at) VALUES (%s,%s,%s,%s) "
               "ON CONFLICT (old_id, new_id) DO UPDATE SET kind=excluded.kind, "
               "created_at=excluded.created_at", (old_id, new_id, kind, created_at))

    def remove_supersession(self, old_id: str, new_id: str) -> int:
        return int(self._count("DELETE FROM supersessions WHERE old_id=%s AND new_id=%s",
                               (old_id, new_id)))

    def supersessions_of(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
        """old_id -> [(new_id, kind, created_at)] for the given old ids."""
        out: dict[str, list[tuple[str, str, str]]] = {}
        for o, n, k, c in self.q("SELECT old_id, new_id, kind, created_at FROM supersessions "
                                 "WHERE old_id = ANY(%s) ORDER BY created_at", (list(ids),)):
            out.setdefault(o, []).append((n, k, c))
        return out

    def superseded_by_new(self, new_id: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.q(
            "SELECT old_id, kind FROM supersessions WHERE new_id=%s", (new_id,))]

    def all_supersessions(self) -> list[tuple[str, str, str, str]]:
        return [tuple(r) for r in self.q(  # type: ignore[misc]
            "SELECT old_id, new_id, kind, created_at FROM supersessions ORDER BY created_at")]

    def count_superseded(self) -> int:
        return self._scalar("SELECT COUNT(DISTINCT old_id) FROM supersessions")

    def delete_supersessions_touching(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        return [tuple(r) for r in self.q(  # type: ignore[misc]
            "DELETE FROM supersessions WHERE old_id = ANY(%s) OR new_id = ANY(%s) "
            "RETURNING old_id, new_id, kind", (list(ids), list(ids)))]

    # ------------------------------------------------------------------ derivations
    def add_derivations(self, episode_id: str, sources: Sequence[str],
                        pinned_trust: str | None = None) -> None:
        for s in sources:
            self.q("INSERT INTO derivations(episode_id, source_id, removed_trust) "
                   "VALUES (%s,%s,%s) ON CONFLICT DO NOTHING", (episode_id, s, pinned_trust))

    def derivations_of(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str | None]]]:
        out: dict[str, list[tuple[str, str | None]]] = {}
        for e, s, t in self.q("SELECT episode_id, source_id, removed_trust FROM derivations "
                              "WHERE episode_id = ANY(%s)", (list(ids),)):
            out.setdefault(e, []).append((s, t))
        return out

    def mark_source_removed(self, source_id: str, trust: str) -> None:
        self.q("UPDATE derivations SET removed_trust=%s WHERE source_id=%s "
               "AND removed_trust IS NULL", (trust, source_id))

    def all_derivations(self) -> list[tuple[str, str, str | None]]:
        return [tuple(r) for r in self.q(  # type: ignore[misc]
            "SELECT episode_id, source_id, removed_trust FROM derivations")]

    # ------------------------------------------------------------------ tombstones
    def add_tombstone(self, episode_id: str, type_: str, timestamp: str, content_hash: str,
                      removed_at: str, reason: str, trust: str) -> None:
        self.q("INSERT INTO tombstones(id, type, timestamp, content_hash, removed_at, reason, "
               "trust) VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (id) DO UPDATE SET "
               "type=excluded.type, timestamp=excluded.timestamp, "
               "content_hash=excluded.content_hash, removed_at=excluded.removed_at, "
               "reason=excluded.reason, trust=excluded.trust",
               (episode_id, type_, timestamp, content_hash, removed_at, reason, trust))

    def tombstones(self, ids: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        sql = "SELECT id, type, timestamp, content_hash, removed_at, reason, trust FROM tombstones"
        rows = self.q(sql) if ids is None else self.q(sql + " WHERE id = ANY(%s)", (list(ids),))
        keys = ("id", "type", "timestamp", "content_hash", "removed_at", "reason", "trust")
        return {r[0]: dict(zip(keys, r)) for r in rows}

    def count_tombstones(self) -> int:
        return self._scalar("SELECT COUNT(*) FROM tombstones")

    # ------------------------------------------------------------------ wraps
    def open_wrap(self) -> dict[str, Any] | None:
        r = self.q1("SELECT id, started_at, token, session_id, episode_ids, today FROM wraps "
                    "WHERE status='open' ORDER BY id DESC LIMIT 1")
        if r is None:
            return None
        return {"id": int(r[0]), "started_at": r[1], "token": r[2], "session_id": r[3],
                "episode_ids": json.loads(r[4]), "today": r[5]}

    def insert_wrap(self, started_at: str, token: str, session_id: str | None,
                    episode_ids: Sequence[str], today: str) -> int:
        r = self.q1("INSERT INTO wraps(started_at, status, token, session_id, episode_ids, today) "
                    "VALUES (%s, 'open', %s, %s, %s, %s) RETURNING id",
                    (started_at, token, session_id, json.dumps(list(episode_ids)), today))
        return int(r[0]) if r else 0

    def close_wrap(self, wrap_id: int, status: str, completed_at: str, *, chars: int | None = None,
                   episodes_compressed: int | None = None, metrics: dict[str, Any] | None = None) -> None:
        self.q("UPDATE wraps SET status=%s, completed_at=%s, chars=%s, episodes_compressed=%s, "
               "metrics=%s WHERE id=%s",
               (status, completed_at, chars, episodes_compressed,
                None if metrics is None else json.dumps(metrics), wrap_id))

    def wrap_history(self, limit: int | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT id, started_at, completed_at, chars, episodes_compressed, metrics, "
               "session_id FROM wraps WHERE status='saved' ORDER BY id DESC")
        rows = self.q(sql + (" LIMIT %s" if limit else ""), (limit,) if limit else ())
        return [{"id": int(r[0]), "started_at": r[1], "wrapped_at": r[2], "chars": r[3],
                 "episodes_compressed": r[4], "metrics": json.loads(r[5]) if r[5] else {},
                 "session_id": r[6]} for r in rows]

    def wrap_counts(self) -> tuple[int, str | None]:
        r = self.q1("SELECT COUNT(*), MAX(completed_at) FROM wraps WHERE status='saved'")
        return (int(r[0]), r[1]) if r else (0, None)

    def wrapped_ids_before(self, wrap_id: int) -> set[str]:
        return {r[0] for r in self.q("SELECT id FROM episodes WHERE wrap_id IS NOT NULL "
                                     "AND wrap_id < %s", (wrap_id,))}

    # ------------------------------------------------------------------ pattern history
    def pattern_history(self) -> dict[str, dict[str, Any]]:
        out = {}
        for r in self.q("SELECT name, level, max_level_reached, first_seen_at, last_seen_at, "
                        "last_saved_at, explanations, grounding FROM pattern_history"):
            out[r[0]] = {"name": r[0], "level": r[1], "max_level_reached": r[2],
                         "first_seen_at": r[3], "last_seen_at": r[4], "last_saved_at": r[5],
                         "explanations": json.loads(r[6]) if r[6] else [],
                         "grounding": json.loads(r[7]) if r[7] else []}
        return out

    def upsert_pattern(self, rec: dict[str, Any]) -> None:
        self.q("INSERT INTO pattern_history(name, level, max_level_reached, first_seen_at, "
               "last_seen_at, last_saved_at, explanations, grounding) "
               "VALUES (%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (name) DO UPDATE SET "
               "level=excluded.level, max_level_reached=excluded.max_level_reached, "
               "first_seen_at=excluded.first_seen_at, last_seen_at=excluded.last_seen_at, "
               "last_saved_at=excluded.last_saved_at, explanations=excluded.explanations, "
               "grounding=excluded.grounding",
               (rec["name"], rec["level"], rec["max_level_reached"], rec["first_seen_at"],
                rec.get("last_seen_at"), rec["last_saved_at"],
                json.dumps(rec.get("explanations") or []), json.dumps(rec.get("grounding") or [])))

    def has_pattern_history(self) -> bool:
        return self.get_meta("pattern_history_started") is not None

    # ------------------------------------------------------------------ drift probes
    def insert_probe(self, rec: dict[str, Any]) -> None:
        self.q("INSERT INTO drift_probes(id, kind, pattern, min_level, fact, section, created_at) "
               "VALUES (%s,%s,%s,%s,%s,%s,%s)",
               (rec["id"], rec["kind"], rec.get("pattern"), rec.get("min_level"), rec.get("fact"),
                rec.get("section"), rec["created_at"]))

    def probes(self) -> list[dict[str, Any]]:
        keys = ("id", "kind", "pattern", "min_level", "fact", "section", "created_at",
                "last_status", "last_detail", "last_wrap_id")
        return [dict(zip(keys, r)) for r in self.q(
            f"SELECT {', '.join(keys)} FROM drift_probes ORDER BY created_at, id")]

    def update_probe(self, probe_id: str, status: str, detail: str, wrap_id: int | None) -> None:
        self.q("UPDATE drift_probes SET last_status=%s, last_detail=%s, last_wrap_id=%s "
               "WHERE id=%s", (status, detail, wrap_id, probe_id))

    def delete_probe(self, probe_id: str) -> int:
        return int(self._count("DELETE FROM drift_probes WHERE id=%s", (probe_id,)))

    # ------------------------------------------------------------------ audit
    def audit_tip(self) -> tuple[int, str]:
        # A writer holds WRITE_LOCK from its first statement, so no other host can
        # append between this read and the insert that follows it.
        r = self.q1("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
        return (0, "0" * 64) if r is None else (int(r[0]), str(r[1]))

    def audit_insert(self, entry: dict[str, Any]) -> None:
        self.q("INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, hash) "
               "VALUES (%s,%s,%s,%s,%s,%s,%s)",
               (entry["seq"], entry["ts"], entry["actor"], entry["event"],
                json.dumps(entry["data"], sort_keys=True, ensure_ascii=False),
                entry["prev_hash"], entry["hash"]))

    def audit_entries(self, after_seq: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT seq, ts, actor, event, data, prev_hash, hash FROM audit_log "
               "WHERE seq > %s ORDER BY seq")
        rows = self.q(sql + (" LIMIT %s" if limit else ""),
                      (after_seq, limit) if limit else (after_seq,))
        return [{"seq": int(r[0]), "ts": r[1], "actor": r[2], "event": r[3],
                 "data": json.loads(r[4]), "prev_hash": r[5], "hash": r[6]} for r in rows]

    def audit_count(self) -> int:
        return self._scalar("SELECT COUNT(*) FROM audit_log")

    def integrity_check(self) -> str:
        """``ok``, or what is wrong: schema version, or a gap in the audit sequence."""
        version = self.get_meta("schema_version")
        if version != str(pg_schema.SCHEMA_VERSION):
            return f"schema version {version!r}, expected {pg_schema.SCHEMA_VERSION}"
        r = self.q1("SELECT COUNT(*), MIN(seq), MAX(seq) FROM audit_log")
        if r and r[0] and int(r[2]) - int(r[1]) + 1 != int(r[0]):
            return f"audit_log has gaps: {r[0]} entries between seq {r[1]} and {r[2]}"
        return "ok"
