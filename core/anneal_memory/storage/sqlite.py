"""The SQLite backend: WAL, fsync on commit, FTS5 keyword indexes.

Two external-content FTS5 indexes sit over ``episodes.content``: a trigram index for
substring (phrase) matching, which also serves scripts without spaces, and a
porter-stemmed word index for ranked BM25 recall. Triggers keep both in step, inside
the same transaction as the row they index.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .._fileio import create_private
from ..errors import ReadOnlyStoreError, StoreError
from ..text import LETTER_SPELLINGS, spell_letters
from . import fts, sqlite_errors, sqlite_migrate
from .base import (
    ROOT,
    EpisodeRow,
    EstimatedCount,
    RankedHit,
    RankedPage,
    Scope,
    SearchFilters,
    SearchPage,
)
from .blobs import SQLiteMetaSQL
from .common import EP_COLS as _EP_COLS
from .common import SQLBackend, like_pattern, trigrams, visible_sql
from .common import episode_row as _row
from .driver import sqlite_driver
from .rows import WordCounts
from .sqlite_audit import CompactedReader, SQLiteAuditSQL
from .sqlite_migrate import NS_TAG_SQL
from .sqlite_peek import open_read_only

_T = TypeVar("_T")

SCHEMA_VERSION = 6
_NAN = float("nan")  # a ranked hit's index score left out (see ranked_ids)


def sqlite3() -> Any:
    """The SQLite DB-API module in use (see :mod:`.driver`)."""
    return sqlite_driver()

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
    wrap_id INTEGER,
    ns_owner TEXT,
    ns_project TEXT,
    ns_tag TEXT GENERATED ALWAYS AS (NS_TAG_SQL) VIRTUAL
);
CREATE INDEX IF NOT EXISTS ix_episodes_ts ON episodes(timestamp);
CREATE INDEX IF NOT EXISTS ix_episodes_type_ts ON episodes(type, timestamp);
CREATE INDEX IF NOT EXISTS ix_episodes_unwrapped ON episodes(wrap_id) WHERE wrap_id IS NULL;
CREATE INDEX IF NOT EXISTS ix_episodes_state_key ON episodes(state_key) WHERE state_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS ix_episodes_ns ON episodes(ns_owner, ns_project, timestamp)
    WHERE ns_owner IS NOT NULL;
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
    trust TEXT,
    ns_owner TEXT,
    ns_project TEXT
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
    metrics TEXT,
    ns_key TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS ux_wraps_open ON wraps(ns_key) WHERE status = 'open';
CREATE TABLE IF NOT EXISTS pattern_history (
    ns_key TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL,
    level INTEGER NOT NULL,
    max_level_reached INTEGER NOT NULL,
    first_seen_at TEXT NOT NULL,
    last_seen_at TEXT,
    last_saved_at TEXT NOT NULL,
    explanations TEXT,
    grounding TEXT,
    PRIMARY KEY (ns_key, name)
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
    last_wrap_id INTEGER,
    ns_key TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS items (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ns_key TEXT NOT NULL,
    collection TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    metadata TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (ns_key, collection, key)
);
CREATE INDEX IF NOT EXISTS ix_items_seq ON items(ns_key, collection, seq);
CREATE TABLE IF NOT EXISTS audit_log (
    seq INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    actor TEXT NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_hashes (
    seq INTEGER PRIMARY KEY,
    hash BLOB NOT NULL
);
CREATE VIEW IF NOT EXISTS episodes_words_src AS
    SELECT rowid, SPELLED(content) AS content, type, ns_tag FROM episodes;
CREATE TABLE IF NOT EXISTS episode_vectors (
    episode_id TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    ns_key TEXT NOT NULL DEFAULT '',
    vector BLOB NOT NULL,
    PRIMARY KEY (episode_id, model, dim)
);
CREATE INDEX IF NOT EXISTS ix_episode_vectors_model ON episode_vectors(model, dim, ns_key);
CREATE VIRTUAL TABLE IF NOT EXISTS episodes_words USING fts5(
    content, type, ns_tag, content='episodes_words_src', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS episodes_tri USING fts5(
    content, content='episodes', content_rowid='rowid', tokenize='trigram',
    detail='none', columnsize=0
);
CREATE TRIGGER IF NOT EXISTS episodes_ai AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_words(rowid, content, type, ns_tag) VALUES (new.rowid, SPELLED(new.content), new.type, new.ns_tag);
    INSERT INTO episodes_tri(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER IF NOT EXISTS episodes_ad AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_words(episodes_words, rowid, content, type, ns_tag) VALUES ('delete', old.rowid, SPELLED(old.content), old.type, old.ns_tag);
    INSERT INTO episodes_tri(episodes_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER IF NOT EXISTS episodes_au AFTER UPDATE OF content, type ON episodes BEGIN
    INSERT INTO episodes_words(episodes_words, rowid, content, type, ns_tag) VALUES ('delete', old.rowid, SPELLED(old.content), old.type, old.ns_tag);
    INSERT INTO episodes_tri(episodes_tri, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO episodes_words(rowid, content, type, ns_tag) VALUES (new.rowid, SPELLED(new.content), new.type, new.ns_tag);
    INSERT INTO episodes_tri(rowid, content) VALUES (new.rowid, new.content);
END;
"""
# The namespace as one word of the word index, so a namespace's ranked search is
# intersected inside the index: "u" + hex(owner) for a user-level episode, "p" +
# hex(owner, project) for a project's (the SQL filter on the columns stays the rule).
_SCHEMA = _SCHEMA.replace("NS_TAG_SQL", NS_TAG_SQL)


def spelled_sql(expr: str) -> str:
    """``expr`` with text.spell_letters applied, in plain SQL (nested replace()), so the
    word index's triggers need no function of ours: any SQLite client can still write.
    Every letter spelled out is outside ASCII, so ASCII text (as many bytes as characters)
    is taken as it is: the 24 replace() calls cost a durable record ~15 us of SQL
    (measured: 21 us against 7 us per 240-character text with the guard)."""
    chain = expr
    for letter, spelling in LETTER_SPELLINGS.items():
        chain = f"replace({chain}, '{letter}', '{spelling.replace(chr(39), chr(39) * 2)}')"
    return f"CASE WHEN length(CAST({expr} AS BLOB)) = length({expr}) THEN {expr} ELSE {chain} END"


_SCHEMA = re.sub(r"SPELLED\(([\w.]+)\)", lambda m: spelled_sql(m.group(1)), _SCHEMA)


def ns_words_query(scope: Scope) -> str | None:
    """The word-index condition for the episodes ``scope`` may read (None at the root)."""
    if scope.owner is None:
        return None
    tags = ["u" + scope.owner.encode("utf-8").hex().upper()]
    if scope.project is not None:
        tags.append("p" + f"{scope.owner}\x1f{scope.project}".encode().hex().upper())
    return "ns_tag : (" + " OR ".join(fts_quote(t) for t in tags) + ")"


def _with_type(expr: str, filters: SearchFilters, *, ns: bool = False) -> str:
    """Add the episode-type filter inside the full-text query, so the index does it."""
    if filters.episode_type:
        expr = f"({expr}) AND type : {fts_quote(filters.episode_type)}"
    cond = ns_words_query(filters.scope) if ns else None
    return expr if cond is None else f"({expr}) AND {cond}"


#: a match's BM25 in the word index, by its content alone (type and namespace weigh 0)
_WORD_SCORE = "-bm25(episodes_words, 1.0, 0.0, 0.0)"


def _any_word(words: Sequence[str]) -> str:
    """The word-index query for episodes whose content holds any of ``words``."""
    return "content : (" + " OR ".join(fts_quote(spell_letters(w)) for w in words) + ")"


def _contains_test(phrase: str) -> tuple[str, str]:
    """The row check of a substring search (case-insensitive) and its parameter."""
    folded = phrase.lower()
    if folded.isascii():
        if len(folded) <= _LIKE_CHARS:  # LIKE folds ASCII case as lower() does, no copy
            return "e.content LIKE ? ESCAPE '\\'", like_pattern(folded)
        return "instr(lower(e.content), ?) > 0", folded  # past SQLite's LIKE pattern bound
    return "instr(am_fold(e.content), ?) > 0", folded


#: SQLite refuses a LIKE pattern over 50,000 bytes; escaping can double a phrase
_LIKE_CHARS = 20_000


_ALNUM_RUN = re.compile(r"[a-z0-9]+")


