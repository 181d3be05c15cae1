"""The roles of one database, each a small object built for one namespace scope.

A role is what the layers above storage hold: :class:`Episodes`, :class:`Links`,
:class:`Wraps`, :class:`Items`, :class:`Meta` and :class:`AuditChain` here, beside the
vectors (``vectors.VectorRepo``), the governed runtime's tables
(``governance_sql.GovernanceRepo``) and the whole tables (``pg_copy.Tables``). Each is
built over the database's connection and a :class:`~.base.Scope`, and every namespaced
call it makes carries that scope: the scope is fixed when the role is built, so a role
built for one namespace has no call that reads or writes another. What spans every
namespace (:meth:`Episodes.namespace_counts`, :meth:`Wraps.wrap_totals`) answers only
at the root and raises :class:`OutOfScope` anywhere else.

:class:`Links`, :class:`Wraps` and :class:`Items` write their SQL here, once for every
database (the backend gives its dialect: id lists, upsert, insert-or-ignore, a new row's
id); they are no part of ``Backend``. The others still pass their calls to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from .audit_sql import AuditSQL, entry_row
from .base import (
    KEEP,
    ROOT,
    Backend,
    EpisodeRow,
    Keep,
    RankedPage,
    Scope,
    SearchFilters,
    SearchPage,
)
from .common import SQLBackend, ns_meta_key, own_sql, visible_sql
from .meta_sql import MetaSQL
from .rows import (
    AuditDigest,
    AuditEntry,
    AuditRowValues,
    AuditTip,
    CollectionCount,
    DayActivity,
    DerivationRow,
    ErasedCounts,
    ItemRow,
    LinkRow,
    LinkTablesUsed,
    MetaEntry,
    NamespaceCount,
    OpenWrapRow,
    PatternRow,
    Predecessor,
    ProbeRow,
    RemovedLink,
    Source,
    Successor,
    TextCell,
    TombstoneRow,
    WordCounts,
    WrapCounts,
    WrapRow,
    WrapTotals,
)

_T = TypeVar("_T")


def _json_list(text: str | None) -> list[Any]:
    """A JSON array column's value (an empty list for none)."""
    return json.loads(text) if text else []


class OutOfScope(AttributeError):
    """A role built for one namespace was asked for what spans every namespace (or for
    another namespace's roles): only the root's roles answer that. An AttributeError,
    as the call is not part of what a scoped role offers."""


class Role:
    """A role over ``db`` acting for ``scope``."""

    __slots__ = ("_db", "scope")

    def __init__(self, db: Backend, scope: Scope = ROOT) -> None:
        self._db = db
        self.scope = scope

    @property
    def at_root(self) -> bool:
        """Built for the root's operator view (every namespace visible), not a namespace
        or the root's own unscoped memory."""
        return self.scope == ROOT

    def _refuse_outside_root(self, what: str) -> None:
        if not self.at_root:
            raise OutOfScope(f"{what} spans every namespace: ask the root Store's roles, not "
                             "a namespace-scoped view's")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.scope!r})"


