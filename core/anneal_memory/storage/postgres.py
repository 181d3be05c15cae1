"""The PostgreSQL backend: one memory shared by many agents on many hosts.

Same methods and semantics as the SQLite backend. A write transaction takes one
transaction-scoped advisory lock before its first statement, so writers are
serialized across processes and hosts exactly as SQLite's ``BEGIN IMMEDIATE``
serializes them: every check-then-write (the audit tip, the one open wrap, a link's
target) sees the latest committed state. An appends-only transaction (plain records:
new rows and their audit entries) takes it at its first audit append instead, or
before it writes a shared metadata row, so hosts insert side by side. Reads run in a repeatable-read snapshot.
Connections come from a pool shared by every Store of the process on the same URL.
Needs the ``postgres`` extra (psycopg 3, psycopg-pool).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from ..clock import now_iso
from ..errors import ReadOnlyStoreError, StoreError
from . import pg_schema
from .audit_sql import GENESIS_TIP, AuditSQL
from .base import (
    EpisodeRow,
    EstimatedCount,
    RankedHit,
    RankedPage,
    Scope,
    SearchFilters,
    SearchPage,
)
from .common import (
    EP_COLS,
    MAX_TRIGRAMS,
    SQLBackend,
    episode_row,
    like_pattern,
    qmark_to_format,
    trigrams,
    visible_sql,
)
from .meta_sql import MetaSQL
from .pg_location import redact
from .rows import AuditRowValues, AuditTip, WordCounts

try:
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise StoreError("the PostgreSQL backend needs the postgres extra: "
                     "pip install 'anneal-memory[postgres]'") from exc

_E_COLS = ", ".join(f"e.{c.strip()}" for c in EP_COLS.split(","))

_pools: dict[tuple[str, bool], list[Any]] = {}  # (dsn, read_only) -> [pool, users]
_pools_lock = threading.Lock()


def _session(conn: Any) -> None:
    """Session settings of every pooled connection. JIT compilation off: the planner
    compiles a statement whose estimated cost passes ``jit_above_cost``, which a large
    store's recall statements do (a count of 20,000 matches, a walk of 5,000), and at
    50-100 ms a compile costs more than the statement it speeds up (EXPLAIN ANALYZE at a
    million episodes: 106 ms of JIT in a 300 ms word count). A server without JIT (or
    older than 11, without the setting) is left as it is."""
    with contextlib.suppress(psycopg.Error):
        conn.execute("SET jit = off")


def _read_only_session(conn: Any) -> None:
    # A session setting, not the URL's ``options``: that would replace the user's own
    # (a search_path, for instance).
    _session(conn)
    conn.execute("SET default_transaction_read_only = on")


def _acquire_pool(dsn: str, read_only: bool, size: int, timeout: int) -> Any:
    with _pools_lock:
        entry = _pools.get((dsn, read_only))
        if entry is None or entry[0].closed:
            kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": timeout}
            pool = ConnectionPool(dsn, min_size=1, max_size=size, kwargs=kwargs, open=False,
                                  check=ConnectionPool.check_connection,
                                  configure=_read_only_session if read_only else _session,
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



#: the "cap" of a count kept exactly (see PostgresBackend._memo_get)
_EXACT = 2 ** 62

#: ranked word search: each word a bound parameter of ``phraseto_tsquery`` (no syntax)
_WORDS_SCORE = "ts_rank_cd(e.content_tsv, tq.q, 1)"


#: the word vectors' most common stems and their estimated episodes (ANALYZE's sample)
_STATS_CTE = (
    "WITH st AS MATERIALIZED (SELECT x.e, x.f * c.reltuples AS est FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_stats s ON s.schemaname "
    "= n.nspname AND s.tablename = c.relname AND s.attname = 'content_tsv' CROSS "
    "JOIN LATERAL unnest(s.most_common_elems::text::text[], "
    "s.most_common_elem_freqs) AS x(e, f) WHERE c.oid = 'episodes'::regclass) ")


def _epoch_sql(alias: str) -> str:
    """An episode's timestamp as epoch seconds."""
    return f"EXTRACT(EPOCH FROM {alias}.timestamp::timestamptz)"


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _phrase_src(phrase: str) -> tuple[str, list[Any]]:
    """FROM/WHERE head of a substring search. pg_trgm's index intersects the row lists of
    every trigram of an ILIKE pattern: for a long phrase (a whole question) that is dozens
    of lists, common ones among them. A long phrase is narrowed in the index by its
    rarest-looking trigrams only, then checked whole on each row (an expression the
    index cannot serve)."""
    grams = trigrams(phrase, ascii_words=True)
    if len(grams) < MAX_TRIGRAMS or len(phrase) <= 3 * MAX_TRIGRAMS:
        return "FROM episodes e WHERE e.content ILIKE ? AND ", [like_pattern(phrase)]
    narrow = "".join("e.content ILIKE ? AND " for _ in grams)
    return (f"FROM episodes e WHERE {narrow}(e.content || '') ILIKE ? AND ",
            [*(f"%{g}%" for g in grams), like_pattern(phrase)])