def interior_words(folded: str) -> list[str]:
    """The whole words inside a lower-cased ASCII phrase: runs of letters and digits
    with a non-alphanumeric character on each side within the phrase (the first and
    last runs may continue outside it in a match), each once, in order."""
    out: dict[str, None] = {}
    for m in _ALNUM_RUN.finditer(folded):
        if m.start() > 0 and m.end() < len(folded):
            out.setdefault(m.group())
    return list(out)


def _gram_and(grams: Sequence[str]) -> str:
    """The trigram index's query holding every one of ``grams`` (each quoted)."""
    return " AND ".join(fts_quote(g) for g in grams)


def _rowid_col(phrase_params: list[Any]) -> str:
    """The row id a substring search walks: the trigram index's (two parameters: the
    trigrams and the needle) or the table's."""
    return "t.rowid" if len(phrase_params) == 2 else "e.rowid"


def _epoch_sql(alias: str) -> str:
    """An episode's timestamp as epoch seconds (NULL when it is not a date SQLite reads)."""
    return f"(julianday({alias}.timestamp) - 2440587.5) * 86400.0"


def _fold(text: Any) -> Any:
    return text.lower() if isinstance(text, str) else text


def fts_quote(term: str) -> str:
    """Quote any user text as one FTS5 string: no operator or syntax can get through."""
    return '"' + term.replace('"', '""') + '"'


def _why_not_writable(path: Path) -> str:
    """Why ``path`` cannot be written: a read-only file system, or permission denied."""
    try:
        if os.statvfs(str(path)).f_flag & getattr(os, "ST_RDONLY", 1):
            return "read-only file system"
    except (OSError, AttributeError):
        pass
    return "permission denied"


def write_denied(p: Path) -> str | None:
    """What stops a store at ``p`` from being written (its file, or its folder, where
    SQLite keeps the write-ahead log and its index beside the database), naming the
    path; None when both can be written."""
    if p.exists() and not os.access(str(p), os.W_OK):
        return f"the file {str(p)!r} is not writable ({_why_not_writable(p)})"
    if not os.access(str(p.parent), os.W_OK):
        return (f"its folder {str(p.parent)!r} is not writable "
                f"({_why_not_writable(p.parent)}), and a store writes its log beside it")
    return None