class Episodes(Role):
    """The episode rows and the keyword index over them, as ``scope`` sees them."""

    __slots__ = ()

    def _own(self, row: EpisodeRow) -> EpisodeRow:
        # a view writes its rows in its own namespace; the root writes a row as it says
        if self.at_root:
            return row
        return replace(row, ns_owner=self.scope.owner, ns_project=self.scope.project)

    def _filters(self, filters: SearchFilters) -> SearchFilters:
        # a view's scope overrides any scope the filters carry
        return filters if self.at_root else replace(filters, scope=self.scope)

    def memo(self, key: Hashable, compute: Callable[[], _T], *,
             size: Callable[[_T], int] | None = None) -> _T:
        """``compute()``, or its value for ``key`` in this scope while nothing was written
        since (see ``Backend.memo``)."""
        return self._db.memo(key, compute, scope=self.scope, size=size)

    def insert_episode(self, row: EpisodeRow) -> None:
        self._db.insert_episode(self._own(row))

    def insert_episodes(self, rows: Sequence[EpisodeRow]) -> None:
        self._db.insert_episodes([self._own(row) for row in rows])

    def id_taken(self, episode_id: str) -> bool:
        """Whether an episode or a tombstone anywhere holds the id (ids are global)."""
        return self._db.id_taken(episode_id)

    def ids_taken(self, ids: Sequence[str]) -> set[str]:
        return self._db.ids_taken(ids)

    def get_episodes(self, ids: Sequence[str], *, exact: bool = False) -> dict[str, EpisodeRow]:
        return self._db.get_episodes(ids, scope=self.scope, exact=exact)

    def trusts_of(self, ids: Sequence[str]) -> dict[str, str]:
        return self._db.trusts_of(ids, scope=self.scope)

    def all_episodes(self, *, order: str = "timestamp ASC, rowid ASC") -> Iterator[EpisodeRow]:
        return self._db.all_episodes(order=order, scope=self.scope)

    def unwrapped_episodes(self) -> list[EpisodeRow]:
        return self._db.unwrapped_episodes(scope=self.scope)

    def unwrapped_trusts(self) -> dict[str, str]:
        return self._db.unwrapped_trusts(scope=self.scope)

    def state_key_holders(self, key: str | None = None) -> list[EpisodeRow]:
        return self._db.state_key_holders(key, scope=self.scope)

    def ids_older_than(self, cutoff: str) -> list[str]:
        return self._db.ids_older_than(cutoff, scope=self.scope)

    def update_episode(self, episode_id: str, *, trust: str | Keep = KEEP,
                       state_key: str | None | Keep = KEEP) -> None:
        """Set the episode's trust class and/or state key (``KEEP``: leave it)."""
        self._db.update_episode(episode_id, trust=trust, state_key=state_key)

    def mark_wrapped(self, ids: Sequence[str], wrap_id: int) -> None:
        self._db.mark_wrapped(ids, wrap_id)

    def delete_episode_rows(self, ids: Sequence[str]) -> int:
        return self._db.delete_episode_rows(ids)

    def scrub_indexes(self) -> None:
        self._db.scrub_indexes()

    def checkpoint(self) -> None:
        self._db.checkpoint()

    def count_episodes(self) -> int:
        return self._db.count_episodes(scope=self.scope)

    def count_unwrapped(self) -> int:
        return self._db.count_unwrapped(scope=self.scope)

    def counts_by_type(self) -> dict[str, int]:
        return self._db.counts_by_type(scope=self.scope)

    def counts_by_trust(self) -> dict[str, int]:
        return self._db.counts_by_trust(scope=self.scope)

    def activity_by_day(self, since_day: str) -> list[DayActivity]:
        return self._db.activity_by_day(since_day, scope=self.scope)

    def namespace_counts(self) -> list[NamespaceCount]:
        """Every namespace holding episodes or saved wraps (the root's roles only)."""
        self._refuse_outside_root("namespace_counts")
        return self._db.namespace_counts()

    # -- keyword search (the bodies are the backend's)
    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> SearchPage:
        return self._db.search(self._filters(filters), phrase=phrase, words=words,
                               limit=limit, offset=offset, order=order)

    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]:
        return self._db.rows_by_rowid(rowids, self._filters(filters))

    def ranked_ids(self, filters: SearchFilters, words: Sequence[str], pool: int
                   ) -> RankedPage:
        return self._db.ranked_ids(self._filters(filters), words, pool)

    def index_scores(self, filters: SearchFilters, words: Sequence[str],
                     rowids: Sequence[int]) -> dict[int, float]:
        return self._db.index_scores(self._filters(filters), words, rowids)

    def times_by_rowid(self, rowids: Sequence[int], filters: SearchFilters
                       ) -> dict[int, float | None]:
        return self._db.times_by_rowid(rowids, self._filters(filters))

    def word_counts(self, filters: SearchFilters, words: Sequence[str], cap: int
                    ) -> WordCounts:
        return self._db.word_counts(self._filters(filters), words, cap)


