"""The SQLite backend: WAL, fsync on commit, FTS5 keyword indexes.

Two external-content FTS5 indexes sit over ``episodes.content``: a trigram index for
substring (phrase) matching, which also serves scripts without spaces, and a
porter-stemmed word index for ranked BM25 recall. Triggers keep both in step, inside
the same transaction as the row they index.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import ReadOnlyStoreError, StoreError
from .base import Backend, EpisodeRow, SearchFilters
from .blobs import SidecarBlobs

SCHEMA_VERSION = 1
APPLICATION_ID = 0x414E4D31  # "ANM1": marks a database file as ours

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS episodes (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    timestamp TEXT NOT NULL,
    type TEXT NOT NULL,
    content TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'agent',
    session_id TEXT,
    metadata TEXT,
    trust TEXT NOT NULL DEFAULT 'agent',
    state_key TEXT,
    wrap_id INTEGER
);
CREATE INDEX IF NOT EXISTS ix_episodes_ts ON episodes(timestamp);
CREATE INDEX IF NOT EXISTS ix_episodes_type_ts ON episodes(type, timestamp);
CREATE INDEX IF NOT EXISTS ix_episodes_unwrapped ON episodes(wrap_id) WHERE wrap_id IS NULL;
CREATE INDEX IF NOT EXISTS ix_episodes_state_key ON episodes(state_key) WHERE state_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS supersessions (
    old_id TEXT NOT NULL,
    new_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (old_id, new_id)
);
CREATE INDEX IF NOT EXISTS ix_supersessions_new ON supersessions(new_id);
CREATE TABLE IF NOT EXISTS derivations (
    episode_id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    removed_trust TEXT,
    PRIMARY KEY (episode_id, source_id)
);
CREATE INDEX IF NOT EXISTS ix_derivations_source ON derivations(source_id);
CREATE TABLE IF NOT EXISTS tombstones (
    id TEXT PRIMARY KEY,
    type TEXT,
    timestamp TEXT,
    content_hash TEXT NOT NULL,
    removed_at TEXT NOT NULL,
    reason TEXT NOT NULL,
    trust TEXT
);
CREATE TABLE IF NOT EXISTS wraps (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    completed_at TEXT,
    status TEXT NOT NULL,
    token TEXT NOT NULL,
    session_id TEXT,
    episode_ids TEXT NOT NULL,
    today TEXT NOT NULL,
    chars INTEGER,
    episodes_compressed INTEGER,
    metrics TEXT
);
CREATE TABLE IF NOT EXISTS pattern_history (
    name TEXT PRIMARY KEY,
    level INTEGER NOT NULL,
    max_level_reached INTEGER NOT NULL,
    first_seen_at TEXT NOT NULL,
    last_seen_at TEXT,
    last_saved_at TEXT NOT NULL,
    explanations TEXT,
    grounding TEXT
);
CREATE TABLE IF NOT EXISTS drift_probes (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    pattern TEXT,
    min_level INTEGER,
    fact TEXT,
    section TEXT,
    created_at TEXT NOT NULL,
    last_status TEXT,
    last_detail TEXT,
    last_wrap_id INTEGER
);
CREATE TABLE IF NOT EXISTS audit_log (
    seq INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    actor TEXT NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS episodes_words USING fts5(
    content, type, content='episodes', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS episodes_tri USING fts5(
    content, type, content='episodes', content_rowid='rowid', tokenize='trigram'
);
CREATE TRIGGER IF NOT EXISTS episodes_ai AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_words(rowid, content, type) VALUES (new.rowid, new.content, new.type);
    INSERT INTO episodes_tri(rowid, content, type) VALUES (new.rowid, new.content, new.type);
END;
CREATE TRIGGER IF NOT EXISTS episodes_ad AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_words(episodes_words, rowid, content, type) VALUES ('delete', old.rowid, old.content, old.type);
    INSERT INTO episodes_tri(episodes_tri, rowid, content, type) VALUES ('delete', old.rowid, old.content, old.type);
END;
CREATE TRIGGER IF NOT EXISTS episodes_au AFTER UPDATE OF content, type ON episodes BEGIN
    INSERT INTO episodes_words(episodes_words, rowid, content, type) VALUES ('delete', old.rowid, old.content, old.type);
    INSERT INTO episodes_tri(episodes_tri, rowid, content, type) VALUES ('delete', old.rowid, old.content, old.type);
    INSERT INTO episodes_words(rowid, content, type) VALUES (new.rowid, new.content, new.type);
    INSERT INTO episodes_tri(rowid, content, type) VALUES (new.rowid, new.content, new.type);
END;
"""