class SQLiteBackend(SQLBackend):
    """One connection per Store; one Store per thread."""

    _AUDIT_SQL = SQLiteAuditSQL
    _META_SQL = SQLiteMetaSQL

    _IN_CHUNK = 500  # bound parameters per statement stay far below SQLite's limit

    #: the write-ahead log's pages before a commit checkpoints it into the database. A
    #: checkpoint syncs the log and the database and copies each page once however often
    #: the log holds it (an index's last leaf, the keyword indexes' structure), so a
    #: longer log writes less per durable record: measured over 3,000 records, 1000 pages
    #: (SQLite's default: a 2 MB log of 2 KB pages) 54.1 KiB written and 1.08 syncs per
    #: record, 4000 pages (8 MB) 51.1 KiB and 1.03
    WAL_CHECKPOINT_PAGES = 4000

    def __init__(self, path: str | Path, *, read_only: bool = False,
                 busy_timeout_ms: int = 60_000, legacy: Any = None,
                 compacted_entries: CompactedReader | None = None) -> None:
        self.path = str(path)
        self.read_only = read_only
        #: reads compacted audit entries back from the audit files (``audit.chain_entries``,
        #: handed in by the Store: the files are the audit layer's, above storage)
        self._compacted_entries = compacted_entries
        #: the 1.0.2 upgrade (``anneal_memory.legacy.upgrade``, handed in by the Store: it
        #: sits above storage); without it a 1.0.2 database is refused, not upgraded
        self._legacy = legacy
        #: what an in-place upgrade of a 1.0.2 store did on this open (None otherwise)
        self.legacy_upgrade: dict[str, Any] | None = None
        self._depth = 0
        self._writing = False  # the open transaction is a write (not a read snapshot)
        self._lock = threading.RLock()
        #: results of ``memo`` by key, each with the database state it was computed in
        self._memo: OrderedDict[Hashable, tuple[int, Any]] = OrderedDict()
        self._memo_used = 0
        #: the database state every kept result was computed in
        self._memo_state: tuple[int, int] | None = None
        p = Path(self.path)
        if not p.parent.exists():
            raise StoreError(
                f"the folder {str(p.parent)!r} for the store does not exist: create it, "
                "or give the store another path"
            )
        if read_only and not p.exists():
            raise StoreError(f"no store at {self.path!r} to open read-only: check the path")
        if not read_only:
            denied = write_denied(p)
            if denied and p.exists():
                raise ReadOnlyStoreError(
                    f"the store {self.path!r} cannot be written: {denied}; open it "
                    "read-only (read_only=True) to read it, or fix the permissions")
            if denied:
                raise StoreError(f"cannot create a store at {self.path!r}: {denied}; choose "
                                 "another path")
        self._check_header(p)
        deadline = time.monotonic() + busy_timeout_ms / 1000.0
        while True:
            try:
                self._connect(p, busy_timeout_ms)
                break
            except sqlite3().OperationalError as exc:
                # Several processes opening a brand-new store race to switch it to WAL and
                # create its schema; SQLite reports that as "locked" without waiting.
                with contextlib.suppress(Exception):
                    self.conn.close()
                if "disk i/o" in str(exc).lower() or "full" in str(exc).lower():
                    raise StoreError(
                        f"the store {self.path!r} cannot be written ({exc}): check the disk "
                        "(free space, a file-size limit, a network mount) and retry; nothing "
                        "was changed") from None
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path!r} is not a usable anneal-memory store ({exc}): it may be "
                        "corrupt or locked by another program; retry, restore it from an "
                        "export, or choose another path") from None
                import random

                time.sleep(0.02 + random.random() * 0.05)
            except sqlite3().DatabaseError as exc:
                with contextlib.suppress(Exception):
                    self.conn.close()
                raise StoreError(
                    f"{self.path!r} is not a usable anneal-memory store ({exc}): it may be corrupt "
                    "or another program's file; restore it from an export or choose another path"
                ) from None

    def _connect(self, p: Path, busy_timeout_ms: int) -> None:
        if self.read_only:
            self.conn = self._connect_read_only(p)
        else:
            if not p.exists():  # a new store is the owner's only (its -wal and -shm too)
                create_private(p)
            self.conn = sqlite3().connect(self.path, isolation_level=None,
                                        check_same_thread=False)
        self.conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        # case-insensitive substring test over a namespace's own rows (as the trigram
        # index folds case: Unicode-aware, unlike SQLite's lower())
        self.conn.create_function("am_fold", 1, _fold, deterministic=True)
        if not self.read_only:
            # a new store gives free pages back (see SQLiteAuditSQL.compact) and uses
            # PAGE_SIZE; no effect on a database that already has tables
            self.conn.execute(f"PRAGMA page_size={int(self.PAGE_SIZE)}")
            self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute(f"PRAGMA wal_autocheckpoint={int(self.WAL_CHECKPOINT_PAGES)}")
            self.conn.execute("PRAGMA secure_delete=ON")
            self.conn.execute("PRAGMA foreign_keys=ON")
        self._init_schema()

    #: how the read-only connection was opened: "ro" (SQLite's mode=ro, sees other
    #: writers), "immutable" (a read-only folder: the file is read as it is, unlocked) or
    #: "copy" (a read-only folder whose write-ahead log holds data: a private copy)
    read_only_mode: str | None = None
    _ro_copy: str | None = None

    def _connect_read_only(self, p: Path) -> Any:
        """A read-only connection that works in a read-only folder too (see
        :func:`.sqlite_peek.open_read_only`)."""
        conn, self.read_only_mode, self._ro_copy = open_read_only(
            p, isolation_level=None, check_same_thread=False)
        return conn

    # ------------------------------------------------------------------ lifecycle
    @staticmethod
    def _check_header(p: Path) -> None:
        """Refuse a file that is not SQLite, or another application's database, before
        anything is written to it (the open that follows switches a database to WAL).
        Read through SQLite (a read-only connection), never with ``open()``: closing a
        descriptor of our own on the database would drop every POSIX lock this process
        holds on it, those of its open stores included, and another process closing its
        connection would then checkpoint and delete the write-ahead log under them. What
        that reading left beside a refused file (a WAL database's -wal and -shm) is
        removed: nothing is created next to a file that is not ours."""
        if not p.exists() or p.stat().st_size == 0:
            return
        sides = [p.with_name(p.name + s) for s in ("-wal", "-shm")]
        had = [side.exists() for side in sides]
        sqlite = sqlite3()
        try:
            conn = sqlite.connect(p.resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite.Error:
            return  # cannot be read this way (a read-only folder): the open says why
        refusal: str | None = None
        try:
            app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite.DatabaseError as exc:
            if "not a database" not in str(exc):
                return  # locked or unreadable here: the open that follows says why
            refusal = (f"{str(p)!r} is not an anneal-memory store (not a SQLite database): "
                       "choose another path")
        else:
            if app_id not in (0, APPLICATION_ID):
                refusal = (f"{str(p)!r} is a SQLite database of another application: "
                           "choose another path")
            elif app_id == 0 and tables and "episodes" not in tables:
                refusal = (f"{str(p)!r} is a SQLite database that is not an anneal-memory "
                           "store: choose another path")
        finally:
            conn.close()
        if refusal is not None:
            for side, existed in zip(sides, had):
                if not existed:
                    with contextlib.suppress(OSError):
                        side.unlink()
            raise StoreError(refusal)

    def _init_schema(self) -> None:
        cur = self.conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        legacy = self._legacy
        if cur == 0 and legacy is None and "metadata" in tables and "meta" not in tables:
            raise StoreError(f"{self.path!r} may have been written by anneal-memory 1.0.2: open "
                             "it with anneal_memory.Store, which upgrades it in place")
        if cur == 0 and legacy is not None and legacy.is_legacy_store(self.conn):  # 1.0.2's
            if self.read_only:
                raise StoreError(f"{self.path!r} was written by anneal-memory 1.0.2: open it once "
                                 "without read_only (or run anneal-memory migrate) to upgrade it "
                                 "in place; a backup copy is kept beside it")
            self.legacy_upgrade = legacy.upgrade_store(self.conn, self.path, self.transaction,
                                                       self._create_schema)
            if self.legacy_upgrade is None:  # another process upgraded it meanwhile
                self._init_schema()
            return
        if cur == 0 and tables and "episodes" not in tables:
            raise StoreError(
                f"{self.path!r} is a SQLite database that is not an anneal-memory store: "
                "choose another path"
            )
        if self.read_only:
            if "episodes" not in tables:
                raise StoreError(f"{self.path!r} holds no anneal-memory store yet")
            self._heal_indexes()
            return
        if "episodes" in tables and cur == APPLICATION_ID:
            version = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if version and int(version[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path!r} was written by a newer anneal-memory (schema "
                    f"{version[0]}): upgrade the package"
                )
            if version and int(version[0]) < SCHEMA_VERSION:
                with self.transaction():
                    sqlite_migrate.upgrade(self.conn, int(version[0]), _split_sql(_SCHEMA))
            unused = sqlite_migrate.unused_indexes(self.conn)
            if unused:
                with self.transaction():
                    sqlite_migrate.drop_indexes(self.conn, unused)
            self._heal_indexes()
            if legacy is not None:
                legacy.finish_pending(self.conn, self.path, self.transaction)
            return
        with self.transaction():
            self._create_schema()

    def _create_schema(self) -> None:
        """Our tables, inside the caller's transaction."""
        for stmt in _split_sql(_SCHEMA):
            self.conn.execute(stmt)
        self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        self.conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )

    def close(self) -> None:
        self._shut = True
        self._forget_memo()
        with contextlib.suppress(Exception):
            self.conn.close()
        if self._ro_copy:
            import shutil

            shutil.rmtree(self._ro_copy, ignore_errors=True)
            self._ro_copy = None

    @property
    def closed(self) -> bool:
        if getattr(self, "_shut", False):
            return True
        try:
            self.conn.execute("SELECT 1")
            return False
        except sqlite3().ProgrammingError:
            return True

    def _check_open(self) -> None:
        # a call on a closed Store: the library's error, not sqlite3.ProgrammingError
        if getattr(self, "_shut", False):
            raise StoreError(f"the store {self.path} is closed: open a new Store (or use it "
                             "inside its 'with' block)")

    @contextlib.contextmanager
    def transaction(self, *, appends_only: bool = False) -> Iterator[None]:
        # appends_only changes nothing here: one file has one writer at a time anyway
        if self.read_only:
            raise ReadOnlyStoreError(
                f"the store {self.path!r} was opened read_only: reopen it without read_only "
                "to write"
            )
        self._check_open()
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth, self._writing = 1, True
            self._forget_memo()
            try:
                yield
            except BaseException:
                self._depth, self._writing = 0, False
                with contextlib.suppress(Exception):
                    self.conn.execute("ROLLBACK")
                raise
            self._depth, self._writing = 0, False
            try:
                self.conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite_errors.caught()):
                    sqlite_errors.reraise(exc, self.path)
                raise

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        self._check_open()
        with self._lock:
            if self._depth:
                yield
                return
            self.conn.execute("BEGIN")
            self._depth = 1
            self._snap = {"changes": self.conn.total_changes}
            try:
                yield
            finally:
                self._snap = None
                self._depth = 0
                with contextlib.suppress(Exception):
                    self.conn.execute("COMMIT")

    #: what ``memo`` keeps at most: entries, and their summed ``size`` (the least recently
    #: used go first; at the bound about 20 MB, measured at 10k episodes with tracemalloc)
    MEMO_ENTRIES = 1024
    MEMO_BUDGET = 200_000

    #: what a read snapshot (``read()``) has learnt of its database state, by key: it
    #: cannot change until the snapshot ends (None outside one)
    _snap: dict[Hashable, Any] | None = None

    def _per_snapshot(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``, once per read snapshot: the data version, the store's size,
        whether an episode was backdated, asked by every recall up to four times, cost
        a statement each (a third of a small store's recall). Outside a snapshot, or
        once this connection has written in it, always computed."""
        snap = self._snap
        if snap is None or self._writing or snap["changes"] != self.conn.total_changes:
            return compute()
        if key not in snap:
            snap[key] = compute()
        value: _T = snap[key]
        return value

    def _state(self) -> tuple[int, int]:
        """Which database state this connection reads: ``data_version`` changes when
        another connection commits (read in a snapshot it is the snapshot's, and starts
        it), ``total_changes`` when this one writes a row."""
        return (self._per_snapshot("data_version", lambda: int(
                    self.conn.execute("PRAGMA data_version").fetchone()[0])),
                int(self.conn.total_changes))

    def _top_rowid(self) -> int:
        """The highest row id of the episodes (the store's size while none was deleted)."""
        def top() -> int:
            r = self.q1("SELECT MAX(rowid) FROM episodes")
            return int(r[0] or 0) if r else 0
        return self._per_snapshot("top_rowid", top)

    def memo(self, key: Hashable, compute: Callable[[], _T], *, scope: Scope = ROOT,
             size: Callable[[_T], int] | None = None) -> _T:
        self._check_open()
        with self._lock:
            if self._writing:  # uncommitted rows could still roll back: never kept
                return compute()
            state = self._state()
            if state != self._memo_state:  # written to since: nothing kept still holds
                self._forget_memo()
                self._memo_state = state
            full = (scope, key)
            hit = self._memo.get(full)
            if hit is not None:
                self._memo.move_to_end(full)
                value: _T = hit[1]
                return value
            value = compute()
            if self._state() != state:  # written to while it ran: not kept
                return value
            cost = 1 + (size(value) if size is not None else 0)
            self._memo[full] = (cost, value)
            self._memo_used += cost
            while self._memo and (len(self._memo) > self.MEMO_ENTRIES
                                  or self._memo_used > self.MEMO_BUDGET):
                self._memo_used -= self._memo.popitem(last=False)[1][0]
            return value

    def _forget_memo(self) -> None:
        """Drop what ``memo`` keeps (a write makes all of it stale; an erased episode's
        text must not stay behind in memory either)."""
        self._memo.clear()
        self._memo_used = 0
        self._memo_state = None

    # Each query turns what SQLite cannot do into the library's typed errors (see
    # sqlite_errors): an unstorable value is a ValidationError, a damaged file a StoreError.
    def q(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._check_open()
        with self._lock:  # one connection shared by threads: a statement at a time
            try:
                rows: list[tuple[Any, ...]] = self.conn.execute(sql, tuple(params)).fetchall()
                return rows
            except sqlite_errors.caught() as exc:
                sqlite_errors.reraise(exc, self.path)

    def q1(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        self._check_open()
        with self._lock:
            try:
                row: tuple[Any, ...] | None = self.conn.execute(sql, tuple(params)).fetchone()
                return row
            except sqlite_errors.caught() as exc:
                sqlite_errors.reraise(exc, self.path)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._check_open()
        with self._lock:
            try:
                self.conn.executemany(sql, rows)
            except sqlite_errors.caught() as exc:
                sqlite_errors.reraise(exc, self.path)

    def _stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        cur = self.conn.cursor()  # its own cursor: other statements may run between rows
        try:
            with self._lock:
                cur.execute(sql, tuple(params))
            while True:
                with self._lock:
                    rows = cur.fetchmany(500)
                if not rows:
                    return
                yield from rows
        except sqlite_errors.caught() as exc:
            sqlite_errors.reraise(exc, self.path)

    # ------------------------------------------------------------------ dialect hooks
    def _in_list(self, col: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{col} IN ({','.join('?' * len(ids))})", list(ids)

    def _json_eq(self, col: str, field: str, value: Any) -> tuple[str, list[Any]]:
        if isinstance(value, bool):
            value = int(value)
        return f"json_extract({col}, ?) = ?", [f'$."{field}"', value]

    def _rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        with self._lock:
            try:
                return int(self.conn.execute(sql, tuple(params)).rowcount)
            except sqlite_errors.caught() as exc:
                sqlite_errors.reraise(exc, self.path)

    def _insert_id(self, sql: str, params: Sequence[Any]) -> int:
        with self._lock:
            try:
                return int(self.conn.execute(sql, tuple(params)).lastrowid or 0)
            except sqlite_errors.caught() as exc:
                sqlite_errors.reraise(exc, self.path)

    def _upsert(self, table: str, cols: Sequence[str], key: Sequence[str],
                values: Sequence[Any]) -> None:
        self.q(f"INSERT OR REPLACE INTO {table}({', '.join(cols)}) "
               f"VALUES ({','.join('?' * len(cols))})", values)

    def _insert_ignore(self, table: str, cols: Sequence[str], values: Sequence[Any]) -> None:
        self.q(f"INSERT OR IGNORE INTO {table}({', '.join(cols)}) "
               f"VALUES ({','.join('?' * len(cols))})", values)

    # ------------------------------------------------------------------ episodes
    def scrub_indexes(self) -> None:
        """Rewrite the keyword indexes so deleted text leaves no trace in them (rebuilt
        from the episodes table when an index cannot be merged)."""
        try:
            fts.scrub(self.conn)
        except sqlite3().DatabaseError:
            for table in fts.FTS_TABLES:
                fts.rebuild(self.conn, table)

    def _heal_indexes(self) -> None:
        """Rebuild a keyword index that cannot be opened or has grown past its bound
        (stores damaged by the delete path of earlier releases on older SQLite)."""
        bad = fts.broken_tables(self.conn, sqlite3().DatabaseError)
        if not bad:
            return
        if self.read_only:
            raise StoreError(f"the keyword index of {self.path!r} is damaged: open the store "
                             "once without read_only to rebuild it from the episodes")
        with self.transaction():
            for table in bad:
                fts.rebuild(self.conn, table)

    def checkpoint(self) -> None:
        with contextlib.suppress(sqlite3().DatabaseError):
            self.q("PRAGMA wal_checkpoint(TRUNCATE)")

    # ------------------------------------------------------------------ search
    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> SearchPage:
        """Filtered episodes, newest first or by BM25 rank, plus the total match count.

        ``phrase``: case-insensitive substring of the content. ``words``: any of these
        words (stemmed), ranked by BM25. Neither: every episode the filters allow.
        """
        where, params = self._filter_sql(filters)
        cols = ", ".join(f"e.{c.strip()}" for c in _EP_COLS.split(","))
        fts: str | None = None
        mparams: list[Any]
        interior = None
        if phrase is not None:
            interior = self._interior_src(filters, phrase)
            src, mparams = interior or self._phrase_src(filters, phrase)
            score = "0.0"
            # newest first; while no episode was backdated, recording order is time order
            # and the row id yields it without a sort (the trigram index, or the table read
            # backwards); a scan of one type reads it in time order from the type index
            by_rowid = self._per_snapshot(
                "backdated", lambda: self._meta_sql.get("backdated_episodes")) is None and (
                len(mparams) == 2 or not filters.episode_type)
            # the index's own row id: ordered by e.rowid, SQLite would sort every match
            order_sql = (f"{_rowid_col(mparams)} DESC" if by_rowid
                         else "e.timestamp DESC, e.rowid DESC")
        elif words:
            fts = "episodes_words"
            src, mparams = self._words_src(filters, words)
            score = "-bm25(episodes_words, 1.0, 0.0, 0.0)"
            order_sql = "bm25(episodes_words, 1.0, 0.0, 0.0) ASC, e.timestamp DESC"
        else:
            src = "FROM episodes e WHERE "
            mparams = []
            score = "0.0"
            order_sql = ("e.timestamp DESC, e.rowid DESC" if order == "recent"
                         else "e.timestamp ASC, e.rowid ASC")
        rows: list[tuple[Any, ...]] = []
        if limit:
            rows = self.q(
                f"SELECT {cols}, {score} {src}{where} ORDER BY {order_sql} LIMIT ? OFFSET ?",
                [*mparams, *params, int(limit), int(offset)],
            )
        # a page that is not full from the first row holds every match: no count needed
        if limit and offset == 0 and len(rows) < limit:
            total = len(rows)
        elif interior is not None:  # at most RARE_WORD_ROWS rows, each checked
            total = self._scalar(f"SELECT COUNT(*) {src}{where}", [*mparams, *params])
        elif phrase is not None:
            total = self._phrase_count(phrase, mparams, src, where, params, filters)
            if isinstance(total, EstimatedCount) and total < offset + len(rows):
                # a sample with few matches among many candidates: never fewer than shown
                # (a total of 0 would send recall to the word fallback past a full page)
                total = EstimatedCount(offset + len(rows))
        else:
            total = self._match_count(fts, mparams, src, where, params, filters)
        return SearchPage([(_row(r[:13]), float(r[13] or 0.0)) for r in rows], total)

    def ranked_ids(self, filters: SearchFilters, words: Sequence[str], pool: int
                   ) -> RankedPage:
        """The ``pool`` best word matches, best first, plus the number of matches: row id,
        epoch seconds, BM25 score, and the times of the rows just before and after when
        the filters let them through (None otherwise): ranking needs no row's text."""
        if not words:
            return RankedPage([], 0)
        where, params = self._filter_sql(filters)
        src, mparams = self._words_src(filters, words)
        near = []
        for alias, step in (("p", "- 1"), ("n", "+ 1")):
            nwhere, nparams = self._filter_sql(filters, alias)
            near.append((f"(SELECT {_epoch_sql(alias)} FROM episodes {alias} WHERE "
                         f"{alias}.rowid = h.rowid {step} AND {nwhere})", nparams))
        slack = self._index_only_slack(filters, where)
        walk: tuple[str, list[Any]] | None = None
        matched: int | None = None  # the index's exact count of the matches, when known
        if self._small_scope(filters, rows_at_most=pool):
            # a namespace holding no more rows than the pool: every match is in it, so
            # the index only finds them; BM25 in the index would read every user's
            # rows for its word statistics, and the ranker rescores the pool anyway
            inner = (f"SELECT e.rowid AS rowid, {_epoch_sql('e')} AS t, 1.0 AS score "
                     f"{src}{where} ORDER BY e.rowid DESC LIMIT ?")
            iparams = [*mparams, *params, int(pool)]
        elif self._scalar("SELECT COUNT(*) FROM (SELECT 1 FROM episodes_words WHERE "
                          "episodes_words MATCH ? LIMIT ?)", [*mparams, int(pool) + 1]) <= pool:
            # every match (type and namespace are in the index) fits in the pool: the
            # ranker rescores each, so the index's BM25, the costliest part of the
            # statement, is left out (NaN: see index_scores for the rare match it needs)
            inner = (f"SELECT e.rowid AS rowid, {_epoch_sql('e')} AS t, NULL AS score "
                     f"{src}{where}")
            iparams = [*mparams, *params]
        elif slack is not None:
            # type and namespace are in the index: rank there alone, then drop the few
            # replaced episodes (at most ``slack`` of the best) on their rows
            # a store of at most WORD_WALK rows has no more matches: no walk, and none of
            # its probes (a count of every match, one of each word's)
            walked = (None if self._top_rowid() <= self.WORD_WALK
                      else self._word_walk(filters, words, mparams[0], int(pool) + slack))
            if isinstance(walked, int):  # the walk's probe counted every match
                matched = walked
            else:
                walk = walked
            outside = (self._typed_unwalked(filters, words, matched)
                       if walk is None and matched is not None and filters.episode_type
                       else None)
            if outside is not None:
                ranked, rparams = outside
                rparams = [*rparams, int(pool) + slack]
            elif walk is None:
                ranked = ("SELECT w.rowid AS rowid, -bm25(episodes_words, 1.0, 0.0, 0.0) "
                          "AS score FROM episodes_words w WHERE episodes_words MATCH ? ORDER "
                          "BY bm25(episodes_words, 1.0, 0.0, 0.0) ASC, w.rowid DESC LIMIT ?")
                rparams = [*mparams, int(pool) + slack]
            else:
                ranked, rparams = walk
                rparams = [*rparams, int(pool) + slack]
            inner = (f"SELECT e.rowid AS rowid, {_epoch_sql('e')} AS t, c.score AS score "
                     f"FROM ({ranked}) c CROSS JOIN episodes e ON e.rowid = c.rowid "
                     f"WHERE {where} ORDER BY c.score DESC, e.rowid DESC LIMIT ?")
            iparams = [*rparams, *params, int(pool)]
        else:
            inner = (f"SELECT e.rowid AS rowid, {_epoch_sql('e')} AS t, "
                     f"-bm25(episodes_words, 1.0, 0.0, 0.0) AS score {src}{where} "
                     "ORDER BY bm25(episodes_words, 1.0, 0.0, 0.0) ASC, e.timestamp DESC LIMIT ?")
            iparams = [*mparams, *params, int(pool)]
        rows = self.q(
            # the text of the pool's rows only (the scorer reads it), never in the sort
            f"SELECT h.rowid, h.t, h.score, {near[0][0]}, {near[1][0]}, (SELECT x.content "
            f"FROM episodes x WHERE x.rowid = h.rowid) FROM ({inner}) h "
            "ORDER BY h.score DESC, h.rowid DESC",
            [*near[0][1], *near[1][1], *iparams])
        if walk is not None:  # past the walk: not every match was ranked
            total = self._walked_count(mparams[0])
        elif len(rows) < pool:
            total = len(rows)
        else:
            total = self._match_count("episodes_words", mparams, src, where, params, filters,
                                      matched=matched)
        return RankedPage([RankedHit(int(r[0]), r[1], _NAN if r[2] is None else float(r[2]),
                                     r[3], r[4], r[5]) for r in rows], total)

    #: past this many matches of a word query, its pool is ranked among the newest
    #: WORD_WALK matches and every match of its rare words, not among all of them
    WORD_WALK = 5_000
    #: a query word held by at most this many episodes is rare: all its matches are ranked
    RARE_MATCHES = 2_000

    def _fts_count(self, expr: str, cap: int) -> int:
        """How many rows of the word index match ``expr``, counted up to ``cap``."""
        return self._scalar("SELECT COUNT(*) FROM (SELECT 1 FROM episodes_words WHERE "
                            "episodes_words MATCH ? LIMIT ?)", [expr, int(cap)])

    def _word_walk(self, filters: SearchFilters, words: Sequence[str], expr: str,
                   need: int) -> tuple[str, list[Any]] | int:
        """The bounded candidates of a word query matching more than WORD_WALK rows
        (when it matches fewer, how many it matches, exactly: then every match is
        ranked, as before, and the count is not asked again).

        The index's BM25 of every match costs in proportion to the matches (a common
        word is in a tenth of a store's episodes); ranked here instead: the newest
        WORD_WALK matches, and every match of each query word held by at most
        RARE_MATCHES episodes (the words that decide a ranking), each by the index's
        BM25 (the rare words' own matches by the rare words' BM25, a lower bound of
        their score for the whole query). SQL with its parameters, less the LIMIT's.

        A word is rare by its episodes of every type (a typed query's rare words are
        the untyped query's). A typed query is walked the same way with the type
        outside BM25 (see _typed_walk): its candidates are then the type's matches among
        the newest WORD_WALK matches of the words (never fewer than ``need``, the rows
        its caller ranks, when the type has that many), not the newest WORD_WALK of the
        type. Both change a result only for a typed query whose words match more than
        WORD_WALK episodes of its type (under that, no walk: every match is ranked).
        """
        probe = self.q1("SELECT COUNT(*), MAX(rowid) FROM (SELECT rowid FROM episodes_words "
                        "WHERE episodes_words MATCH ? LIMIT ?)", [expr, self.WORD_WALK + 1])
        if not probe or int(probe[0]) <= self.WORD_WALK:
            return int(probe[0]) if probe else 0
        self._per_snapshot(("walk_reach", expr), lambda: int(probe[1]))
        bare = SearchFilters(episode_type=filters.episode_type, scope=filters.scope)
        # a word's rarity among every type's episodes (as BM25's IDF): counting a type's
        # matches is an AND with the type's doclist, ten times the cost (2 ms a word at
        # three million episodes against 0.2)
        counted = SearchFilters(scope=filters.scope)
        rare = []
        for word in words:
            wexpr = _with_type(f"content : {fts_quote(spell_letters(word))}", counted,
                               ns=True)
            if 0 < self._fts_count(wexpr, self.RARE_MATCHES + 1) <= self.RARE_MATCHES:
                rare.append(fts_quote(spell_letters(word)))
        if filters.episode_type:
            parts, params = self._typed_walk(filters, words, rare, need)
        else:
            parts = [f"SELECT * FROM (SELECT w.rowid AS rowid, {_WORD_SCORE} AS score FROM "
                     "episodes_words w WHERE episodes_words MATCH ? ORDER BY w.rowid DESC "
                     "LIMIT ?)"]
            params = [expr, self.WORD_WALK]
            if rare:
                parts.append(f"SELECT w.rowid AS rowid, {_WORD_SCORE} AS score FROM "
                             "episodes_words w WHERE episodes_words MATCH ?")
                params.append(_with_type("content : (" + " OR ".join(rare) + ")", bare,
                                         ns=True))
        sql = (f"SELECT rowid, MAX(score) AS score FROM ({' UNION ALL '.join(parts)}) "
               "GROUP BY rowid ORDER BY score DESC, rowid DESC LIMIT ?")
        return sql, params

    #: a typed query under the walk's bound is scored with the type outside BM25 while
    #: the words' matches number at most sqrt(store rows * typed matches / this)
    TYPE_OUTSIDE = 6

    def _typed_unwalked(self, filters: SearchFilters, words: Sequence[str], typed: int
                        ) -> tuple[str, list[Any]] | None:
        """Every match of a typed query under the walk's bound (``typed`` of them), ranked
        with the type outside BM25, when that costs less; None otherwise.

        With the type in the query, BM25 reads the type's whole doclist (its rows R: 6.5
        ms for 150,000 at a million episodes, and in proportion beyond); with the type
        outside it reads the words' every match (U) instead, checked against the typed
        AND (the same rows, the same scores to the bit: a type weighs 0). Measured at a
        million episodes (54 bench queries of two types), outside costs less while U is
        under about R/6; R/U is about the store's rows over the query's typed matches
        (the type's share of the query's matches as of the store's), so outside is taken
        while U <= sqrt(rows * typed / TYPE_OUTSIDE), counted up to that bound. The
        result is the same either way: only the cost differs."""
        untyped = SearchFilters(scope=filters.scope)
        content = _any_word(words)
        words_expr = _with_type(content, untyped, ns=True)
        bound = math.isqrt(self._top_rowid() * max(1, typed) // self.TYPE_OUTSIDE)
        if self._fts_count(words_expr, bound + 1) > bound:
            return None
        return (f"SELECT w.rowid AS rowid, {_WORD_SCORE} AS score FROM episodes_words w "
                "WHERE episodes_words MATCH ? AND +w.rowid IN (SELECT rowid FROM "
                "episodes_words WHERE episodes_words MATCH ?) ORDER BY score DESC, "
                "w.rowid DESC LIMIT ?", [words_expr, _with_type(content, filters, ns=True)])

    def _typed_walk(self, filters: SearchFilters, words: Sequence[str], rare: list[str],
                    need: int) -> tuple[list[str], list[Any]]:
        """The walk's scored parts for a typed query, with the type outside BM25.

        BM25 in the index reads the whole doclist of every phrase of its query for the
        statistics, the type's too (a fifth of all rows or more: 6.5 ms at a million
        episodes, growing with the store), though a type's weight is 0, so its part of
        every score is exactly 0.0: a match scored by the words alone has the very score
        it has with the type in the query. Here BM25 sees the words only; the type is
        an unscored AND in the index, kept as a row id set the scored rows are checked
        against. The newest part is bounded by the words' WORD_WALK-th newest match (of
        any type): the type's matches among those (about WORD_WALK times the type's
        share) are scored, instead of the newest WORD_WALK matches of the type, which
        would take the words' matches back 1/share as far, each read and checked; the
        bound reaches back further when that is needed for the newest ``need`` matches of
        the type (a rare type: a page is never short while the type has more matches).
        Results change only for a typed query whose words match more than WORD_WALK
        episodes of the type (when the walk is taken at all): below that every match is
        ranked as before, and every match of a rare word is scored either way."""
        untyped = SearchFilters(scope=filters.scope)
        content = _any_word(words)
        words_expr = _with_type(content, untyped, ns=True)
        typed = _with_type(content, filters, ns=True)
        newest = ("(SELECT MIN(rowid) FROM (SELECT rowid FROM episodes_words WHERE "
                  "episodes_words MATCH ? ORDER BY rowid DESC LIMIT ?))")
        reach = self.q1(f"SELECT {newest}, {newest}",
                        [words_expr, self.WORD_WALK, typed, int(need)])
        low = min((int(r) for r in reach or () if r is not None), default=0)
        typed_in = "+w.rowid IN (SELECT rowid FROM episodes_words WHERE episodes_words MATCH ?"
        # its own LIMIT (never reached: the range holds at most that many) keeps the part
        # a subquery, so BM25 is never flattened into the walk's MAX()
        parts = [f"SELECT * FROM (SELECT w.rowid AS rowid, {_WORD_SCORE} AS score FROM "
                 f"episodes_words w WHERE episodes_words MATCH ? AND w.rowid >= ? AND "
                 f"{typed_in} AND rowid >= ?) ORDER BY w.rowid DESC LIMIT ?)"]
        params: list[Any] = [words_expr, low, typed, low, max(self.WORD_WALK, int(need))]
        if rare:
            rare_content = "content : (" + " OR ".join(rare) + ")"
            parts.append(f"SELECT w.rowid AS rowid, {_WORD_SCORE} AS score FROM "
                         f"episodes_words w WHERE episodes_words MATCH ? AND {typed_in})")
            params += [_with_type(rare_content, untyped, ns=True),
                       _with_type(rare_content, filters, ns=True)]
        return parts, params

    def _walked_count(self, expr: str) -> int:
        """The matches of a word query past WORD_WALK, estimated as the phrase count is:
        the oldest WORD_WALK + 1 matches (the walk's probe), scaled by the share of the
        row ids they span."""
        reach = self._per_snapshot(("walk_reach", expr), lambda: None)
        if reach is None:  # outside a snapshot: the probe again
            r = self.q1("SELECT MAX(rowid) FROM (SELECT rowid FROM episodes_words WHERE "
                        "episodes_words MATCH ? LIMIT ?)", [expr, self.WORD_WALK + 1])
            reach = int(r[0]) if r and r[0] is not None else None
        ends = self.q1("SELECT (SELECT MIN(rowid) FROM episodes), (SELECT MAX(rowid) FROM episodes)")
        if reach is None or not ends or ends[0] is None:
            return 0
        lo, hi = int(ends[0]), int(ends[1])
        n = self.WORD_WALK + 1
        return EstimatedCount(round(n * (hi - lo + 1) / max(1, reach - lo + 1)))

    def index_scores(self, filters: SearchFilters, words: Sequence[str],
                     rowids: Sequence[int]) -> dict[int, float]:
        """The word index's BM25 score of the matches at these row ids, as ``ranked_ids``
        scores them. Asked only when every match fitted in the pool, so the whole match
        is scored once (FTS5 would run the query again for each row id of an IN list)."""
        _src, mparams = self._words_src(filters, words)
        wanted = set(rowids)
        return {int(r[0]): float(r[1] or 0.0) for r in self.q(
            "SELECT rowid, -bm25(episodes_words, 1.0, 0.0, 0.0) FROM episodes_words "
            "WHERE episodes_words MATCH ?", mparams) if int(r[0]) in wanted}

    def times_by_rowid(self, rowids: Sequence[int], filters: SearchFilters
                       ) -> dict[int, float | None]:
        where, params = self._filter_sql(filters)
        out: dict[int, float | None] = {}
        rowids = list(rowids)
        for i in range(0, len(rowids), self._IN_CHUNK):
            chunk = rowids[i:i + self._IN_CHUNK]
            # found by row id: left to choose, the planner walks every row of a type filter's
            # type off the type index instead (170 ms at a million episodes)
            for r in self.q(f"SELECT e.rowid, {_epoch_sql('e')} FROM episodes e NOT INDEXED "
                            f"WHERE e.rowid IN ({_marks(chunk)}) AND {where}",
                            [*_padded(chunk), *params]):
                out[int(r[0])] = r[1]
        return out

    #: past this many replaced episodes, ranked words are filtered on every match's row
    INDEX_ONLY_SLACK = 1000

    def _index_only_slack(self, filters: SearchFilters, where: str) -> int | None:
        """How many extra index hits cover the replaced episodes a ranking must skip, when
        the index can rank alone (no filter but type, namespace and superseded); None when
        every match must be filtered on its row first."""
        if filters.scope.owner is not None or filters.scope.unscoped_only:
            return None
        bare, _ = SQLiteBackend._filter_sql(self, SearchFilters(
            include_superseded=filters.include_superseded, episode_type=filters.episode_type))
        if where != bare:
            return None
        if filters.include_superseded:
            return 0
        n = self._scalar("SELECT COUNT(*) FROM (SELECT 1 FROM supersessions LIMIT ?)",
                         [self.INDEX_ONLY_SLACK + 1])
        return n if n <= self.INDEX_ONLY_SLACK else None

    def _phrase_src(self, filters: SearchFilters, phrase: str) -> tuple[str, list[Any]]:
        """FROM/WHERE head of a substring search. The trigram index (row ids per trigram)
        narrows the rows, the row itself decides; a namespace holding few episodes, or a
        phrase too short for a trigram, is searched from its rows alone."""
        test, needle = _contains_test(phrase)
        grams = None if self._few_rows(filters) else self._narrowest_grams(phrase)
        if not grams:
            return f"FROM episodes e WHERE {test} AND ", [needle]
        return ("FROM episodes_tri t CROSS JOIN episodes e ON e.rowid = t.rowid "
                f"WHERE episodes_tri MATCH ? AND {test} AND ",
                [_gram_and(grams), needle])

    #: past LARGE_STORE row ids a substring search intersects PHRASE_GRAMS trigrams of the
    #: phrase, one from each stretch of it: the one its index holds least often
    PHRASE_GRAMS = 4
    #: each trigram's share of the rows is estimated from its first GRAM_SAMPLE row ids
    GRAM_SAMPLE = 64
    #: at most this many of a long phrase's trigrams are sampled (evenly spread over it)
    SAMPLED_GRAMS = 16

    def _narrowest_grams(self, phrase: str) -> list[str]:
        """The trigrams a substring search intersects: :func:`trigrams` (the rarest-looking
        by their letters) up to LARGE_STORE row ids; past it, of each of PHRASE_GRAMS
        stretches of the phrase, the trigram the index holds least often, by its first
        GRAM_SAMPLE row ids (one statement, ~0.05 ms a trigram at a million episodes).

        FTS5 intersects by seeking each trigram's doclist to the next candidate of the
        others, so the AND costs in proportion to its rarest trigram's rows times its
        trigrams, and the row check to the rows the AND lets through: a common trigram
        the letters call rare ("ing": three quarters of the episodes) costs a seek per
        candidate and narrows nothing, and trigrams of one stretch (of one word) narrow
        little more than one of them. The candidates only change, never the result (every
        row is checked for the phrase). Measured on the phrase class (the page statement
        plus this one, CPU, warm, 200 queries): p95 7.6 ms against 17.1 with
        :func:`trigrams` at 1M (mean 2.6 against 4.2), 16.1 against 34.2 at 3M (4.8
        against 8.2); the five least held wherever they are: 11.0 and 17.0."""
        grams = trigrams(phrase)
        top = self._top_rowid()
        # ASCII only: an episode holding an ASCII phrase (LIKE folds ASCII case, as the
        # trigram tokenizer does) holds every trigram of it, so any of them find it; a
        # non-ASCII phrase is checked by Python's lower(), whose folding FTS5's need not
        # share for every letter, so it keeps the trigrams it always had
        if top <= self.LARGE_STORE or not grams or not phrase.isascii():
            return grams
        n = len(phrase) - 2
        if n <= self.PHRASE_GRAMS:  # every trigram is one stretch: trigrams() has them all
            return grams
        starts = (list(range(n)) if n <= self.SAMPLED_GRAMS
                  else [k * n // self.SAMPLED_GRAMS for k in range(self.SAMPLED_GRAMS)])
        slot: dict[str, int] = {}  # a trigram (folded) -> its sample
        for i in starts:
            slot.setdefault(phrase[i:i + 3].lower(), len(slot))
        arm = ("SELECT COUNT(*), MAX(rowid) FROM (SELECT rowid FROM episodes_tri WHERE "
               "episodes_tri MATCH ? ORDER BY rowid LIMIT ?)")
        sql = " UNION ALL ".join(f"SELECT {k}, * FROM ({arm})" for k in range(len(slot)))
        est = [0.0] * len(slot)
        for k, held, last in self.q(sql, [a for g in slot
                                          for a in (fts_quote(g), self.GRAM_SAMPLE)]):
            # fewer than the sample: that is every row holding it; else scaled by the
            # share of the row ids its first GRAM_SAMPLE span
            est[int(k)] = (float(held) if int(held) < self.GRAM_SAMPLE
                           else self.GRAM_SAMPLE * top / max(1, int(last)))
        parts = min(self.PHRASE_GRAMS, len(starts))
        chosen: dict[str, str] = {}
        for k in range(parts):
            stretch = starts[k * len(starts) // parts:(k + 1) * len(starts) // parts]
            best = min(stretch, key=lambda i: (est[slot[phrase[i:i + 3].lower()]], i))
            chosen.setdefault(phrase[best:best + 3].lower(), phrase[best:best + 3])
        return list(chosen.values())

    #: past this many row ids a store is large: a substring search may be narrowed by the
    #: word index (_interior_src) and counts exactly up to EXACT_COUNT_LARGE candidates
    #: only (_phrase_count); below it the trigram AND costs little, as every exact count
    LARGE_STORE = 100_000
    #: a whole word of a phrase held by at most this many episodes narrows its search
    RARE_WORD_ROWS = 2000
    #: at most this many of a phrase's whole words (the longest, of four characters or
    #: more) are counted
    INTERIOR_WORDS = 4

    def _interior_src(self, filters: SearchFilters, phrase: str) -> tuple[str, list[Any]] | None:
        """FROM/WHERE head of a substring search narrowed by the word index, or None.

        The trigram AND of a phrase matching nothing reads every trigram's whole doclist
        (a whole question: 10-20 ms at a million episodes). A whole word inside an ASCII
        phrase (letters and digits with an ASCII non-alphanumeric character on each side,
        within the phrase) is a whole word of every episode containing the phrase, a
        token of the word index whatever the case (the indexed text differs from the
        episode's only in non-ASCII letters, and both sides are tokenized and stemmed
        alike): the episodes holding all of the phrase's rare whole words (each in at most
        RARE_WORD_ROWS episodes) hold every match, and each is checked on its row, so the
        result and the count are exact (an exact count where the trigram path would
        estimate one). Used past LARGE_STORE row ids only, when the trigram path
        would be, the phrase has such a rare word, and neither edge word (which may be
        part of a longer word: "cat" in "concatenate") is needed."""
        folded = phrase.lower()
        if not folded.isascii() or len(folded) > _LIKE_CHARS:
            return None
        if self._top_rowid() <= self.LARGE_STORE or self._few_rows(filters) \
                or not trigrams(phrase):
            return None
        # the longest (a word of three letters or fewer is nearly always common: not
        # worth counting)
        words = sorted((w for w in interior_words(folded) if len(w) >= 4), key=len,
                       reverse=True)[:self.INTERIOR_WORDS]
        if not words:
            return None
        heads = ", ".join(["(SELECT COUNT(*) FROM (SELECT 1 FROM episodes_words WHERE "
                           "episodes_words MATCH ? LIMIT ?))"] * len(words))
        cap = self.RARE_WORD_ROWS + 1
        counts = self.q1("SELECT " + heads, [a for w in words
                                             for a in (f"content : {fts_quote(w)}", cap)])
        rare = [w for w, n in zip(words, counts or ()) if int(n) <= self.RARE_WORD_ROWS]
        if not rare:
            return None
        test, needle = _contains_test(phrase)
        expr = "content : (" + " AND ".join(fts_quote(w) for w in rare) + ")"
        # the index's alias is t, as the trigram path's: the page is read in its row ids
        return ("FROM episodes_words t CROSS JOIN episodes e ON e.rowid = t.rowid "
                f"WHERE episodes_words MATCH ? AND {test} AND ", [expr, needle])

    def _words_src(self, filters: SearchFilters, words: Sequence[str]) -> tuple[str, list[Any]]:
        """FROM/WHERE head of a ranked word search (type and namespace inside the index)."""
        expr = _any_word(words)
        if self._small_scope(filters):  # the namespace's own rows, one index seek each
            return ("FROM episodes e CROSS JOIN episodes_words w ON w.rowid = e.rowid "
                    "WHERE episodes_words MATCH ? AND ", [_with_type(expr, filters)])
        return ("FROM episodes_words w CROSS JOIN episodes e ON e.rowid = w.rowid "
                "WHERE episodes_words MATCH ? AND ", [_with_type(expr, filters, ns=True)])

    #: the page size of a new store's file. A durable record writes every page it touched
    #: (about 20: the row, its indexes, both keyword indexes' new segments, the audit
    #: entry) to the write-ahead log before its sync, so smaller pages halve what each
    #: sync waits for; below 2048 the keyword indexes' 1000-byte blocks would overflow
    PAGE_SIZE = 2048

    #: a namespace is searched from its own rows while it holds fewer than 1/SCOPE_SHARE
    #: of the store's episodes (its rows then cost less than the index's matches)
    SCOPE_SHARE = 50
    #: up to this many rows, checking each row (in time order, stopping at a full page)
    #: costs less than the trigram lookups: a small store never pays a large one's plan.
    #: Measured (CPU instructions per query, issue 35's mixed workload): a 1,000-episode
    #: store or 800 rows of one type in 10,000 scan cheaper, 1,500 rows of one type no
    SCAN_ROWS = 1000

    def _small_scope(self, filters: SearchFilters, size: int | None = None, *,
                     rows_at_most: int | None = None) -> bool:
        """Whether ``filters`` name a namespace holding under 1/SCOPE_SHARE of the store
        (and, with ``rows_at_most``, no more rows than that)."""
        scope = filters.scope
        if scope.owner is None:
            return False
        if size is None:
            size = self._top_rowid()
        cap = size // self.SCOPE_SHARE
        if rows_at_most is not None:
            cap = min(cap, rows_at_most + 1)
        if cap < 1:
            return False
        r = self.q1("SELECT COUNT(*) FROM (SELECT 1 FROM episodes WHERE ns_owner = ? AND "
                    "(ns_project IS NULL OR ns_project = ?) LIMIT ?)",
                    (scope.owner, scope.project or "", cap))
        return r is not None and int(r[0]) < cap

    def _few_rows(self, filters: SearchFilters) -> bool:
        """Whether the rows ``filters`` allow are few enough to check one by one: a small
        store, a rare episode type, or a namespace holding a small share of the store."""
        size = self._top_rowid()
        if size <= self.SCAN_ROWS:
            return True
        if self._small_scope(filters, size):
            return True
        if filters.episode_type:
            r = self.q1("SELECT COUNT(*) FROM (SELECT 1 FROM episodes WHERE type = ? LIMIT ?)",
                        (filters.episode_type, self.SCAN_ROWS + 1))
            return r is not None and int(r[0]) <= self.SCAN_ROWS
        return False

    #: a substring search counts its matches exactly while the trigram index offers at
    #: most this many rows (each is checked on its row); past it an unfiltered search
    #: checks the first SAMPLE_ROWS of them and scales
    EXACT_COUNT = 10_000
    SAMPLE_ROWS = 1000
    #: EXACT_COUNT of a store past LARGE_STORE row ids: there the walk to one past the
    #: bound reads a large share of the trigrams' doclists (10-15 ms at a million
    #: episodes) and the count checks up to that many rows, for a figure that is an
    #: estimate past the bound either way
    EXACT_COUNT_LARGE = 1000

    def _phrase_count(self, phrase: str, mparams: list[Any], src: str, where: str,
                      params: list[Any], filters: SearchFilters) -> int:
        """How many episodes contain the phrase. Exact, unless the trigram index offers
        more than EXACT_COUNT rows (EXACT_COUNT_LARGE in a store past LARGE_STORE row
        ids) to a search with no filter but type and superseded:
        then the share of matches among the first SAMPLE_ROWS of them, times the number
        the index offers (from how densely its first EXACT_COUNT + 1 fill the row ids),
        returned as an :class:`EstimatedCount`."""
        bare, _ = SQLiteBackend._filter_sql(self, SearchFilters(
            include_superseded=filters.include_superseded, episode_type=filters.episode_type))
        if len(mparams) != 2 or where != bare:
            return self._scalar(f"SELECT COUNT(*) {src}{where}", [*mparams, *params])
        # the index's row ids up to one past the bound, walked once: the whole intersection
        # of a common phrase's trigrams (10-20 ms in a million episodes) is never walked
        bound = (self.EXACT_COUNT if self._top_rowid() <= self.LARGE_STORE
                 else self.EXACT_COUNT_LARGE)
        # the candidates of trigrams(), whatever the page intersected (_narrowest_grams):
        # the count and whether it is an estimate depend on the candidates offered
        offered = [int(r[0]) for r in self.q(
            "SELECT rowid FROM episodes_tri WHERE episodes_tri MATCH ? ORDER BY rowid "
            "LIMIT ?", [_gram_and(trigrams(phrase)), bound + 1])]
        if len(offered) <= bound:
            return self._count_among(offered, where, [mparams[1], *params], phrase)
        ends = self.q1(  # two lookups: MIN and MAX in one aggregate scan the table
            "SELECT (SELECT MIN(rowid) FROM episodes), (SELECT MAX(rowid) FROM episodes)")
        lo, hi = (int(ends[0]), int(ends[1])) if ends else (1, offered[-1])
        sample = offered[:self.SAMPLE_ROWS]
        hit = self._count_among(sample, where, [mparams[1], *params], phrase)
        share = len(offered) * (hi - lo + 1) / (offered[-1] - lo + 1)
        return EstimatedCount(round(share * hit / len(sample)))

    def _count_among(self, rowids: list[int], where: str, params: list[Any],
                     phrase: str) -> int:
        """How many of the rows at ``rowids`` contain the phrase and pass ``where``. Each
        row is found by its row id: left to choose, the planner would walk every row of
        the filter's type off the type index instead (200,000 of a million)."""
        test, _needle = _contains_test(phrase)
        n = 0
        for i in range(0, len(rowids), self._IN_CHUNK):
            chunk = rowids[i:i + self._IN_CHUNK]
            n += self._scalar(f"SELECT COUNT(*) FROM episodes e NOT INDEXED WHERE e.rowid IN "
                              f"({_marks(chunk)}) AND {test} AND {where}",
                              [*_padded(chunk), *params])
        return n

    def _match_count(self, fts: str | None, mparams: list[Any], src: str, where: str,
                     params: list[Any], filters: SearchFilters, *,
                     matched: int | None = None) -> int:
        """How many episodes match: the ones the other filters pass, less the replaced
        ones among them (reached from the few replacement links), rather than a probe of
        every row for a replacement. A word search with no filter but the superseded
        one counts in the full-text index alone (``matched``: that count, when the
        caller has it already: the word walk's probe counts a query's every match up to
        WORD_WALK)."""
        replaced = (not filters.include_superseded
                    and self.q1("SELECT 1 FROM supersessions LIMIT 1") is not None)
        if fts is None:
            allw, allp = self._filter_sql(dataclasses.replace(filters, include_superseded=True))
            n = self._scalar("SELECT COUNT(*) FROM episodes" if allw == "TRUE" else
                             f"SELECT COUNT(*) FROM episodes e WHERE {allw}", allp)
            if replaced:
                n -= self._scalar("SELECT COUNT(*) FROM (SELECT DISTINCT old_id FROM "
                                  "supersessions) s CROSS JOIN episodes e ON e.id = s.old_id "
                                  f"WHERE {allw}", allp)
            return n
        bare, _ = SQLiteBackend._filter_sql(self, SearchFilters(
            include_superseded=filters.include_superseded, episode_type=filters.episode_type))
        if where != bare:
            return self._scalar(f"SELECT COUNT(*) {src}{where}", [*mparams, *params])
        n = (matched if matched is not None else
             self._scalar(f"SELECT COUNT(*) FROM {fts} WHERE {fts} MATCH ?", mparams))
        if replaced:
            n -= self._scalar(
                "SELECT COUNT(*) FROM (SELECT DISTINCT old_id FROM supersessions) s "
                f"CROSS JOIN episodes e ON e.id = s.old_id CROSS JOIN {fts} f "
                f"ON f.rowid = e.rowid WHERE {fts} MATCH ?", mparams)
        return n

    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]:
        """Episodes at these row ids that pass ``filters``."""
        out: dict[int, EpisodeRow] = {}
        rowids = list(rowids)
        where, params = self._filter_sql(filters)
        cols = ", ".join(f"e.{c.strip()}" for c in _EP_COLS.split(","))
        for i in range(0, len(rowids), 500):
            chunk = rowids[i:i + 500]
            for r in self.q(f"SELECT {cols} FROM episodes e NOT INDEXED WHERE e.rowid IN "
                            f"({_marks(chunk)}) AND {where}", [*_padded(chunk), *params]):
                out[int(r[0])] = _row(r)
        return out

    def word_counts(self, filters: SearchFilters, words: Sequence[str], cap: int
                    ) -> WordCounts:
        """(episodes, how many hold each word up to ``cap``), in the word index: the
        namespace's when the filters have one, else the whole store (as FTS5's BM25).
        One statement."""
        scope = filters.scope
        if scope.owner is None and not scope.unscoped_only:
            heads, args = ["(SELECT COALESCE(MAX(rowid), 0) FROM episodes)"], []
        else:
            extra, vparams = visible_sql(scope)
            heads, args = [f"(SELECT COUNT(*) FROM episodes WHERE 1{extra})"], list(vparams)
        bare = SearchFilters(scope=scope)
        for word in words:
            query = _with_type(f"content : {fts_quote(spell_letters(word))}", bare, ns=True)
            if scope.unscoped_only:  # no index word marks "no namespace": check the rows
                extra, vparams = visible_sql(scope, "e")
                heads.append("(SELECT COUNT(*) FROM (SELECT 1 FROM episodes_words w CROSS "
                             "JOIN episodes e ON e.rowid = w.rowid WHERE episodes_words "
                             f"MATCH ?{extra} LIMIT ?))")
                args += [query, *vparams, int(cap)]
                continue
            heads.append("(SELECT COUNT(*) FROM (SELECT 1 FROM episodes_words WHERE "
                         "episodes_words MATCH ? LIMIT ?))")
            args += [query, int(cap)]
        r = self.q1("SELECT " + ", ".join(heads), args) or (0,)
        return WordCounts(int(r[0] or 0), {w: int(n or 0) for w, n in zip(words, r[1:])})

    def integrity_check(self) -> str:
        return str(self.q1("PRAGMA integrity_check")[0])  # type: ignore[index]


#: the lengths a list of row ids is padded to (the last: SQLiteBackend._IN_CHUNK), so
#: that a statement reading rows by id has a few texts, each prepared once and then
#: found in the connection's statement cache: parsing a list of 300 placeholders cost
#: more than the 300 seeks it asks for (a third of a ranked recall's SQL at 1,000
#: episodes)
_IN_SIZES = (8, 16, 32, 64, 128, 256, 500)


def _in_size(n: int) -> int:
    """The padded length of a list of ``n`` row ids (``n`` itself past the largest)."""
    for size in _IN_SIZES:
        if n <= size:
            return size
    return n


def _marks(ids: Sequence[int]) -> str:
    """The placeholders of a padded ``IN`` list of ``ids`` (see _padded)."""
    return ",".join("?" * _in_size(len(ids)))


def _padded(ids: Sequence[int]) -> list[int]:
    """``ids`` padded to their _in_size with copies of the first: a value repeated in an
    ``IN`` list matches what it matched once, so the rows read are the same."""
    out = list(ids)
    if out:
        out += [out[0]] * (_in_size(len(out)) - len(out))
    return out


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