class Links(Role):
    """Supersession links, derivations and tombstones, as ``scope`` sees them. The SQL is
    written here once (the backend's hooks give the dialect: id lists, upsert, insert-or-
    ignore, affected rows). Links are global (ids are): adding or reading the links of
    ids the caller has already read is namespace-neutral; what lists every link or
    tombstone sees only the episodes ``scope`` may read."""

    __slots__ = ()
    _db: SQLBackend

    def _in_scope(self, col: str) -> tuple[str, list[Any]]:
        """``AND col IN (the ids this scope may read)``: nothing at the root's view."""
        extra, params = visible_sql(self.scope)
        if not extra:
            return "", []
        return f" AND {col} IN (SELECT id FROM episodes WHERE TRUE{extra})", params

    def link_tables_used(self) -> LinkTablesUsed:
        """Whether the database holds any supersession link, any derivation: a store
        with none skips looking each id up."""
        r = self._db.q1("SELECT EXISTS (SELECT 1 FROM supersessions), "
                        "EXISTS (SELECT 1 FROM derivations)")
        return LinkTablesUsed(bool(r[0]), bool(r[1])) if r else LinkTablesUsed(False, False)

    # -- supersession
    def add_supersession(self, old_id: str, new_id: str, kind: str, created_at: str) -> None:
        self._db._upsert("supersessions", ("old_id", "new_id", "kind", "created_at"),
                         ("old_id", "new_id"), (old_id, new_id, kind, created_at))

    def remove_supersession(self, old_id: str, new_id: str) -> int:
        return self._db._rowcount("DELETE FROM supersessions WHERE old_id=? AND new_id=?",
                                  (old_id, new_id))

    def supersessions_of(self, ids: Sequence[str]) -> dict[str, list[Successor]]:
        """old_id -> what replaced it (oldest link first), for the given old ids."""
        out: dict[str, list[Successor]] = {}
        for chunk in self._db._chunks(ids):
            cond, params = self._db._in_list("old_id", chunk)
            for o, n, k, c in self._db.q("SELECT old_id, new_id, kind, created_at FROM "
                                         f"supersessions WHERE {cond} ORDER BY created_at",
                                         params):
                out.setdefault(o, []).append(Successor(n, k, c))
        return out

    def superseded_by_new(self, new_id: str) -> list[Predecessor]:
        return [Predecessor(r[0], r[1]) for r in self._db.q(
            "SELECT old_id, kind FROM supersessions WHERE new_id=?", (new_id,))]

    def all_supersessions(self) -> list[LinkRow]:
        """Every link between two episodes this scope may read, oldest first."""
        old, p_old = self._in_scope("old_id")
        new, p_new = self._in_scope("new_id")
        return [LinkRow(r[0], r[1], r[2], r[3]) for r in self._db.q(
            f"SELECT old_id, new_id, kind, created_at FROM supersessions WHERE TRUE{old}{new} "
            "ORDER BY created_at", [*p_old, *p_new])]

    def count_superseded(self) -> int:
        old, params = self._in_scope("old_id")
        return self._db._scalar("SELECT COUNT(DISTINCT old_id) FROM supersessions "
                                f"WHERE TRUE{old}", params)

    def delete_supersessions_touching(self, ids: Sequence[str]) -> list[RemovedLink]:
        """Delete every link from or to these ids; the links deleted."""
        out: list[RemovedLink] = []
        with self._db.transaction():
            for chunk in self._db._chunks(ids):
                old, p_old = self._db._in_list("old_id", chunk)
                new, p_new = self._db._in_list("new_id", chunk)
                where, params = f"{old} OR {new}", [*p_old, *p_new]
                out += [RemovedLink(r[0], r[1], r[2]) for r in self._db.q(
                    f"SELECT old_id, new_id, kind FROM supersessions WHERE {where}", params)]
                self._db.q(f"DELETE FROM supersessions WHERE {where}", params)
        return out

    # -- derivations
    def add_derivations(self, episode_id: str, sources: Sequence[str],
                        pinned_trust: str | None = None) -> None:
        for s in sources:
            self._db._insert_ignore("derivations", ("episode_id", "source_id", "removed_trust"),
                                    (episode_id, s, pinned_trust))

    def derivations_of(self, ids: Sequence[str]) -> dict[str, list[Source]]:
        """episode_id -> the sources it was derived from, for the given ids."""
        out: dict[str, list[Source]] = {}
        for chunk in self._db._chunks(ids):
            cond, params = self._db._in_list("episode_id", chunk)
            for e, s, t in self._db.q("SELECT episode_id, source_id, removed_trust FROM "
                                      f"derivations WHERE {cond}", params):
                out.setdefault(e, []).append(Source(s, t))
        return out

    def mark_source_removed(self, source_id: str, trust: str) -> None:
        self._db.q("UPDATE derivations SET removed_trust=? WHERE source_id=? AND "
                   "removed_trust IS NULL", (trust, source_id))

    def all_derivations(self) -> list[DerivationRow]:
        mine, params = self._in_scope("episode_id")
        return [DerivationRow(r[0], r[1], r[2]) for r in self._db.q(
            "SELECT episode_id, source_id, removed_trust FROM derivations "
            f"WHERE TRUE{mine}", params)]

    # -- tombstones
    def add_tombstone(self, episode_id: str, type_: str, timestamp: str, content_hash: str,
                      removed_at: str, reason: str, trust: str) -> None:
        """A deletion's trace, written in this scope's namespace."""
        self._db._upsert("tombstones", TombstoneRow._fields, ("id",),
                         (episode_id, type_, timestamp, content_hash, removed_at, reason, trust,
                          self.scope.owner, self.scope.project))

    def tombstones(self, ids: Sequence[str] | None = None) -> dict[str, TombstoneRow]:
        """Tombstones by id (of ``ids``, or every one) that this scope may see."""
        extra, xparams = visible_sql(self.scope)
        sql = f"SELECT {', '.join(TombstoneRow._fields)} FROM tombstones WHERE TRUE{extra}"
        if ids is None:
            rows = self._db.q(sql, xparams)
        else:
            rows = []
            for chunk in self._db._chunks(ids):
                cond, params = self._db._in_list("id", chunk)
                rows += self._db.q(f"{sql} AND {cond}", [*xparams, *params])
        return {r[0]: TombstoneRow(*r) for r in rows}

    def count_tombstones(self) -> int:
        extra, params = visible_sql(self.scope)
        return self._db._scalar(f"SELECT COUNT(*) FROM tombstones WHERE TRUE{extra}", params)