def _tsquery_sql(n: int) -> str:
    """A query matching any of ``n`` words, each a bound parameter (no query syntax)."""
    return " || ".join(["phraseto_tsquery('anneal_words'::regconfig, ?)"] * n)


def _words_src(words: Sequence[str]) -> tuple[str, list[Any]]:
    return (f"FROM episodes e, (SELECT {_tsquery_sql(len(words))} AS q) tq WHERE "
            "e.content_tsv @@ tq.q AND ", list(words))

class PostgresAuditSQL(AuditSQL):
    """The audit statements on PostgreSQL: the chain is kept in full, shared by every
    host; an appends-only transaction takes the write lock at its first append (with
    the tip's read, in one round trip), so the tip it reads stays the tip."""

    __slots__ = ()
    db: PostgresBackend

    def tip(self) -> AuditTip:
        tip = self.db._locked_tip()
        return super().tip() if tip is None else tip

    def insert_rows(self, rows: Sequence[AuditRowValues]) -> None:
        self.db._lock_for_append()
        super().insert_rows(rows)


class PostgresMetaSQL(MetaSQL):
    """The metadata statements on PostgreSQL, whose blobs are a table every host shares."""

    __slots__ = ()
    db: PostgresBackend

    # a metadata row is shared by every writer: an appends-only transaction that would
    # lock one (a backdated episode's flag) takes the write lock first, so it never
    # holds a row another writer waits for while it waits for the write lock
    def set(self, key: str, value: str | None) -> None:
        self.db._lock_for_append()
        super().set(key, value)

    def add_int(self, key: str, delta: int) -> None:
        self.db._lock_for_append()
        super().add_int(key, delta)

    def read_blob(self, name: str) -> str | None:
        r = self.db.q1("SELECT body FROM blobs WHERE name=?", (name,))
        return None if r is None else str(r[0])

    def write_blob(self, name: str, text: str, *, lock: str | None = None) -> None:
        with self.db.transaction():
            self.db._upsert("blobs", ("name", "body", "updated_at"), ("name",),
                            (name, text, now_iso()))

    def delete_blob(self, name: str, *, lock: str | None = None) -> bool:
        with self.db.transaction():
            return self.db._rowcount("DELETE FROM blobs WHERE name=?", (name,)) > 0

    def update_blob(self, name: str, fn: Callable[[str | None], str | None], *,
                    lock: str | None = None) -> str | None:
        """Read-modify-write under the write lock; ``fn`` returning None leaves it as is."""
        with self.db.transaction():
            new = fn(self.read_blob(name))
            if new is not None:
                self.write_blob(name, new)
            return new


