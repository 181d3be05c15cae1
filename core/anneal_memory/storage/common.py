"""The storage methods whose SQL is the same on SQLite and PostgreSQL, written once.

``SQLBackend`` implements them with ``?`` placeholders over ``q`` / ``q1``; each backend
runs them in its own dialect (PostgreSQL's ``q`` turns ``?`` into ``%s``, see
``qmark_to_format``, so one statement text serves both). What differs between the databases stays a small hook here,
implemented per backend: how a list of ids becomes a condition, upsert and insert-or-
ignore, the id of a new row, affected-row counts. Row-to-dict conversions are plain
functions, shared by both backends and by the scoped governance view.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Iterator, Sequence
from typing import Any

from .audit_sql import AuditSQL
from .base import KEEP, ROOT, Backend, EpisodeRow, Keep, Scope, SearchFilters
from .meta_sql import MetaSQL
from .rows import (
    DayActivity,
    NamespaceCount,
)

EP_COLS = ("rowid, id, timestamp, type, content, source, session_id, metadata, trust, state_key, "
           "wrap_id, ns_owner, ns_project")
_INSERT_COLS = ("id", "timestamp", "type", "content", "source", "session_id", "metadata",
                "trust", "state_key", "wrap_id", "ns_owner", "ns_project")
#: most rows one INSERT statement carries (12 columns each: under 999 bound values)
_ROWS_PER_INSERT = 64


# ---------------------------------------------------------------------- rows -> values

def like_pattern(text: str) -> str:
    """``%text%`` for LIKE / ILIKE (escape character: backslash) with the pattern
    characters escaped: user text is matched literally, never as a wildcard."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"

#: at most this many trigrams narrow a substring search: each costs one lookup per index
#: segment (or posting list), and the row check makes the match exact whatever the
#: trigrams let through
MAX_TRIGRAMS = 6


#: Latin letters from most to least frequent in written English (and most European
#: text): a trigram of rare letters has a short row list, so it narrows the most
_LETTERS_BY_FREQUENCY = "etaoinshrdlcumwfgypbvkjxqz"


def _rarity(ch: str) -> int:
    """How much a character narrows a trigram: spaces and punctuation least, then Latin
    letters by their frequency, digits, and any other script's letters most."""
    low = ch.lower()
    if low in _LETTERS_BY_FREQUENCY:
        return 1 + _LETTERS_BY_FREQUENCY.index(low)
    if ch.isdigit():
        return 20
    return 27 if ch.isalnum() else 0


def _ascii_word(gram: str) -> bool:
    return gram.isascii() and gram.isalnum()