class Wraps(Role):
    """Wraps, pattern history and drift probes: one set per namespace (the rows carry
    the scope's key), their SQL written here once."""

    __slots__ = ()
    _db: SQLBackend

    # -- wraps
    def open_wrap(self) -> OpenWrapRow | None:
        """This scope's wrap in progress, if one is."""
        r = self._db.q1("SELECT id, started_at, token, session_id, episode_ids, today FROM "
                        "wraps WHERE status='open' AND ns_key=? ORDER BY id DESC LIMIT 1",
                        (self.scope.key,))
        return None if r is None else OpenWrapRow(int(r[0]), r[1], r[2], r[3],
                                                  json.loads(r[4]), r[5])

    def insert_wrap(self, started_at: str, token: str, session_id: str | None,
                    episode_ids: Sequence[str], today: str) -> int:
        return self._db._insert_id(
            "INSERT INTO wraps(started_at, status, token, session_id, episode_ids, today, ns_key) "
            "VALUES (?, 'open', ?, ?, ?, ?, ?)",
            (started_at, token, session_id, json.dumps(list(episode_ids)), today,
             self.scope.key))

    def close_wrap(self, wrap_id: int, status: str, completed_at: str, *, chars: int | None = None,
                   episodes_compressed: int | None = None,
                   metrics: Mapping[str, object] | None = None) -> None:
        self._db.q("UPDATE wraps SET status=?, completed_at=?, chars=?, episodes_compressed=?, "
                   "metrics=? WHERE id=?",
                   (status, completed_at, chars, episodes_compressed,
                    None if metrics is None else json.dumps(metrics), wrap_id))

    def wrap_history(self, limit: int | None = None) -> list[WrapRow]:
        """This scope's saved wraps, newest first (the ``limit`` newest)."""
        sql = ("SELECT id, started_at, completed_at, chars, episodes_compressed, metrics, "
               "session_id FROM wraps WHERE status='saved' AND ns_key=? ORDER BY id DESC")
        rows = (self._db.q(sql + " LIMIT ?", (self.scope.key, limit)) if limit
                else self._db.q(sql, (self.scope.key,)))
        return [WrapRow(int(r[0]), r[1], r[2], r[3], r[4], json.loads(r[5]) if r[5] else {},
                        r[6]) for r in rows]

    def wrap_counts(self) -> WrapCounts:
        r = self._db.q1("SELECT COUNT(*), MAX(completed_at) FROM wraps WHERE status='saved' "
                        "AND ns_key=?", (self.scope.key,))
        return WrapCounts(int(r[0]), r[1]) if r else WrapCounts(0, None)

    def wrap_totals(self) -> WrapTotals:
        """Every namespace's wraps together (the root's roles only): saved wraps, the last
        one's time, open wraps, and how many namespaces have saved one."""
        self._refuse_outside_root("wrap_totals")
        r = self._db.q1("SELECT COUNT(*), MAX(completed_at), COUNT(DISTINCT ns_key) FROM wraps "
                        "WHERE status='saved'")
        return WrapTotals(int(r[0]) if r else 0, r[1] if r else None,
                          self._db._scalar("SELECT COUNT(*) FROM wraps WHERE status='open'"),
                          int(r[2]) if r else 0)

    def wrapped_ids_before(self, wrap_id: int) -> set[str]:
        extra, params = own_sql(self.scope)
        return {r[0] for r in self._db.q("SELECT id FROM episodes WHERE wrap_id IS NOT NULL "
                                         f"AND wrap_id < ?{extra}", (wrap_id, *params))}

    # -- pattern history
    def pattern_history(self) -> dict[str, PatternRow]:
        """This scope's pattern records by name."""
        rows = self._db.q(f"SELECT {', '.join(PatternRow._fields)} FROM pattern_history "
                          "WHERE ns_key=?", (self.scope.key,))
        return {r[0]: PatternRow(r[0], int(r[1]), int(r[2]), r[3], r[4], r[5],
                                 _json_list(r[6]), _json_list(r[7])) for r in rows}

    def upsert_pattern(self, pattern: PatternRow) -> None:
        """Write ``pattern``'s record in this scope, replacing the one of the same name."""
        self._db._upsert("pattern_history", ("ns_key", *PatternRow._fields), ("ns_key", "name"),
                         (self.scope.key, *pattern[:6], json.dumps(pattern.explanations or []),
                          json.dumps(pattern.grounding or [])))

    def delete_pattern(self, name: str) -> int:
        return self._db._rowcount("DELETE FROM pattern_history WHERE ns_key=? AND name=?",
                                  (self.scope.key, name))

    def has_pattern_history(self) -> bool:
        """Whether a governed save has started this scope's pattern history (its marker
        in the metadata)."""
        return self._db.q1("SELECT 1 FROM meta WHERE key=? AND value IS NOT NULL", (
            ns_meta_key("pattern_history_started", self.scope),)) is not None

    # -- drift probes
    def insert_probe(self, probe: ProbeRow) -> None:
        """Declare ``probe`` in this scope (its verdict fields are the checks' to write)."""
        self._db.q("INSERT INTO drift_probes(id, kind, pattern, min_level, fact, section, "
                   "created_at, ns_key) VALUES (?,?,?,?,?,?,?,?)",
                   (*probe[:7], self.scope.key))

    def probes(self) -> list[ProbeRow]:
        """This scope's probes, oldest first."""
        return [ProbeRow(*r) for r in self._db.q(
            f"SELECT {', '.join(ProbeRow._fields)} FROM drift_probes WHERE ns_key=? "
            "ORDER BY created_at, id", (self.scope.key,))]

    def update_probe(self, probe_id: str, status: str, detail: str, wrap_id: int | None) -> None:
        self._db.q("UPDATE drift_probes SET last_status=?, last_detail=?, last_wrap_id=? "
                   "WHERE id=?", (status, detail, wrap_id, probe_id))

    def delete_probe(self, probe_id: str) -> int:
        return self._db._rowcount("DELETE FROM drift_probes WHERE id=? AND ns_key=?",
                                  (probe_id, self.scope.key))