class PostgresBackend(SQLBackend):
    """A Store's view of one PostgreSQL database (schema created on first connect)."""

    _AUDIT_SQL = PostgresAuditSQL
    _META_SQL = PostgresMetaSQL

    # The chain lives in audit_log, shared by every host; no per-host JSONL mirror.
    mirrors_audit_to_files = False

    def __init__(self, dsn: str, *, read_only: bool = False, pool_size: int = 4,
                 connect_timeout: int = 10) -> None:
        self.dsn = dsn
        self.path = redact(dsn)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._memo_lock = threading.Lock()
        self._memo: dict[Hashable, tuple[int, int]] = {}
        self._memo_snap: str | None = None
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
    def _session(self, begin: str, write: bool, defer: bool = False) -> Iterator[None]:
        loc = self._local
        if self._depth:
            if write and not defer and not getattr(loc, "locked", False):
                # a write inside a read snapshot or an appends-only transaction:
                # serialize it like any other writer from here on
                self.q("SELECT pg_advisory_xact_lock(?)", (pg_schema.WRITE_LOCK,))
                loc.write = loc.locked = True
            loc.depth += 1
            try:
                yield
            finally:
                loc.depth -= 1
            return
        if self._closed:
            raise StoreError(f"the store {self.path} is closed: open a new Store")
        with self._lock, self._pool.connection() as conn:
            locked = write and not defer
            # the lock in the same round trip as BEGIN (a constant: no parameter to bind)
            conn.execute(f"{begin}; SELECT pg_advisory_xact_lock({int(pg_schema.WRITE_LOCK)})"
                         if locked else begin)
            loc.conn, loc.depth, loc.write, loc.locked = conn, 1, write, locked
            loc.snap = None
            try:
                yield
            except BaseException:
                loc.conn, loc.depth, loc.write, loc.locked = None, 0, False, False
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
                raise
            loc.conn, loc.depth, loc.write, loc.locked = None, 0, False, False
            try:
                conn.execute("COMMIT")
            except psycopg.OperationalError as exc:
                raise StoreError(f"the commit to {self.path} failed ({exc}); the write was "
                                 "not acknowledged: retry it") from None

    def _lock_for_append(self) -> None:
        """An appends-only transaction takes the write lock at its first audit append:
        from there to its commit no other writer appends, so the tip it reads stays the
        tip (READ COMMITTED: each statement sees every commit before it)."""
        loc = self._local
        if self._depth and getattr(loc, "write", False) and not getattr(loc, "locked", False):
            self.q("SELECT pg_advisory_xact_lock(?)", (pg_schema.WRITE_LOCK,))
            loc.locked = True

    def _locked_tip(self) -> AuditTip | None:
        """At an appends-only transaction's first append: take the write lock and read
        the chain's tip in one round trip (two statements of one simple query; READ
        COMMITTED gives each statement its own snapshot, so the tip is read once the lock
        is granted, after the last holder's commit). The lock is held from here to the
        commit: one round trip less inside it. None when no such append is due (the
        caller reads the tip plainly, under the lock it already holds or needs none)."""
        loc = self._local
        if not (self._depth and getattr(loc, "write", False) and not getattr(loc, "locked", False)):
            return None

        def run(conn: Any) -> Any:
            cur = conn.execute(f"SELECT pg_advisory_xact_lock({int(pg_schema.WRITE_LOCK)}); "
                               "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
            cur.nextset()
            return cur.fetchone()

        r = self._with_conn(run)
        loc.locked = True
        return GENESIS_TIP if r is None else AuditTip(int(r[0]), str(r[1]))

    @contextlib.contextmanager
    def transaction(self, *, appends_only: bool = False) -> Iterator[None]:
        if self.read_only:
            raise ReadOnlyStoreError(f"the store {self.path!r} was opened read_only: reopen it "
                                     "without read_only to write")
        with self._session("BEGIN ISOLATION LEVEL READ COMMITTED", write=True,
                           defer=appends_only):
            yield

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._session("BEGIN ISOLATION LEVEL REPEATABLE READ", write=False):
            yield

    def q(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql``; ``?`` placeholders, as on SQLite."""
        rows: list[tuple[Any, ...]] = self._run(
            sql, params, lambda cur: cur.fetchall() if cur.description else [])
        return rows

    def q1(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._run(
            sql, params, lambda cur: cur.fetchone() if cur.description else None)
        return row

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        def run(conn: Any) -> None:
            with conn.cursor() as cur:
                cur.executemany(qmark_to_format(sql), rows)
        self._with_conn(run)

    def _run(self, sql: str, params: Sequence[Any], fetch: Callable[[Any], Any]) -> Any:
        query, args = qmark_to_format(sql), tuple(params)
        return self._with_conn(lambda conn: fetch(conn.execute(query, args)))

    def _with_conn(self, fn: Callable[[Any], Any]) -> Any:
        """``fn`` on this thread's transaction connection, else on a pooled one."""
        try:
            conn = self._conn
            if conn is not None:
                return fn(conn)
            if self._closed:
                raise StoreError(f"the store {self.path} is closed: open a new Store")
            with self._pool.connection() as c:
                return fn(c)
        except psycopg.OperationalError as exc:
            raise StoreError(f"the PostgreSQL store at {self.path} failed: {exc}".strip()
                             + " (check the server and retry)") from None

    # ------------------------------------------------------------------ dialect hooks
    def _in_list(self, col: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{col} = ANY(?)", [list(ids)]

    _NO_LIMIT = None
    _CONTAINS = "strpos(lower({col}), lower(?)) > 0"

    def _json_eq(self, col: str, field: str, value: Any) -> tuple[str, list[Any]]:
        text = json.dumps(value) if isinstance(value, bool) or value is None else str(value)
        return f"(({col})::jsonb ->> ?) = ?", [field, text]

    def _rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self._run(sql, params, lambda cur: cur.rowcount))

    def _insert_id(self, sql: str, params: Sequence[Any]) -> int:
        r = self.q1(sql + " RETURNING id", params)
        return int(r[0]) if r else 0

    def _upsert(self, table: str, cols: Sequence[str], key: Sequence[str],
                values: Sequence[Any]) -> None:
        update = ", ".join(f"{c}=excluded.{c}" for c in cols if c not in key)
        self.q(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({','.join('?' * len(cols))}) "
               f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {update}", values)

    def _insert_ignore(self, table: str, cols: Sequence[str], values: Sequence[Any]) -> None:
        self.q(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({','.join('?' * len(cols))}) "
               "ON CONFLICT DO NOTHING", values)

    # ------------------------------------------------------------------ episodes
    def scrub_indexes(self) -> None:
        """Nothing inside the transaction: ``checkpoint`` vacuums the deleted rows and
        their index entries away once it has committed."""

    #: tables whose deleted or scrubbed text a checkpoint vacuums away: the episodes and,
    #: in a governed store, the record versions and review items ``forget`` scrubs
    SCRUBBED_TABLES = ("episodes", "gov_records", "gov_reviews", "items", "blobs", "meta",
                       "pattern_history", "drift_probes", "wraps", "tombstones", "gov_events",
                       "gov_current", "gov_tombstones")

    def checkpoint(self) -> None:
        with contextlib.suppress(psycopg.Error), self._pool.connection() as c:
            for table in self.SCRUBBED_TABLES:
                if c.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None:
                    c.execute(f"VACUUM {table}")

    # ------------------------------------------------------------------ search
    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> SearchPage:
        """Filtered episodes, newest first or by rank, plus the total match count.

        ``phrase``: case-insensitive substring (ILIKE over the trigram index, any script).
        ``words``: any of these words (stemmed), ranked by ``ts_rank_cd``; each word is
        a bound parameter of ``phraseto_tsquery``, so no query syntax reaches the server.
        """
        where, params = self._filter_sql(filters)
        mparams: list[Any]
        if phrase is not None:
            src, mparams = _phrase_src(phrase)
            score, order_sql = "1.0", "e.timestamp DESC, e.rowid DESC"
        elif words:
            src, mparams = _words_src(words)
            score = _WORDS_SCORE
            order_sql = f"{score} DESC, e.timestamp DESC, e.rowid DESC"
        else:
            src, mparams, score = "FROM episodes e WHERE ", [], "0.0"
            order_sql = ("e.timestamp DESC, e.rowid DESC" if order == "recent"
                         else "e.timestamp ASC, e.rowid ASC")
        rows = self.q(f"SELECT {_E_COLS}, {score} {src}{where} ORDER BY {order_sql} "
                      "LIMIT ? OFFSET ?", [*mparams, *params, int(limit), int(offset)]
                      ) if limit else []
        # a page that is not full from the first row holds every match: no count needed
        total = (len(rows) if limit and offset == 0 and len(rows) < limit
                 else self._match_total(src, where, [*mparams, *params]))
        return SearchPage([(episode_row(r[:13]), float(r[13] or 0.0)) for r in rows], total)

    #: matches are counted exactly up to this many; past it the total is estimated. Each
    #: counted match is a row read and checked (ILIKE) on the server: 10,000 of them cost
    #: 50-200 ms at a million episodes, so the bound is lower than SQLite's (whose trigram
    #: index offers row ids without reading rows)
    EXACT_COUNT = 1_000

    def _match_total(self, src: str, where: str, args: list[Any]) -> int:
        """How many episodes match: exact up to EXACT_COUNT, else estimated from the
        first EXACT_COUNT + 1 matches the server finds (in the table's order, which is
        recording order) and the share of the row ids they span, returned as an
        :class:`EstimatedCount`. No ORDER BY: sorted by row id, the server walked the
        row id index from the oldest row, reading every row of a rare phrase (2 s at a
        million episodes) where the word or trigram index finds its few matches."""
        inner = f"SELECT e.rowid {src}{where}"
        if self._scan_finds_first(inner, args):
            sql = f"SELECT COUNT(*), MAX(s.rowid) FROM ({inner} LIMIT ?) s"
        else:
            sql = (f"WITH m AS MATERIALIZED ({inner}) SELECT COUNT(*), MAX(s.rowid) FROM "
                   "(SELECT m.rowid FROM m LIMIT ?) s")
        r = self.q1(sql, [*args, self.EXACT_COUNT + 1])
        n = int(r[0]) if r else 0
        if n <= self.EXACT_COUNT or r is None or r[1] is None:
            return n
        ends = self.q1("SELECT MIN(rowid), MAX(rowid) FROM episodes")
        if not ends or ends[0] is None:
            return n
        lo, hi, reach = int(ends[0]), int(ends[1]), int(r[1])
        return EstimatedCount(round(n * (hi - lo + 1) / max(1, reach - lo + 1)))

    def _scan_finds_first(self, inner: str, args: list[Any]) -> bool:
        """Whether the first EXACT_COUNT + 1 matches of ``inner`` are found sooner by
        reading rows until they turn up (what the planner picks for a LIMIT: a scan of the
        table or of the type's index, which stops early) than off the trigram index (all
        its matches' row lists ANDed, then their rows read). The planner prices a row's
        ILIKE at a fraction of its cost, so it scans even where the matches are few: a
        phrase in 0.6% of one type's rows read 158,000 rows (499 ms at a million episodes)
        where the trigram and type indexes ANDed read 82 ms; but a common phrase's
        trigram lists cost 80 ms to AND where the scan finds its matches in 20. A scan
        reads (EXACT_COUNT + 1) * top / M rows for M matches, the index ~M: the scan is
        kept when M (the planner's estimate, one EXPLAIN) is at least the square root of
        (EXACT_COUNT + 1) * top. The same matches are counted either way (the first ones
        in the table's order: a bitmap reads the table in that order too)."""
        top = self._top_rowid()
        if top <= 10 * self.EXACT_COUNT:  # a small store: nothing to choose
            return True
        r = self.q1("EXPLAIN (FORMAT JSON) " + inner, args)
        try:
            est = float(r[0][0]["Plan"]["Plan Rows"]) if r else 0.0
        except (LookupError, TypeError, ValueError):
            return True
        return est * est >= (self.EXACT_COUNT + 1) * top

    #: past this many matches of a word query, its pool is ranked among the newest
    #: WORD_WALK matches and every match of its rare words, not among all of them (as
    #: the SQLite backend bounds its walk: storage/sqlite.py, WORD_WALK)
    WORD_WALK = 5_000
    #: a query word held by at most this many episodes is rare: all its matches are ranked
    RARE_MATCHES = 2_000
    #: the cap ranked recall asks word_counts for (ranking.COUNT_CAP): rare words are
    #: counted to it, so that the count kept serves word_counts in the same snapshot
    WORD_COUNT_CAP = 20_000
    #: past this many times WORD_WALK episodes a store's rare words are found before the
    #: walk (the same ranking: the order of the statements only)
    RARE_FIRST = 10

    def ranked_ids(self, filters: SearchFilters, words: Sequence[str], pool: int
                   ) -> RankedPage:
        """The ``pool`` best word matches by ``ts_rank_cd``, best first, plus the number
        of matches. Up to WORD_WALK matches every one is scored; past it (a common word
        in a large store: scoring every match cost seconds at a million episodes) the
        candidates are the newest WORD_WALK matches and every match of each query word
        held by at most RARE_MATCHES episodes, each scored for the whole query, and the
        number of matches is estimated from how many row ids the walk spans."""
        if not words:
            return RankedPage([], 0)
        where, params = self._filter_sql(filters)
        src, mparams = _words_src(words)
        near = []
        for alias, step in (("p", "- 1"), ("n", "+ 1")):
            nwhere, nparams = self._filter_sql(filters, alias)
            near.append((f"(SELECT {_epoch_sql(alias)} FROM episodes {alias} WHERE "
                         f"{alias}.rowid = h.rowid {step} AND {nwhere})", nparams))
        # a large store's common words hold more matches than the walk: its rare words
        # first, so that the ranking is one statement whichever way it goes (a smaller
        # store walks first: most of its queries need no more)
        large = self._top_rowid() > self.RARE_FIRST * self.WORD_WALK
        counts = self._namespace_counts(filters, words) if large else None
        rare = self._rare_of(words, counts) if counts is not None else []
        key = self._walk_key(counts, filters)
        # the newest WORD_WALK + 1 matches (all of them when there are no more); the pool
        # is the best of the newest WORD_WALK, each row carrying how many were walked and
        # the oldest row id reached. Scored once picked: in the statement that picks them
        # the server scores every row it sorts (all the matches of a type, when it reads
        # them off the word and type indexes)
        walked = ("SELECT w.*, COUNT(*) OVER () AS n, MIN(w.rowid) OVER () AS reach, "
                  "ROW_NUMBER() OVER (ORDER BY w.rowid DESC) AS k FROM (SELECT e.rowid AS "
                  "rowid, e.timestamp AS ts, e.content_tsv AS tsv, tq.q AS q "
                  f"{src}{where} ORDER BY {key[0]} LIMIT ?) w")
        wparams = [*mparams, *params, self.WORD_WALK + 1]
        if rare:
            return self._ranked_with_rare(near, walked, wparams, where, params, words, rare,
                                          pool)
        inner = ("SELECT c.rowid, ts_rank_cd(c.tsv, c.q, 1) AS score, c.n, c.reach FROM "
                 f"({walked}) c WHERE c.k <= ? ORDER BY 2 DESC, c.ts DESC, c.rowid DESC LIMIT ?")
        iparams = [*wparams, self.WORD_WALK, int(pool)]
        rows = self._ranked_rows(near, inner, iparams)
        n = int(rows[0][6]) if rows else 0
        if n <= self.WORD_WALK:
            return RankedPage(self._hits(rows), n)
        rare = [] if large else self._rare_of(words, self._namespace_counts(filters, words))
        if rare:
            return self._ranked_with_rare(near, walked, wparams, where, params, words, rare,
                                          pool)
        return RankedPage(self._hits(rows), self._walked_count(n, int(rows[0][7])))

    def _ranked_with_rare(self, near: list[tuple[str, list[Any]]], walked: str,
                          wparams: list[Any], where: str, params: list[Any],
                          words: Sequence[str], rare: list[str], pool: int) -> RankedPage:
        """``ranked_ids`` for a query with rare words, one statement: the walk (the newest
        WORD_WALK + 1 matches, read once, kept as a CTE with how many there are and the
        oldest row id reached), its newest WORD_WALK matches with every match of the rare
        words (the word index), each scored for the whole query. As one OR, the planner
        scored every match; as two statements (the walk's reach, then every match newer
        than it) the walk's rows were read twice."""
        inner = (f"WITH w AS MATERIALIZED ({walked}) SELECT u.rowid, u.score, "
                 "(SELECT MAX(w.n) FROM w) AS n, (SELECT MIN(w.reach) FROM w) AS reach FROM "
                 "(SELECT w.rowid, w.ts, ts_rank_cd(w.tsv, w.q, 1) AS score FROM w WHERE "
                 f"w.k <= ? UNION SELECT e.rowid, e.timestamp, {_WORDS_SCORE} FROM "
                 f"episodes e, (SELECT {_tsquery_sql(len(rare))} AS q) rq, (SELECT "
                 f"{_tsquery_sql(len(words))} AS q) tq "
                 f"WHERE e.content_tsv @@ rq.q AND {where}) u "
                 "ORDER BY u.score DESC, u.ts DESC, u.rowid DESC LIMIT ?")
        rows = self._ranked_rows(near, inner, [*wparams, self.WORD_WALK, *rare, *words,
                                               *params, int(pool)])
        n = int(rows[0][6] or 0) if rows else 0
        if not n:
            return RankedPage([], 0)
        return RankedPage(self._hits(rows), n if n <= self.WORD_WALK
                          else self._walked_count(n, int(rows[0][7])))

    def _top_rowid(self) -> int:
        """The highest row id of the episodes (the store's size while none was deleted),
        kept for this read snapshot's database state."""
        top = self._memo_get(("top_rowid",), _EXACT)
        if top is None:
            r = self.q1("SELECT COALESCE(MAX(rowid), 0) FROM episodes")
            top = int(r[0]) if r else 0
            self._memo_put(("top_rowid",), top, _EXACT)
        return top

    def _ranked_rows(self, near: list[tuple[str, list[Any]]], inner: str,
                     iparams: list[Any]) -> list[tuple[Any, ...]]:
        """The rows of ``inner`` (row id, score, ...) with their time, their neighbours'
        times and their text: read for the pool's rows only, after the sort picked them."""
        return self.q(
            f"SELECT h.rowid, {_epoch_sql('x')}, h.score, {near[0][0]}, {near[1][0]}, "
            f"x.content, h.n, h.reach FROM ({inner}) h JOIN episodes x ON x.rowid = h.rowid "
            "ORDER BY h.score DESC, h.rowid DESC",
            [*near[0][1], *near[1][1], *iparams])

    @staticmethod
    def _hits(rows: list[tuple[Any, ...]]) -> list[RankedHit]:
        return [RankedHit(int(r[0]), _float(r[1]), float(r[2] or 0.0), _float(r[3]),
                          _float(r[4]), r[5]) for r in rows]

    def _namespace_counts(self, filters: SearchFilters, words: Sequence[str]
                          ) -> dict[str, int]:
        """How many episodes of the filters' namespace (of any type: the filters then
        apply to their matches) hold each query word, up to WORD_COUNT_CAP. SQLite counts
        them in the type too, which its word index holds; here a type's count read every
        row of the type back to its RARE_MATCHES-th match (0.3-0.8 s at a million
        episodes), while the namespace's counts are word_counts' own, kept per state:
        counted to the cap word_counts asks next, in the same snapshot, one count each."""
        return self._capped_counts(words, filters.scope,
                                   max(self.RARE_MATCHES + 1, self.WORD_COUNT_CAP))

    def _rare_of(self, words: Sequence[str], counts: dict[str, int]) -> list[str]:
        """The query words held by at most RARE_MATCHES episodes (see _namespace_counts)."""
        return [w for w in words if 0 < counts[w] <= self.RARE_MATCHES]

    #: the share of a query's matches a type filter is taken to keep (_walk_key: a plan's
    #: choice, not a result's)
    TYPE_SHARE = 0.3

    def _walk_key(self, counts: dict[str, int] | None, filters: SearchFilters
                  ) -> tuple[str, str]:
        """How the walk to the WORD_WALK-th newest match is written: (its ORDER BY, the
        row id expression it bounds). The same rows in the same order whichever is
        chosen; only the plan differs. Ordered by the row id itself, the planner walks the
        row id index newest first and checks each row's words (it prices a check at a
        fraction of its cost), reading WORD_WALK * top / M rows for M matches: 411,000
        rows for M = 14,000 at a million episodes (EXPLAIN ANALYZE: 315 ms), and a
        typed query 1 / s times as many for a type holding a share s of the matches (the
        type checked on each row: the planner took neither the type's own index nor the
        word and type indexes ANDed, which read 115 ms where the walk read 276). Ordered
        by ``(e.rowid + 0)``, which no index serves, it reads the matches off the word
        index (ANDed with the type's index for a typed query: s * M rows) and sorts them:
        chosen in a large store (``counts`` given) when the rows it reads, s * M, are at
        most a fifth of the walk's WORD_WALK * top / (s * M) (a row read off the word
        index costs ~5 times a row walked: its own heap page and a recheck), s taken as
        TYPE_SHARE. M is estimated from the exact counts under the
        cap, the statistics' estimate of a word counted to the cap, or else STATS_MARGIN
        times the cap: an estimate that is off costs time only."""
        if counts is not None:
            cap = max(self.RARE_MATCHES + 1, self.WORD_COUNT_CAP)
            capped = [w for w, n in counts.items() if n >= cap]
            est = self._stats_estimates(capped) if capped else {}
            matches = sum(float(n) if n < cap
                          else max(est.get(w, 0.0), cap * self.STATS_MARGIN)
                          for w, n in counts.items())
            share = 1.0 if filters.episode_type is None else self.TYPE_SHARE
            if 5 * (share * matches) ** 2 <= self.WORD_WALK * self._top_rowid():
                return "(e.rowid + 0) DESC", "(e.rowid + 0)"
        return "e.rowid DESC", "e.rowid"

    def _stats_estimates(self, words: Sequence[str]) -> dict[str, float]:
        """The episodes the server's statistics (ANALYZE's sample of the word vectors)
        put each word of one stem in, for the words among their most common ones."""
        if not words:
            return {}
        r = self.q1(_STATS_CTE + "SELECT " + ", ".join(
            "(SELECT MAX(st.est) FROM st WHERE ARRAY[st.e] = tsvector_to_array(to_tsvector("
            "'anneal_words'::regconfig, ?)))" for _ in words), list(words)) or ()
        return {w: float(n) for w, n in zip(words, r) if n is not None}

    def _walked_count(self, walked: int, reach: int) -> int:
        """The matches of a word query past WORD_WALK, estimated as the SQLite backend
        estimates them: the walk's WORD_WALK + 1 matches, scaled by the share of the
        store's row ids they span (newest first here: from ``reach`` to the newest)."""
        ends = self.q1("SELECT MIN(rowid), MAX(rowid) FROM episodes")
        if not ends or ends[0] is None:
            return walked
        lo, hi = int(ends[0]), int(ends[1])
        return EstimatedCount(round(walked * (hi - lo + 1) / max(1, hi - reach + 1)))

    def times_by_rowid(self, rowids: Sequence[int], filters: SearchFilters
                       ) -> dict[int, float | None]:
        where, params = self._filter_sql(filters)
        rows = self.q(f"SELECT e.rowid, {_epoch_sql('e')} FROM episodes e WHERE "
                      f"e.rowid = ANY(?) AND {where}", [list(rowids), *params])
        return {int(r[0]): _float(r[1]) for r in rows}

    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]:
        """Episodes at these row ids that pass ``filters``."""
        where, params = self._filter_sql(filters)
        rows = self.q(f"SELECT {_E_COLS} FROM episodes e WHERE e.rowid = ANY(?) AND {where}",
                      [list(rowids), *params])
        return {int(r[0]): episode_row(r) for r in rows}

    #: a word the server's statistics (``ANALYZE``'s sample of the word vectors) put in
    #: at least this many times ``cap`` episodes of the whole store is taken as held by
    #: ``cap`` without counting (counting a common word to 20,000 read 20,000 rows: 50 ms
    #: each at a million episodes). Its count would be ``cap`` anyway unless the sample
    #: overstates it by this factor (six standard errors or more at the frequencies a cap
    #: of 20,000 reaches) or more than a fifth of the word's episodes were removed since
    #: the table was last analysed (autovacuum analyses after a tenth of it changes)
    STATS_MARGIN = 1.25
    #: word counts kept for the database state they were counted in (see _snapshot)
    COUNT_MEMO_ENTRIES = 50_000

    def word_counts(self, filters: SearchFilters, words: Sequence[str], cap: int
                    ) -> WordCounts:
        """(episodes, how many hold each word up to ``cap``): the namespace's when the
        filters have one, else the whole store; each word stemmed as ``search`` stems it.
        A word of one stem that the statistics put far above ``cap`` in the whole store
        is not counted (see STATS_MARGIN), and a count is kept while the database state
        stays the one it was counted in."""
        scope = filters.scope
        extra, params = (visible_sql(scope) if scope.owner is not None or scope.unscoped_only
                         else ("", []))
        key = ("episodes", scope)
        total = self._memo_get(key, _EXACT)
        if total is None:
            r = self.q1(f"SELECT COUNT(*) FROM episodes WHERE TRUE{extra}" if extra
                        else "SELECT COALESCE(MAX(rowid), 0) FROM episodes", params)
            total = int(r[0] or 0) if r else 0
            self._memo_put(key, total, _EXACT)
        return WordCounts(total, self._capped_counts(words, scope, cap))

    def _capped_counts(self, words: Sequence[str], scope: Scope, cap: int) -> dict[str, int]:
        """How many episodes of ``scope`` hold each word, counted up to ``cap``: from the
        counts kept for this database state, from the statistics for a far common word of
        the whole store, else counted (one statement)."""
        out: dict[str, int] = {}
        todo: list[str] = []
        for word in words:
            hit = self._memo_get(("word", word, scope), cap)
            if hit is None:
                todo.append(word)
            else:
                out[word] = hit
        if not todo:
            return out
        extra, params = (visible_sql(scope) if scope.owner is not None or scope.unscoped_only
                         else ("", []))
        heads, args = [], []
        for word in todo:
            count = ("(SELECT COUNT(*) FROM (SELECT 1 FROM episodes WHERE content_tsv @@ "
                     f"phraseto_tsquery('anneal_words'::regconfig, ?){extra} LIMIT ?) s)")
            if extra:
                heads.append(count)
                args += [word, *params, int(cap)]
                continue
            heads.append(f"(SELECT CASE WHEN COALESCE((SELECT MAX(st.est) FROM st WHERE "
                         "ARRAY[st.e] = tsvector_to_array(to_tsvector('anneal_words'::"
                         f"regconfig, ?))), 0) >= ? THEN ? ELSE {count} END)")
            args += [word, float(cap) * self.STATS_MARGIN, int(cap), word, int(cap)]
        with_st = "" if extra else _STATS_CTE
        r = self.q1(with_st + "SELECT " + ", ".join(heads), args) or ()
        for word, n in zip(todo, r):
            out[word] = int(n or 0)
            self._memo_put(("word", word, scope), out[word], cap)
        return out

    # ------------------------------------------------------------------ kept counts
    def _snapshot(self) -> str | None:
        """The identity of this thread's read snapshot (its xmin:xmax:in-progress list:
        two snapshots that print the same see the same commits), or None outside a
        read-only snapshot (a statement of its own sees whatever committed before it)."""
        loc = self._local
        if not self._depth or getattr(loc, "write", False):
            return None
        snap: str | None = getattr(loc, "snap", None)
        if snap is None:
            r = self.q1("SELECT txid_current_snapshot()::text")
            snap = loc.snap = str(r[0]) if r else None
        return snap

    def _memo_get(self, key: Hashable, cap: int) -> int | None:
        """A count kept for ``key`` in this snapshot's database state, as counted up to
        ``cap`` (None when none is kept, or it was counted to a lower bound)."""
        snap = self._snapshot()
        if snap is None:
            return None
        with self._memo_lock:
            if snap != self._memo_snap:
                return None
            kept = self._memo.get(key)
        if kept is None:
            return None
        n, bound = kept
        if n < bound or bound >= cap:  # counted exactly, or past this cap too
            return min(n, cap)
        return None

    def _memo_put(self, key: Hashable, n: int, cap: int) -> None:
        snap = self._snapshot()
        if snap is None:
            return
        with self._memo_lock:
            if snap != self._memo_snap:  # a newer state: what is kept no longer holds
                self._memo.clear()
                self._memo_snap = snap
            if len(self._memo) >= self.COUNT_MEMO_ENTRIES:
                self._memo.clear()
            old = self._memo.get(key)
            if old is None or cap > old[1]:
                self._memo[key] = (n, cap)

    def integrity_check(self) -> str:
        """``ok``, or what is wrong: schema version, or a gap in the audit sequence."""
        version = self._meta_sql.get("schema_version")
        if version != str(pg_schema.SCHEMA_VERSION):
            return f"schema version {version!r}, expected {pg_schema.SCHEMA_VERSION}"
        r = self.q1("SELECT COUNT(*), MIN(seq), MAX(seq) FROM audit_log")
        if r and r[0] and int(r[2]) - int(r[1]) + 1 != int(r[0]):
            return f"audit_log has gaps: {r[0]} entries between seq {r[1]} and {r[2]}"
        return "ok"