def trigrams(phrase: str, *, ascii_words: bool = False) -> list[str]:
    """The trigrams that narrow a substring search for ``phrase``: up to MAX_TRIGRAMS,
    the rarest-looking one of each stretch of the phrase (see :func:`_rarity`), without
    repeats. Empty when the phrase is shorter than a trigram. ``ascii_words``: only
    trigrams of three ASCII letters or digits (what PostgreSQL's pg_trgm indexes as
    they are, whatever the word boundaries and the locale)."""
    starts = [i for i in range(len(phrase) - 2)
              if not ascii_words or _ascii_word(phrase[i:i + 3])]
    n = len(starts)
    if n < 1:
        return []
    parts = min(MAX_TRIGRAMS, n)
    grams: dict[str, str] = {}
    for k in range(parts):
        stretch = starts[k * n // parts:(k + 1) * n // parts]
        best = max(stretch, key=lambda i: sum(_rarity(ch) for ch in phrase[i:i + 3]))
        gram = phrase[best:best + 3]
        grams.setdefault(gram.lower(), gram)  # the indexes fold case themselves
    return list(grams.values())


def episode_row(r: Sequence[Any]) -> EpisodeRow:
    """An ``EP_COLS`` row as an EpisodeRow (built positionally: a wrap reads hundreds)."""
    rowid, wrap_id = r[0], r[10]
    return EpisodeRow(
        r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
        wrap_id if wrap_id is None or type(wrap_id) is int else int(wrap_id),
        rowid if type(rowid) is int else int(rowid), r[11], r[12])


def visible_sql(scope: Scope, alias: str = "") -> tuple[str, list[object]]:
    """``AND ...``: rows a reader in ``scope`` may see (every row at the root, unless
    the root reads only its own)."""
    if scope.owner is None:
        return own_sql(scope, alias) if scope.unscoped_only else ("", [])
    p = f"{alias}." if alias else ""
    return (f" AND {p}ns_owner = ? AND ({p}ns_project IS NULL OR {p}ns_project = ?)",
            [scope.owner, scope.project or ""])


def own_sql(scope: Scope, alias: str = "") -> tuple[str, list[object]]:
    """``AND ...``: rows written in exactly ``scope`` (the root's: those without one)."""
    p = f"{alias}." if alias else ""
    if scope.owner is None:
        return f" AND {p}ns_owner IS NULL", []
    return (f" AND {p}ns_owner = ? AND COALESCE({p}ns_project, '') = ?",
            [scope.owner, scope.project or ""])


def reach_sql(scope: Scope, alias: str = "") -> tuple[str, list[object]]:
    """``AND ...``: rows a mutation through ``scope`` may touch: everything at the root
    (the operator), exactly its own namespace's rows through a view."""
    return ("", []) if scope.owner is None and not scope.unscoped_only else own_sql(scope, alias)


def ns_meta_key(key: str, scope: Scope) -> str:
    """A per-namespace meta key (the root's keeps its plain name)."""
    return key if scope.owner is None else f"{key}@{scope.key}"


def audit_counter_key(ns_tag: str) -> str:
    """The meta key counting one namespace's audit entries (by its hashed tag: the
    store's files and tables never name a user in clear)."""
    return f"audit_count:ns-{ns_tag}"


@functools.lru_cache(maxsize=1024)
def qmark_to_format(sql: str) -> str:
    """``?`` placeholders as ``%s`` (psycopg's style), never inside a quoted string or
    identifier. Text already in ``%s`` style passes through unchanged; a literal ``%``
    must be written ``%%``, as psycopg requires whenever parameters are passed."""
    if "?" not in sql:
        return sql
    out: list[str] = []
    quote = ""
    for ch in sql:
        if quote:
            if ch == quote:
                quote = ""  # a doubled quote ('') closes and reopens: same result
        elif ch in "'\"":
            quote = ch
        elif ch == "?":
            out.append("%s")
            continue
        out.append(ch)
    return "".join(out)


class SQLBackend(Backend):
    """Backend methods with the same SQL on every database; subclasses add the rest."""

    #: the governed runtime's tables are known to exist (governance_sql.ensure_schema)
    _gov_schema_ready = False
    #: the audit chain's and the metadata's statements in this database's dialect (each
    #: built by its role: ``roles.AuditChain``, ``roles.Meta``)
    _AUDIT_SQL: type[AuditSQL] = AuditSQL
    _META_SQL: type[MetaSQL]

    @functools.cached_property
    def _meta_sql(self) -> MetaSQL:
        """The metadata statements, for the flags the episode and wrap statements keep
        in ``meta`` (a backdated episode, pattern history started)."""
        return self._META_SQL(self)

    # -- dialect hooks
    @abc.abstractmethod
    def _in_list(self, col: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition "``col`` is one of ``ids``" and its parameters."""

    #: how many ids one ``_in_list`` condition may carry (SQLite binds each id)
    _IN_CHUNK = 1 << 30

    @abc.abstractmethod
    def _rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a write; how many rows it changed."""

    @abc.abstractmethod
    def _insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an INSERT into a table with an integer ``id``; the new row's id."""

    @abc.abstractmethod
    def _upsert(self, table: str, cols: Sequence[str], key: Sequence[str],
                values: Sequence[Any]) -> None:
        """Insert a row, replacing the one with the same ``key`` columns."""

    @abc.abstractmethod
    def _insert_ignore(self, table: str, cols: Sequence[str], values: Sequence[Any]) -> None:
        """Insert a row unless one with the same primary key exists."""

    def _stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        yield from self.q(sql, params)

    # -- helpers built on the hooks
    def _insert_rows(self, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` in order, many to a statement: one multi-row VALUES list per
        power of two of them (so a few statements of each size are ever prepared, and
        SQLite's oldest limit of 999 bound values is never reached)."""
        if not rows:
            return
        one = "(" + ",".join("?" * len(cols)) + ")"
        head = f"INSERT INTO {table}({', '.join(cols)}) VALUES "
        i, n = 0, len(rows)
        while i < n:
            size = min(_ROWS_PER_INSERT, 1 << ((n - i).bit_length() - 1))
            self.q(head + ",".join([one] * size), [v for r in rows[i:i + size] for v in r])
            i += size

    def _chunks(self, ids: Sequence[Any]) -> Iterator[list[Any]]:
        unique = list(dict.fromkeys(ids))
        for i in range(0, len(unique), self._IN_CHUNK):
            yield unique[i:i + self._IN_CHUNK]

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> int:
        r = self.q1(sql, params)
        return int(r[0] or 0) if r else 0

    def _episodes(self, where: str, params: Sequence[Any] = (),
                  order: str = "timestamp ASC, rowid ASC") -> list[EpisodeRow]:
        return [episode_row(r) for r in self.q(
            f"SELECT {EP_COLS} FROM episodes WHERE {where} ORDER BY {order}", params)]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.q(sql, params)

    def _filter_sql(self, f: SearchFilters, alias: str = "e") -> tuple[str, list[Any]]:
        """The WHERE clause (and its parameters) of ``f`` over episodes aliased ``alias``."""
        where: list[str] = []
        params: list[Any] = []
        for cond, value in ((f"{alias}.timestamp >= ?", f.since),
                            (f"{alias}.timestamp <= ?", f.until),
                            (f"{alias}.type = ?", f.episode_type),
                            (f"{alias}.source = ?", f.source),
                            (f"{alias}.trust = ?", f.trust)):
            if value:
                where.append(cond)
                params.append(value)
        if f.only_unwrapped:
            where.append(f"{alias}.wrap_id IS NULL")
        if f.ids is not None:
            cond, ids = self._in_list(f"{alias}.id", list(f.ids))
            where.append(cond)
            params.extend(ids)
        if not f.include_superseded:
            where.append(f"NOT EXISTS (SELECT 1 FROM supersessions s WHERE s.old_id = {alias}.id)")
        vis, vparams = visible_sql(f.scope, alias)
        if vis:
            where.append(vis[5:])
            params.extend(vparams)
        return (" AND ".join(where) or "TRUE"), params

    # -- episodes
    def insert_episode(self, row: EpisodeRow) -> None:
        self.insert_episodes([row])

    def insert_episodes(self, rows: Sequence[EpisodeRow]) -> None:
        if not rows:
            return
        newest = self.q1("SELECT MAX(timestamp) FROM episodes")
        high = newest[0] if newest and newest[0] else ""
        backdated = False
        for row in rows:
            # a backdated episode: recording order no longer equals time order
            backdated = backdated or row.timestamp < high
            high = max(high, row.timestamp)
        if backdated:
            self._meta_sql.set("backdated_episodes", "1")
        self._insert_rows("episodes", _INSERT_COLS, [
            (row.id, row.timestamp, row.type, row.content, row.source, row.session_id,
             row.metadata, row.trust, row.state_key, row.wrap_id, row.ns_owner, row.ns_project)
            for row in rows])

    def id_taken(self, episode_id: str) -> bool:
        return bool(self.q1("SELECT 1 FROM episodes WHERE id=? UNION ALL "
                            "SELECT 1 FROM tombstones WHERE id=?", (episode_id, episode_id)))

    def ids_taken(self, ids: Sequence[str]) -> set[str]:
        taken: set[str] = set()
        for chunk in self._chunks(ids):
            cond, params = self._in_list("id", chunk)
            taken.update(r[0] for r in self.q(
                f"SELECT id FROM episodes WHERE {cond} UNION ALL "
                f"SELECT id FROM tombstones WHERE {cond}", [*params, *params]))
        return taken

    def get_episodes(self, ids: Sequence[str], *, scope: Scope = ROOT,
                     exact: bool = False) -> dict[str, EpisodeRow]:
        """The episodes with these ids that ``scope`` may read (``exact``: may change)."""
        extra, xparams = (reach_sql if exact else visible_sql)(scope)
        out: dict[str, EpisodeRow] = {}
        if len(ids) == 1:  # get(): one index seek, no list to build
            for r in self.q(f"SELECT {EP_COLS} FROM episodes WHERE id=?{extra}",
                            [ids[0], *xparams]):
                out[r[1]] = episode_row(r)
            return out
        for chunk in self._chunks(ids):
            cond, params = self._in_list("id", chunk)
            for r in self.q(f"SELECT {EP_COLS} FROM episodes WHERE {cond}{extra}",
                            [*params, *xparams]):
                out[r[1]] = episode_row(r)
        return out

    def trusts_of(self, ids: Sequence[str], *, scope: Scope = ROOT) -> dict[str, str]:
        extra, xparams = visible_sql(scope)
        out: dict[str, str] = {}
        for chunk in self._chunks(ids):
            cond, params = self._in_list("id", chunk)
            out.update((r[0], r[1]) for r in self.q(
                f"SELECT id, trust FROM episodes WHERE {cond}{extra}", [*params, *xparams]))
        return out

    def all_episodes(self, *, order: str = "timestamp ASC, rowid ASC",
                     scope: Scope = ROOT) -> Iterator[EpisodeRow]:
        extra, params = visible_sql(scope)
        for r in self._stream(f"SELECT {EP_COLS} FROM episodes WHERE TRUE{extra} "
                              f"ORDER BY {order}", params):
            yield episode_row(r)

    def unwrapped_episodes(self, *, scope: Scope = ROOT) -> list[EpisodeRow]:
        extra, params = own_sql(scope)
        return self._episodes(f"wrap_id IS NULL{extra}", params)

    def unwrapped_trusts(self, *, scope: Scope = ROOT) -> dict[str, str]:
        extra, params = own_sql(scope)
        return {r[0]: r[1] for r in self.q(
            f"SELECT id, trust FROM episodes WHERE wrap_id IS NULL{extra}", params)}

    def state_key_holders(self, key: str | None = None, *,
                          scope: Scope = ROOT) -> list[EpisodeRow]:
        extra, params = own_sql(scope)
        if key is None:
            return self._episodes(f"state_key IS NOT NULL{extra}", params,
                                  "state_key, timestamp ASC, rowid ASC")
        return self._episodes(f"state_key=?{extra}", (key, *params))

    def ids_older_than(self, cutoff: str, *, scope: Scope = ROOT) -> list[str]:
        extra, params = reach_sql(scope)
        return [r[0] for r in self.q(f"SELECT id FROM episodes WHERE timestamp < ?{extra}",
                                     (cutoff, *params))]

    def update_episode(self, episode_id: str, *, trust: str | Keep = KEEP,
                       state_key: str | None | Keep = KEEP) -> None:
        fields = {k: v for k, v in (("trust", trust), ("state_key", state_key))
                  if not isinstance(v, Keep)}
        if not fields:
            return
        cols = ", ".join(f"{k}=?" for k in fields)
        self.q(f"UPDATE episodes SET {cols} WHERE id=?", [*fields.values(), episode_id])

    def mark_wrapped(self, ids: Sequence[str], wrap_id: int) -> None:
        for chunk in self._chunks(ids):
            cond, params = self._in_list("id", chunk)
            self.q(f"UPDATE episodes SET wrap_id=? WHERE {cond} AND wrap_id IS NULL",
                   [wrap_id, *params])

    def delete_episode_rows(self, ids: Sequence[str]) -> int:
        n = 0
        for chunk in self._chunks(ids):
            cond, params = self._in_list("id", chunk)
            n += self._rowcount(f"DELETE FROM episodes WHERE {cond}", params)
        return n

    def count_episodes(self, *, scope: Scope = ROOT) -> int:
        extra, params = visible_sql(scope)
        return self._scalar(f"SELECT COUNT(*) FROM episodes WHERE TRUE{extra}", params)

    def count_unwrapped(self, *, scope: Scope = ROOT) -> int:
        extra, params = own_sql(scope)
        return self._scalar(f"SELECT COUNT(*) FROM episodes WHERE wrap_id IS NULL{extra}", params)

    def _counts_by(self, col: str, scope: Scope) -> dict[str, int]:
        extra, params = visible_sql(scope)
        return {r[0]: int(r[1]) for r in self.q(
            f"SELECT {col}, COUNT(*) FROM episodes WHERE TRUE{extra} GROUP BY {col}", params)}

    def counts_by_type(self, *, scope: Scope = ROOT) -> dict[str, int]:
        return self._counts_by("type", scope)

    def namespace_counts(self) -> list[NamespaceCount]:
        counts: dict[tuple[str, str | None], list[int]] = {}
        for owner, project, n in self.q(
                "SELECT ns_owner, ns_project, COUNT(*) FROM episodes WHERE ns_owner IS NOT NULL "
                "GROUP BY ns_owner, ns_project"):
            counts.setdefault((owner, project), [0, 0])[0] = int(n)
        for key, n in self.q("SELECT ns_key, COUNT(*) FROM wraps WHERE status='saved' AND "
                             "ns_key <> '' GROUP BY ns_key"):
            owner, _, project = str(key).partition("\x1f")  # Scope.key
            counts.setdefault((owner, project or None), [0, 0])[1] = int(n)
        return [NamespaceCount(o, p, e, w) for (o, p), (e, w) in sorted(
            counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))]

    def counts_by_trust(self, *, scope: Scope = ROOT) -> dict[str, int]:
        return self._counts_by("trust", scope)

    def activity_by_day(self, since_day: str, *, scope: Scope = ROOT
                        ) -> list[DayActivity]:
        """(day, episodes recorded, wraps saved) per UTC day from ``since_day`` on: the
        episodes written in exactly ``scope`` (the root: its own) and its wraps."""
        extra, params = own_sql(scope)
        days: dict[str, list[int]] = {}
        for day, n in self.q("SELECT substr(timestamp, 1, 10), COUNT(*) FROM episodes "
                             f"WHERE timestamp >= ?{extra} GROUP BY substr(timestamp, 1, 10)",
                             (since_day, *params)):
            days.setdefault(str(day), [0, 0])[0] = int(n)
        for day, n in self.q("SELECT substr(completed_at, 1, 10), COUNT(*) FROM wraps WHERE "
                             "status='saved' AND ns_key=? AND completed_at >= ? "
                             "GROUP BY substr(completed_at, 1, 10)", (scope.key, since_day)):
            days.setdefault(str(day), [0, 0])[1] = int(n)
        return [DayActivity(d, e, w) for d, (e, w) in sorted(days.items())]


    # -- item collections: their SQL is the Items role's (roles.py); the dialect's part here
    #: the LIMIT value that means "no limit", and a case-insensitive substring test
    _NO_LIMIT: Any = -1
    _CONTAINS = "instr(lower({col}), lower(?)) > 0"

    @abc.abstractmethod
    def _json_eq(self, col: str, field: str, value: Any) -> tuple[str, list[Any]]:
        """A condition "the JSON object in ``col`` has ``field`` equal to ``value``"."""