class Items(Role):
    """Keyed item collections (framework state): this scope's own. The SQL is written
    here once; the backend gives its dialect (a JSON field test, a substring test, the
    LIMIT that means none)."""

    __slots__ = ()
    _db: SQLBackend

    _COLS = "seq, collection, key, value, metadata, created_at, updated_at"

    def item_put(self, collection: str, key: str, value: str, metadata: str | None,
                 now: str) -> ItemRow:
        """Insert or replace the item at ``key``; the row as stored."""
        self._db.q("INSERT INTO items(ns_key, collection, key, value, metadata, created_at, "
                   "updated_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT (ns_key, collection, key) "
                   "DO UPDATE SET value=excluded.value, metadata=excluded.metadata, "
                   "updated_at=excluded.updated_at",
                   (self.scope.key, collection, key, value, metadata, now, now))
        row = self.item_get(collection, key)
        assert row is not None
        return row

    def item_get(self, collection: str, key: str) -> ItemRow | None:
        r = self._db.q1(f"SELECT {self._COLS} FROM items WHERE ns_key=? AND collection=? "
                        "AND key=?", (self.scope.key, collection, key))
        return None if r is None else ItemRow(*r)

    def _where(self, collection: str, prefix: str | None, where: Mapping[str, object] | None,
               contains: str | None) -> tuple[str, list[Any]]:
        sql = "ns_key=? AND collection=?"
        params: list[Any] = [self.scope.key, collection]
        if prefix:
            sql += " AND substr(key, 1, ?) = ?"
            params += [len(prefix), prefix]
        for name, value in (where or {}).items():
            cond, p = self._db._json_eq("metadata", name, value)
            sql += f" AND {cond}"
            params += p
        if contains:
            sql += " AND " + self._db._CONTAINS.format(col="value")
            params.append(contains)
        return sql, params

    def item_list(self, collection: str, *, prefix: str | None = None,
                  where: Mapping[str, object] | None = None, contains: str | None = None,
                  order: str = "asc", limit: int | None = None,
                  offset: int = 0) -> list[ItemRow]:
        cond, params = self._where(collection, prefix, where, contains)
        direction = "DESC" if order == "desc" else "ASC"
        sql = f"SELECT {self._COLS} FROM items WHERE {cond} ORDER BY seq {direction}"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [self._db._NO_LIMIT if limit is None else int(limit), int(offset)]
        return [ItemRow(*r) for r in self._db.q(sql, params)]

    def item_count(self, collection: str, *, prefix: str | None = None,
                   where: Mapping[str, object] | None = None) -> int:
        cond, params = self._where(collection, prefix, where, None)
        return self._db._scalar(f"SELECT COUNT(*) FROM items WHERE {cond}", params)

    def item_delete(self, collection: str, *, key: str | None = None,
                    prefix: str | None = None) -> int:
        if key is not None:
            return self._db._rowcount("DELETE FROM items WHERE ns_key=? AND collection=? "
                                      "AND key=?", (self.scope.key, collection, key))
        cond, params = self._where(collection, prefix, None, None)
        return self._db._rowcount(f"DELETE FROM items WHERE {cond}", params)

    def item_collections(self) -> list[CollectionCount]:
        return [CollectionCount(r[0], int(r[1])) for r in self._db.q(
            "SELECT collection, COUNT(*) FROM items WHERE ns_key=? GROUP BY collection "
            "ORDER BY collection", (self.scope.key,))]