_EP_COLS = "rowid, id, timestamp, type, content, source, session_id, metadata, trust, state_key, wrap_id"


def _row(r: sqlite3.Row | tuple[Any, ...]) -> EpisodeRow:
    return EpisodeRow(
        rowid=r[0], id=r[1], timestamp=r[2], type=r[3], content=r[4], source=r[5],
        session_id=r[6], metadata=r[7], trust=r[8], state_key=r[9], wrap_id=r[10],
    )


def _with_type(expr: str, filters: SearchFilters) -> str:
    """Add the episode-type filter inside the full-text query, so the index does it."""
    if filters.episode_type:
        return f"({expr}) AND type : {fts_quote(filters.episode_type)}"
    return expr


def fts_quote(term: str) -> str:
    """Quote any user text as one FTS5 string: no operator or syntax can get through."""
    return '"' + term.replace('"', '""') + '"'


class SQLiteBackend(Backend):
    """One connection per Store; one Store per thread."""

    def __init__(self, path: str | Path, *, read_only: bool = False,
                 busy_timeout_ms: int = 60_000) -> None:
        self.path = str(path)
        self.read_only = read_only
        self._depth = 0
        self._lock = threading.RLock()
        p = Path(self.path)
        if not p.parent.exists():
            raise StoreError(
                f"the folder {str(p.parent)!r} for the store does not exist: create it, "
                "or pass another path (--db / ANNEAL_MEMORY_DB)"
            )
        if read_only and not p.exists():
            raise StoreError(f"no store at {self.path!r} to open read-only: check the path")
        if not read_only and p.exists() and not os.access(self.path, os.W_OK):
            raise StoreError(f"the store {self.path!r} is not writable: fix its permissions "
                             "or open it with read_only=True")
        if not read_only and not p.exists() and not os.access(str(p.parent), os.W_OK):
            raise StoreError(f"cannot create a store in {str(p.parent)!r}: the folder is "
                             "not writable; choose another path")
        self._check_header(p)
        try:
            if read_only:
                uri = p.resolve().as_uri() + "?mode=ro"
                self.conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                            check_same_thread=False)
            else:
                self.conn = sqlite3.connect(self.path, isolation_level=None,
                                            check_same_thread=False)
            self.conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            if not read_only:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=FULL")
                self.conn.execute("PRAGMA secure_delete=ON")
                self.conn.execute("PRAGMA foreign_keys=ON")
            self._init_schema()
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(Exception):
                self.conn.close()
            raise StoreError(
                f"{self.path!r} is not a usable anneal-memory store ({exc}): it may be corrupt "
                "or another program's file; restore it from an export or choose another path"
            ) from None

    # ------------------------------------------------------------------ lifecycle
    @staticmethod
    def _check_header(p: Path) -> None:
        if not p.exists() or p.stat().st_size == 0:
            return
        try:
            with open(p, "rb") as fh:
                head = fh.read(100)
        except OSError as exc:
            raise StoreError(f"cannot read the store {str(p)!r}: {exc}") from None
        if not head.startswith(b"SQLite format 3\x00"):
            raise StoreError(
                f"{str(p)!r} is not an anneal-memory store (not a SQLite database): "
                "choose another path"
            )
        app_id = int.from_bytes(head[68:72], "big") if len(head) >= 72 else 0
        if app_id not in (0, APPLICATION_ID):
            raise StoreError(
                f"{str(p)!r} is a SQLite database of another application: choose another path"
            )

    def _init_schema(self) -> None:
        cur = self.conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        if cur == 0 and tables and "episodes" not in tables:
            raise StoreError(
                f"{self.path!r} is a SQLite database that is not an anneal-memory store: "
                "choose another path"
            )
        if self.read_only:
            if "episodes" not in tables:
                raise StoreError(f"{self.path!r} holds no anneal-memory store yet")
            return
        if "episodes" in tables and cur == APPLICATION_ID:
            version = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if version and int(version[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path!r} was written by a newer anneal-memory (schema "
                    f"{version[0]}): upgrade the package"
                )
            return
        with self.transaction():
            for stmt in _split_sql(_SCHEMA):
                self.conn.execute(stmt)
            self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()

    @property
    def closed(self) -> bool:
        try:
            self.conn.execute("SELECT 1")
            return False
        except sqlite3.ProgrammingError:
            return True

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if self.read_only:
            raise ReadOnlyStoreError(
                f"the store {self.path!r} was opened read_only: reopen it without read_only "
                "to write"
            )
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                with contextlib.suppress(Exception):
                    self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    self.conn.execute("ROLLBACK")
                raise

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._lock:
            if self._depth:
                yield
                return
            self.conn.execute("BEGIN")
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0
                with contextlib.suppress(Exception):
                    self.conn.execute("COMMIT")

    def q(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def q1(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self.conn.execute(sql, tuple(params)).fetchone()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.q(sql, params)

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str) -> str | None:
        r = self.q1("SELECT value FROM meta WHERE key=?", (key,))
        return None if r is None else r[0]

    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self.q("DELETE FROM meta WHERE key=?", (key,))
        else:
            self.q("INSERT INTO meta(key, value) VALUES (?, ?) "
                   "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))

    def add_meta_int(self, key: str, delta: int) -> None:
        self.q("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
               "SET value=CAST(CAST(value AS INTEGER) + ? AS TEXT)", (key, str(delta), delta))

    # ------------------------------------------------------------------ sidecar text
    def read_blob(self, name: str) -> str | None:
        """The sidecar file ``<stem><name>`` beside the database, or None."""
        return SidecarBlobs(self.path).read_blob(name)

    def write_blob(self, name: str, text: str, *, lock: str | None = None) -> None:
        SidecarBlobs(self.path).write_blob(name, text, lock=lock)

    def update_blob(self, name: str, fn: Callable[[str | None], str | None], *,
                    lock: str | None = None) -> str | None:
        return SidecarBlobs(self.path).update_blob(name, fn, lock=lock)

    # ------------------------------------------------------------------ episodes
    def insert_episode(self, row: EpisodeRow) -> None:
        self.q(
            "INSERT INTO episodes(id, timestamp, type, content, source, session_id, metadata, "
            "trust, state_key, wrap_id) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (row.id, row.timestamp, row.type, row.content, row.source, row.session_id,
             row.metadata, row.trust, row.state_key, row.wrap_id),
        )

    def id_taken(self, episode_id: str) -> bool:
        return bool(self.q1(
            "SELECT 1 FROM episodes WHERE id=? UNION ALL SELECT 1 FROM tombstones WHERE id=?",
            (episode_id, episode_id)))

    def get_episodes(self, ids: Sequence[str]) -> dict[str, EpisodeRow]:
        out: dict[str, EpisodeRow] = {}
        ids = list(dict.fromkeys(ids))
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.q(f"SELECT {_EP_COLS} FROM episodes WHERE id IN ({marks})", chunk):
                out[r[1]] = _row(r)
        return out

    def all_episodes(self, *, order: str = "timestamp ASC, rowid ASC") -> Iterator[EpisodeRow]:
        for r in self.conn.execute(f"SELECT {_EP_COLS} FROM episodes ORDER BY {order}"):
            yield _row(r)

    def unwrapped_episodes(self) -> list[EpisodeRow]:
        return [_row(r) for r in self.q(
            f"SELECT {_EP_COLS} FROM episodes WHERE wrap_id IS NULL "
            "ORDER BY timestamp ASC, rowid ASC")]

    def count_unwrapped(self) -> int:
        return int(self.q1("SELECT COUNT(*) FROM episodes WHERE wrap_id IS NULL")[0])  # type: ignore[index]

    def mark_wrapped(self, ids: Sequence[str], wrap_id: int) -> None:
        ids = list(ids)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            self.q(f"UPDATE episodes SET wrap_id=? WHERE id IN ({marks}) AND wrap_id IS NULL",
                   [wrap_id, *chunk])

    def update_episode(self, episode_id: str, **fields: Any) -> None:
        cols = ", ".join(f"{k}=?" for k in fields)
        self.q(f"UPDATE episodes SET {cols} WHERE id=?", [*fields.values(), episode_id])

    def delete_episode_rows(self, ids: Sequence[str]) -> int:
        n = 0
        for i in range(0, len(ids), 500):
            chunk = list(ids[i:i + 500])
            marks = ",".join("?" * len(chunk))
            n += self.conn.execute(f"DELETE FROM episodes WHERE id IN ({marks})", chunk).rowcount
        return n

    def scrub_indexes(self) -> None:
        """Rewrite the keyword indexes so deleted text leaves no trace in them."""
        self.q("INSERT INTO episodes_words(episodes_words) VALUES ('optimize')")
        self.q("INSERT INTO episodes_tri(episodes_tri) VALUES ('optimize')")

    def checkpoint(self) -> None:
        with contextlib.suppress(sqlite3.DatabaseError):
            self.q("PRAGMA wal_checkpoint(TRUNCATE)")

    def ids_older_than(self, cutoff: str) -> list[str]:
        return [r[0] for r in self.q("SELECT id FROM episodes WHERE timestamp < ?", (cutoff,))]

    def counts_by_type(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self.q("SELECT type, COUNT(*) FROM episodes GROUP BY type")}

    def counts_by_trust(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self.q("SELECT trust, COUNT(*) FROM episodes GROUP BY trust")}

    def count_episodes(self) -> int:
        return int(self.q1("SELECT COUNT(*) FROM episodes")[0])  # type: ignore[index]

    def state_key_holders(self, key: str | None = None) -> list[EpisodeRow]:
        if key is None:
            rows = self.q(f"SELECT {_EP_COLS} FROM episodes WHERE state_key IS NOT NULL "
                          "ORDER BY state_key, timestamp ASC, rowid ASC")
        else:
            rows = self.q(f"SELECT {_EP_COLS} FROM episodes WHERE state_key=? "
                          "ORDER BY timestamp ASC, rowid ASC", (key,))
        return [_row(r) for r in rows]

    # ------------------------------------------------------------------ search
    def _filter_sql(self, f: SearchFilters, alias: str = "e") -> tuple[str, list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if f.since:
            where.append(f"{alias}.timestamp >= ?")
            params.append(f.since)
        if f.until:
            where.append(f"{alias}.timestamp <= ?")
            params.append(f.until)
        if f.episode_type:
            where.append(f"{alias}.type = ?")
            params.append(f.episode_type)
        if f.source:
            where.append(f"{alias}.source = ?")
            params.append(f.source)
        if f.only_unwrapped:
            where.append(f"{alias}.wrap_id IS NULL")
        if f.ids is not None:
            ids = list(f.ids) or [""]
            where.append(f"{alias}.id IN ({','.join('?' * len(ids))})")
            params.extend(ids)
        if not f.include_superseded:
            where.append(f"NOT EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = {alias}.id)")
        return (" AND ".join(where) or "1"), params

    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> tuple[list[tuple[EpisodeRow, float]], int]:
        """Filtered episodes, newest first or by BM25 rank, plus the total match count.

        ``phrase``: case-insensitive substring of the content. ``words``: any of these
        words (stemmed), ranked by BM25. Neither: every episode the filters allow.
        """
        where, params = self._filter_sql(filters)
        cols = ", ".join(f"e.{c.strip()}" for c in _EP_COLS.split(","))
        fts: str | None = None
        if phrase is not None:
            if len(phrase) >= 3:
                fts = "episodes_tri"
                src = ("FROM episodes_tri t CROSS JOIN episodes e ON e.rowid = t.rowid "
                       "WHERE episodes_tri MATCH ? AND ")
                mparams: list[Any] = [_with_type(f"content : {fts_quote(phrase)}", filters)]
                score = "0.0"
                # most recently recorded first: the index yields that order without a sort
                order_sql = "t.rowid DESC"
            else:
                src = "FROM episodes e WHERE instr(lower(e.content), lower(?)) > 0 AND "
                mparams = [phrase]
                score = "0.0"
                order_sql = "e.rowid DESC"
        elif words:
            fts = "episodes_words"
            src = ("FROM episodes_words w CROSS JOIN episodes e ON e.rowid = w.rowid "
                   "WHERE episodes_words MATCH ? AND ")
            mparams = [_with_type("content : (" + " OR ".join(fts_quote(w) for w in words) + ")",
                                  filters)]
            score = "-bm25(episodes_words, 1.0, 0.0)"
            order_sql = "bm25(episodes_words, 1.0, 0.0) ASC, e.timestamp DESC"
        else:
            src = "FROM episodes e WHERE "
            mparams = []
            score = "0.0"
            order_sql = ("e.timestamp DESC, e.rowid DESC" if order == "recent"
                         else "e.timestamp ASC, e.rowid ASC")
        total = self._match_count(fts, mparams, src, where, params, filters)
        rows = self.q(
            f"SELECT {cols}, {score} {src}{where} ORDER BY {order_sql} LIMIT ? OFFSET ?",
            [*mparams, *params, int(limit), int(offset)],
        )
        return [(_row(r[:11]), float(r[11] or 0.0)) for r in rows], total

    def _match_count(self, fts: str | None, mparams: list[Any], src: str, where: str,
               params: list[Any], filters: SearchFilters) -> int:
        """How many episodes match. With no filter but the superseded one, count in the
        full-text index alone and subtract the replaced matches (a short list)."""
        bare, _ = SQLiteBackend._filter_sql(self, SearchFilters(
            include_superseded=filters.include_superseded, episode_type=filters.episode_type))
        if fts is None or where != bare:
            return int(self.q1(f"SELECT COUNT(*) {src}{where}", [*mparams, *params])[0])  # type: ignore[index]
        n = int(self.q1(f"SELECT COUNT(*) FROM {fts} WHERE {fts} MATCH ?", mparams)[0])  # type: ignore[index]
        if not filters.include_superseded and self.q1("SELECT 1 FROM supersessions LIMIT 1"):
            n -= int(self.q1(
                f"SELECT COUNT(*) FROM (SELECT DISTINCT old_id FROM supersessions) s "
                f"CROSS JOIN episodes e ON e.id = s.old_id CROSS JOIN {fts} f "
                f"ON f.rowid = e.rowid WHERE {fts} MATCH ?", mparams)[0])  # type: ignore[index]
        return n

    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]:
        """Episodes at these row ids that pass ``filters``."""
        out: dict[int, EpisodeRow] = {}
        rowids = list(rowids)
        where, params = self._filter_sql(filters)
        cols = ", ".join(f"e.{c.strip()}" for c in _EP_COLS.split(","))
        for i in range(0, len(rowids), 500):
            chunk = rowids[i:i + 500]
            for r in self.q(f"SELECT {cols} FROM episodes e WHERE e.rowid IN "
                            f"({','.join('?' * len(chunk))}) AND {where}", [*chunk, *params]):
                out[int(r[0])] = _row(r)
        return out

    # ------------------------------------------------------------------ supersession
    def add_supersession(self, old_id: str, new_id: str, kind: str, created_at: str) -> None:
        self.q("INSERT OR REPLACE INTO supersessions(old_id, new_id, kind, created_at) "
               "VALUES (?,?,?,?)", (old_id, new_id, kind, created_at))

    def remove_supersession(self, old_id: str, new_id: str) -> int:
        return self.conn.execute("DELETE FROM supersessions WHERE old_id=? AND new_id=?",
                                 (old_id, new_id)).rowcount

    def supersessions_of(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
        """old_id -> [(new_id, kind, created_at)] for the given old ids."""
        out: dict[str, list[tuple[str, str, str]]] = {}
        ids = list(ids)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for o, n, k, c in self.q(
                f"SELECT old_id, new_id, kind, created_at FROM supersessions "
                f"WHERE old_id IN ({marks}) ORDER BY created_at", chunk):
                out.setdefault(o, []).append((n, k, c))
        return out

    def superseded_by_new(self, new_id: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.q(
            "SELECT old_id, kind FROM supersessions WHERE new_id=?", (new_id,))]

    def all_supersessions(self) -> list[tuple[str, str, str, str]]:
        return [tuple(r) for r in self.q(  # type: ignore[misc]
            "SELECT old_id, new_id, kind, created_at FROM supersessions ORDER BY created_at")]

    def count_superseded(self) -> int:
        return int(self.q1("SELECT COUNT(DISTINCT old_id) FROM supersessions")[0])  # type: ignore[index]

    def delete_supersessions_touching(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        out: list[tuple[str, str, str]] = []
        for eid in ids:
            out += [tuple(r) for r in self.q(  # type: ignore[misc]
                "SELECT old_id, new_id, kind FROM supersessions WHERE old_id=? OR new_id=?",
                (eid, eid))]
            self.q("DELETE FROM supersessions WHERE old_id=? OR new_id=?", (eid, eid))
        return out

    # ------------------------------------------------------------------ derivations
    def add_derivations(self, episode_id: str, sources: Sequence[str],
                        pinned_trust: str | None = None) -> None:
        for s in sources:
            self.q("INSERT OR IGNORE INTO derivations(episode_id, source_id, removed_trust) "
                   "VALUES (?,?,?)", (episode_id, s, pinned_trust))

    def derivations_of(self, ids: Sequence[str]) -> dict[str, list[tuple[str, str | None]]]:
        out: dict[str, list[tuple[str, str | None]]] = {}
        ids = list(ids)
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for e, s, t in self.q(
                f"SELECT episode_id, source_id, removed_trust FROM derivations "
                f"WHERE episode_id IN ({marks})", chunk):
                out.setdefault(e, []).append((s, t))
        return out

    def mark_source_removed(self, source_id: str, trust: str) -> None:
        self.q("UPDATE derivations SET removed_trust=? WHERE source_id=? AND removed_trust IS NULL",
               (trust, source_id))

    def all_derivations(self) -> list[tuple[str, str, str | None]]:
        return [tuple(r) for r in self.q(  # type: ignore[misc]
            "SELECT episode_id, source_id, removed_trust FROM derivations")]

    # ------------------------------------------------------------------ tombstones
    def add_tombstone(self, episode_id: str, type_: str, timestamp: str, content_hash: str,
                      removed_at: str, reason: str, trust: str) -> None:
        self.q("INSERT OR REPLACE INTO tombstones(id, type, timestamp, content_hash, removed_at, "
               "reason, trust) VALUES (?,?,?,?,?,?,?)",
               (episode_id, type_, timestamp, content_hash, removed_at, reason, trust))

    def tombstones(self, ids: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        if ids is None:
            rows = self.q("SELECT id, type, timestamp, content_hash, removed_at, reason, trust "
                          "FROM tombstones")
        else:
            rows = []
            ids = list(ids)
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                rows += self.q("SELECT id, type, timestamp, content_hash, removed_at, reason, trust "
                               f"FROM tombstones WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        keys = ("id", "type", "timestamp", "content_hash", "removed_at", "reason", "trust")
        return {r[0]: dict(zip(keys, r)) for r in rows}

    def count_tombstones(self) -> int:
        return int(self.q1("SELECT COUNT(*) FROM tombstones")[0])  # type: ignore[index]

    # ------------------------------------------------------------------ wraps
    def open_wrap(self) -> dict[str, Any] | None:
        r = self.q1("SELECT id, started_at, token, session_id, episode_ids, today FROM wraps "
                    "WHERE status='open' ORDER BY id DESC LIMIT 1")
        if r is None:
            return None
        return {"id": r[0], "started_at": r[1], "token": r[2], "session_id": r[3],
                "episode_ids": json.loads(r[4]), "today": r[5]}

    def insert_wrap(self, started_at: str, token: str, session_id: str | None,
                    episode_ids: Sequence[str], today: str) -> int:
        cur = self.conn.execute(
            "INSERT INTO wraps(started_at, status, token, session_id, episode_ids, today) "
            "VALUES (?, 'open', ?, ?, ?, ?)",
            (started_at, token, session_id, json.dumps(list(episode_ids)), today))
        return int(cur.lastrowid or 0)

    def close_wrap(self, wrap_id: int, status: str, completed_at: str, *, chars: int | None = None,
                   episodes_compressed: int | None = None, metrics: dict[str, Any] | None = None) -> None:
        self.q("UPDATE wraps SET status=?, completed_at=?, chars=?, episodes_compressed=?, "
               "metrics=? WHERE id=?",
               (status, completed_at, chars, episodes_compressed,
                None if metrics is None else json.dumps(metrics), wrap_id))

    def wrap_history(self, limit: int | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT id, started_at, completed_at, chars, episodes_compressed, metrics, session_id "
               "FROM wraps WHERE status='saved' ORDER BY id DESC")
        rows = self.q(sql + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        return [{"id": r[0], "started_at": r[1], "wrapped_at": r[2], "chars": r[3],
                 "episodes_compressed": r[4], "metrics": json.loads(r[5]) if r[5] else {},
                 "session_id": r[6]} for r in rows]

    def wrap_counts(self) -> tuple[int, str | None]:
        r = self.q1("SELECT COUNT(*), MAX(completed_at) FROM wraps WHERE status='saved'")
        return int(r[0]), r[1]  # type: ignore[index]

    def wrapped_ids_before(self, wrap_id: int) -> set[str]:
        return {r[0] for r in self.q("SELECT id FROM episodes WHERE wrap_id IS NOT NULL AND wrap_id < ?",
                                     (wrap_id,))}

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
        self.q("INSERT OR REPLACE INTO pattern_history(name, level, max_level_reached, "
               "first_seen_at, last_seen_at, last_saved_at, explanations, grounding) "
               "VALUES (?,?,?,?,?,?,?,?)",
               (rec["name"], rec["level"], rec["max_level_reached"], rec["first_seen_at"],
                rec.get("last_seen_at"), rec["last_saved_at"],
                json.dumps(rec.get("explanations") or []), json.dumps(rec.get("grounding") or [])))

    def has_pattern_history(self) -> bool:
        return self.get_meta("pattern_history_started") is not None

    # ------------------------------------------------------------------ drift probes
    def insert_probe(self, rec: dict[str, Any]) -> None:
        self.q("INSERT INTO drift_probes(id, kind, pattern, min_level, fact, section, created_at) "
               "VALUES (?,?,?,?,?,?,?)",
               (rec["id"], rec["kind"], rec.get("pattern"), rec.get("min_level"), rec.get("fact"),
                rec.get("section"), rec["created_at"]))

    def probes(self) -> list[dict[str, Any]]:
        keys = ("id", "kind", "pattern", "min_level", "fact", "section", "created_at",
                "last_status", "last_detail", "last_wrap_id")
        return [dict(zip(keys, r)) for r in self.q(
            f"SELECT {', '.join(keys)} FROM drift_probes ORDER BY created_at, id")]

    def update_probe(self, probe_id: str, status: str, detail: str, wrap_id: int | None) -> None:
        self.q("UPDATE drift_probes SET last_status=?, last_detail=?, last_wrap_id=? WHERE id=?",
               (status, detail, wrap_id, probe_id))

    def delete_probe(self, probe_id: str) -> int:
        return self.conn.execute("DELETE FROM drift_probes WHERE id=?", (probe_id,)).rowcount

    # ------------------------------------------------------------------ audit
    def audit_tip(self) -> tuple[int, str]:
        r = self.q1("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
        return (0, "0" * 64) if r is None else (int(r[0]), str(r[1]))

    def audit_insert(self, entry: dict[str, Any]) -> None:
        self.q("INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, hash) "
               "VALUES (?,?,?,?,?,?,?)",
               (entry["seq"], entry["ts"], entry["actor"], entry["event"],
                json.dumps(entry["data"], sort_keys=True, ensure_ascii=False),
                entry["prev_hash"], entry["hash"]))

    def audit_entries(self, after_seq: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT seq, ts, actor, event, data, prev_hash, hash FROM audit_log WHERE seq > ? ORDER BY seq"
        rows = self.q(sql + (" LIMIT ?" if limit else ""), (after_seq, limit) if limit else (after_seq,))
        return [{"seq": r[0], "ts": r[1], "actor": r[2], "event": r[3], "data": json.loads(r[4]),
                 "prev_hash": r[5], "hash": r[6]} for r in rows]

    def audit_count(self) -> int:
        return int(self.q1("SELECT COUNT(*) FROM audit_log")[0])  # type: ignore[index]

    def integrity_check(self) -> str:
        return str(self.q1("PRAGMA integrity_check")[0])  # type: ignore[index]


def _split_sql(script: str) -> list[str]:
    """Split the schema script into statements, keeping trigger bodies whole."""
    out, buf, depth = [], [], 0
    for line in script.splitlines():
        s = line.strip()
        if not s:
            continue
        buf.append(line)
        up = s.upper()
        if up.startswith("CREATE TRIGGER"):
            depth = 1
        if depth and up == "END;":
            depth = 0
            out.append("\n".join(buf))
            buf = []
        elif not depth and s.endswith(";"):
            out.append("\n".join(buf))
            buf = []
    if buf:
        out.append("\n".join(buf))
    return out