class Meta(Role):
    """Store-wide metadata, the named text blobs (continuity, baton) and the rows the
    erasure of a named owner walks: one per database, or naming what it acts on. Its
    SQL is the backend's dialect of :class:`~.meta_sql.MetaSQL`, built once here."""

    __slots__ = ("_sql",)
    _db: SQLBackend

    def __init__(self, db: Backend, scope: Scope = ROOT) -> None:
        if not isinstance(db, SQLBackend):
            raise TypeError(f"metadata needs a SQL backend, not {type(db).__name__}")
        super().__init__(db, scope)
        self._sql: MetaSQL = db._META_SQL(db)

    def get_meta(self, key: str) -> str | None:
        return self._sql.get(key)

    def set_meta(self, key: str, value: str | None) -> None:
        """Set ``key`` (None: remove it)."""
        self._sql.set(key, value)

    def add_meta_int(self, key: str, delta: int) -> None:
        """Add ``delta`` to the counter at ``key`` (created at ``delta``)."""
        self._sql.add_int(key, delta)

    def meta_with_prefix(self, prefix: str) -> list[MetaEntry]:
        """Every metadata key that starts with ``prefix``, with its value."""
        return self._sql.with_prefix(prefix)

    def delete_meta_if(self, key: str, value: str) -> bool:
        """Drop ``key`` only while it still holds ``value``; whether it did."""
        return self._sql.delete_if(key, value)

    def read_blob(self, name: str) -> str | None:
        return self._sql.read_blob(name)

    def write_blob(self, name: str, text: str, *, lock: str | None = None) -> None:
        self._sql.write_blob(name, text, lock=lock)

    def update_blob(self, name: str, fn: Callable[[str | None], str | None], *,
                    lock: str | None = None) -> str | None:
        """Read-modify-write under the blob's lock; ``fn`` returning None leaves it."""
        return self._sql.update_blob(name, fn, lock=lock)

    def delete_blob(self, name: str, *, lock: str | None = None) -> bool:
        return self._sql.delete_blob(name, lock=lock)

    def owners(self) -> list[str]:
        """Every namespace owner with rows here."""
        return self._sql.owners()

    def text_cells(self, ns_keys: Sequence[str]) -> Iterator[TextCell]:
        """Every stored text field besides the episodes in those namespaces."""
        return self._sql.text_cells(ns_keys)

    def set_text_cell(self, table: str, key: tuple[object, ...], column: str, text: str) -> None:
        self._sql.set_text_cell(table, key, column, text)

    def meta_rows(self) -> list[MetaEntry]:
        return self._sql.rows()

    def episode_ids_of_owner(self, owner: str) -> list[str]:
        return self._sql.episode_ids_of_owner(owner)

    def erase_namespace_rows(self, owner: str) -> ErasedCounts:
        """Remove every per-namespace row of ``owner``'s namespaces; what went."""
        return self._sql.erase_namespace_rows(owner)

    def erase_scope_rows(self, target: Scope) -> ErasedCounts:
        """Remove the per-namespace rows of one project namespace; what went."""
        return self._sql.erase_scope_rows(target)

    def erase_owner_meta(self, owner: str, extra_keys: Sequence[str] = ()) -> int:
        return self._sql.erase_owner_meta(owner, extra_keys)

    def owner_projects(self, owner: str) -> list[str | None]:
        """The projects ``owner`` has memory in (None: its user-level memory)."""
        return self._sql.owner_projects(owner)


class AuditChain(Role):
    """The database's copy of the audit chain (one per database, whatever the scope):
    its SQL is the backend's dialect of :class:`~.audit_sql.AuditSQL`, built once here."""

    __slots__ = ("_sql",)
    _db: SQLBackend

    def __init__(self, db: Backend, scope: Scope = ROOT) -> None:
        if not isinstance(db, SQLBackend):
            raise TypeError(f"an audit chain needs a SQL backend, not {type(db).__name__}")
        super().__init__(db, scope)
        self._sql: AuditSQL = db._AUDIT_SQL(db)

    @property
    def mirrors_audit_to_files(self) -> bool:
        """False when the chain lives only in the database (no per-host JSONL mirror)."""
        return self._db.mirrors_audit_to_files

    def audit_tip(self) -> AuditTip:
        """The last entry's seq and hash (0 and 64 zeros when the chain is empty)."""
        return self._sql.tip()

    def audit_insert(self, entry: AuditEntry) -> None:
        self._sql.insert_rows([entry_row(entry)])

    def audit_insert_rows(self, rows: Sequence[AuditRowValues]) -> None:
        """Insert consecutive entries of the chain, oldest first, each as its column
        values (data as JSON text)."""
        self._sql.insert_rows(rows)

    def audit_entries(self, after_seq: int = 0, limit: int | None = None) -> list[AuditEntry]:
        """The chain after ``after_seq`` in full (compacted entries read back from the
        audit files)."""
        return self._sql.entries(after_seq, limit)

    def audit_count(self) -> int:
        return self._sql.count()

    def audit_row_values(self, after_seq: int = 0) -> list[AuditRowValues]:
        """What ``audit_rows`` reads, each entry as its column values, data not parsed."""
        return self._sql.row_values(after_seq)

    def audit_rows(self, after_seq: int = 0, limit: int | None = None) -> list[AuditEntry]:
        """The entries the database holds in full: what a mirror writes to the files."""
        return self._sql.rows(after_seq, limit)

    def audit_digests(self, after_seq: int = 0,
                      limit: int | None = None) -> list[AuditDigest]:
        """(seq, hash, compacted) of every entry after ``after_seq`` (compacted: only its
        hash is kept in the database, its text is in the audit files)."""
        return self._sql.digests(after_seq, limit)

    def audit_compact(self, digests: Sequence[tuple[int, str]]) -> int:
        """Keep only the hashes of these mirrored (seq, hash) entries; how many rows were
        compacted (none where the database's copy is the chain's only one)."""
        return self._sql.compact(digests)
