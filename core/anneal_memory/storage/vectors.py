"""The vectors repository: an embedder's vectors of episodes, on either backend.

One table, ``episode_vectors`` (episode id, model id, dimension, the namespace key the
episode was written in, the vector as little-endian float32 bytes), created by the
schema migrations of both backends. A vector is removed with its episode by the
database itself (``ON DELETE CASCADE``), on every path that deletes one: delete, erase,
prune, erase_namespace. Vectors are derived data: an export leaves them out and a store
rebuilds them (``store.embed_pending()``).

Every read joins the episodes and applies the recall filters there (namespace first,
then type, trust, time, superseded), so nothing a filter hides is ever scored. Built on
a scoped backend, the repository reads and writes that namespace only, whatever the
filters a caller passes say. SQL is written once, with ``?`` placeholders and syntax
both databases accept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from .base import ROOT, Scope, SearchFilters
from .common import reach_sql, visible_sql

_PENDING = ("NOT EXISTS (SELECT 1 FROM episode_vectors v WHERE v.episode_id = e.id "
            "AND v.model = ?{dim})")


class StoredVector(NamedTuple):
    """One stored vector: its row id in ``episode_vectors``, episode id and bytes."""

    rowid: int
    episode_id: str
    vector: bytes


class NewEpisodes(NamedTuple):
    """Episodes recorded past a row id, and the store's highest row id."""

    ids: list[str]
    high: int


class Similarity(NamedTuple):
    """An episode's cosine similarity to a query."""

    episode_id: str
    cosine: float


class PendingEpisode(NamedTuple):
    """An episode with no vector of a model yet: its row id, id, text and namespace key."""

    rowid: int
    episode_id: str
    content: str
    ns_key: str


class EpisodeText(NamedTuple):
    """An episode's id, text and namespace key (what an embedder is given)."""

    episode_id: str
    content: str
    ns_key: str


class VectorCount(NamedTuple):
    """How many vectors of one model and dimension the scope's episodes have."""

    model: str
    dim: int
    vectors: int


class VectorRepo:
    """Vectors of the episodes ``backend`` may see (a scoped backend: its namespace)."""

    def __init__(self, backend: Any) -> None:
        self._b = backend
        #: a namespace view's scope overrides any scope in the filters it is given
        self._scope: Scope | None = getattr(backend, "scope", None)

    def _exists(self) -> bool:
        """Whether the table is there: a store opened read-only is not migrated, so one
        written before schema 5 (SQLite) / 3 (PostgreSQL) has none, and holds no vector."""
        if not self._b.read_only:
            return True
        inner = getattr(self._b, "inner", self._b)
        sql = ("SELECT to_regclass('episode_vectors')" if getattr(inner, "dsn", None)
               else "SELECT 1 FROM sqlite_master WHERE type='table' AND name='episode_vectors'")
        r = self._b.q1(sql)
        return bool(r and r[0])

    @property
    def scope(self) -> Scope:
        return self._scope if self._scope is not None else ROOT

    def _where(self, f: SearchFilters) -> tuple[str, list[Any]]:
        if self._scope is not None:
            f = replace(f, scope=self._scope)
        where, params = self._b._filter_sql(f, "e")
        return where, list(params)

    def pending(self, f: SearchFilters, model: str, dim: int | None, limit: int, *,
                after: int = 0) -> list[PendingEpisode]:
        """(row id, id, content, namespace key) of up to ``limit`` episodes after row id
        ``after`` that the filters let through and that have no vector of ``model`` (of
        ``dim``, when known), oldest first. A caller walking every pending episode passes
        the last row id it got, so each batch starts where the last one ended instead of
        stepping again over every episode embedded before it."""
        where, params = self._where(f)
        cond, extra = self._pending_cond(model, dim)
        rows = self._b.q(f"SELECT e.rowid, e.id, e.content, e.ns_owner, e.ns_project "
                         f"FROM episodes e WHERE e.rowid > ? AND {where} AND {cond} "
                         f"ORDER BY e.rowid LIMIT ?", [int(after), *params, *extra, int(limit)])
        return [PendingEpisode(int(r[0]), str(r[1]), str(r[2]), Scope(r[3], r[4]).key)
                for r in rows]

    def count_pending(self, f: SearchFilters, model: str, dim: int | None) -> int:
        where, params = self._where(f)
        cond, extra = self._pending_cond(model, dim)
        r = self._b.q1(f"SELECT COUNT(*) FROM episodes e WHERE {where} AND {cond}",
                       [*params, *extra])
        return int(r[0] or 0) if r else 0

    @staticmethod
    def _pending_cond(model: str, dim: int | None) -> tuple[str, list[Any]]:
        if dim is None:
            return _PENDING.format(dim=""), [model]
        return _PENDING.format(dim=" AND v.dim = ?"), [model, int(dim)]

    def put(self, model: str, dim: int, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Store (episode id, namespace key, vector bytes) rows, replacing an episode's
        vector of the same model and dimension; an id no longer in the store (deleted
        meanwhile) is skipped."""
        if not rows:
            return
        self._b.executemany(
            "INSERT INTO episode_vectors(episode_id, model, dim, ns_key, vector) "
            "SELECT e.id, ?, ?, ?, ? FROM episodes e WHERE e.id = ? "
            "ON CONFLICT (episode_id, model, dim) DO UPDATE SET vector = excluded.vector",
            [(model, int(dim), ns, blob, eid) for eid, ns, blob in rows])

    def visible(self, f: SearchFilters) -> list[str]:
        """Ids of every episode the filters let through (in no particular order): the
        candidates a vector ranking may score (no vector is read for any other)."""
        if not f.include_superseded and self._b.q1("SELECT 1 FROM supersessions LIMIT 1") is None:
            f = replace(f, include_superseded=True)  # nothing is replaced: skip the test per row
        where, params = self._where(f)
        # no ORDER BY: without filters SQLite then reads the narrow id index, not the rows
        return [str(r[0]) for r in self._b.q(f"SELECT e.id FROM episodes e WHERE {where}",
                                             params)]

    def vectors_of(self, model: str, dim: int, ids: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors of ``model`` and ``dim`` of these episode ids (ids without
        one are left out). Callers pass ids ``visible`` returned."""
        out: dict[str, bytes] = {}
        if not ids or not self._exists():
            return out
        for chunk in self._b._chunks(list(ids)):
            cond, params = self._b._in_list("episode_id", chunk)
            for eid, blob in self._b.q(f"SELECT episode_id, vector FROM episode_vectors WHERE "
                                       f"model = ? AND dim = ? AND {cond}",
                                       [model, int(dim), *params]):
                out[str(eid)] = bytes(blob)
        return out

    # -------------------------------------------------------- sqlite-vec, when it loads

    def sqlite_vec(self) -> bool:
        """Whether sqlite-vec's functions are on this connection: loaded on the first ask
        when the ``sqlite-vec`` package imports and this Python's SQLite can load
        extensions (Debian's, ``pysqlite3``; not pyenv's), else False, silently."""
        inner = getattr(self._b, "inner", self._b)
        state = getattr(inner, "_am_sqlite_vec", None)
        if state is None:
            state = False
            conn = getattr(inner, "conn", None)
            if (conn is not None and not getattr(inner, "dsn", None)
                    and hasattr(conn, "enable_load_extension")):
                try:
                    import sqlite_vec  # type: ignore[import-not-found]

                    conn.enable_load_extension(True)
                    try:
                        sqlite_vec.load(conn)
                    finally:
                        conn.enable_load_extension(False)
                    state = True
                except Exception:  # not installed, or the build refuses: the fallback
                    state = False
            inner._am_sqlite_vec = state
        return bool(state)

    def similarities(self, model: str, dim: int, query: bytes, f: SearchFilters
                     ) -> list[Similarity]:
        """Cosine similarity of ``query`` (packed, normalised) to the stored vector of
        every episode the filters let through, computed by sqlite-vec in the database
        (call only when :meth:`sqlite_vec` is True)."""
        where, params = self._where(f)
        rows = self._b.q("SELECT v.episode_id, 1.0 - vec_distance_cosine(v.vector, ?) "
                         "FROM episode_vectors v JOIN episodes e ON e.id = v.episode_id "
                         f"WHERE v.model = ? AND v.dim = ? AND {where}",
                         [query, model, int(dim), *params])
        return [Similarity(str(r[0]), float(r[1])) for r in rows]

    # -------------------------------------------------------- the cached matrix (SQLite)

    def data_version(self) -> int | None:
        """SQLite's ``PRAGMA data_version`` on this connection (it moves when another
        connection commits); None on PostgreSQL, which has no such counter."""
        inner = getattr(self._b, "inner", self._b)
        if getattr(inner, "dsn", None) or not self._exists():
            return None
        r = self._b.q1("PRAGMA data_version")
        return int(r[0]) if r else None

    def _vis_join(self) -> tuple[str, str, list[Any]]:
        """(join, condition, params) restricting vectors to this scope's readers."""
        vis, params = visible_sql(self.scope, "e")
        if not vis:
            return "", "", []
        return " JOIN episodes e ON e.id = v.episode_id", vis, list(params)

    def vectors_since(self, model: str, dim: int, after: int) -> list[StoredVector]:
        """(row id, episode id, vector) of every vector of ``model`` and ``dim`` this scope
        sees with a row id above ``after`` (SQLite): what a cached matrix lacks."""
        join, vis, params = self._vis_join()
        # +model / +dim: walk the table from the row id, not the (model, dim) index
        rows = self._b.q(f"SELECT v.rowid, v.episode_id, v.vector FROM episode_vectors v{join} "
                         f"WHERE v.rowid > ? AND +v.model = ? AND +v.dim = ?{vis}",
                         [int(after), model, int(dim), *params])
        return [StoredVector(int(r[0]), str(r[1]), bytes(r[2])) for r in rows]

    def count_vectors(self, model: str, dim: int) -> int:
        """How many vectors of ``model`` and ``dim`` this scope sees."""
        join, vis, params = self._vis_join()
        r = self._b.q1(f"SELECT COUNT(*) FROM episode_vectors v{join} "
                       f"WHERE v.model = ? AND v.dim = ?{vis}", [model, int(dim), *params])
        return int(r[0] or 0) if r else 0

    def max_episode_rowid(self) -> int:
        """The highest episode row id (0: none): where a cache's check for new ones starts."""
        r = self._b.q1("SELECT MAX(rowid) FROM episodes")
        return int(r[0] or 0) if r else 0

    def episodes_since(self, after: int) -> NewEpisodes:
        """(ids of the episodes this scope sees with a row id above ``after``, the highest
        row id of the store): where a cached matrix looks for episodes without a vector."""
        vis, params = visible_sql(self.scope, "e")
        top = self._b.q1("SELECT MAX(rowid) FROM episodes")
        high = int(top[0] or 0) if top else 0
        if high <= after:
            return NewEpisodes([], high)
        rows = self._b.q(f"SELECT e.id FROM episodes e WHERE e.rowid > ? AND e.rowid <= ?{vis}",
                         [int(after), high, *params])
        return NewEpisodes([str(r[0]) for r in rows], high)

    def pending_ids(self, model: str, dim: int) -> list[str]:
        """Ids of every episode this scope sees that has no vector of ``model``, ``dim``."""
        vis, params = visible_sql(self.scope, "e")
        cond, extra = self._pending_cond(model, dim)
        return [str(r[0]) for r in self._b.q(
            f"SELECT e.id FROM episodes e WHERE {cond}{vis}", [*extra, *params])]

    def passing(self, f: SearchFilters, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are still there and pass the filters (and this scope)."""
        if not ids:
            return set()
        where, params = self._where(f)
        out: set[str] = set()
        for chunk in self._b._chunks(list(ids)):
            cond, cparams = self._b._in_list("e.id", chunk)
            out.update(str(r[0]) for r in self._b.q(
                f"SELECT e.id FROM episodes e WHERE {where} AND {cond}", [*params, *cparams]))
        return out

    def contents(self, ids: Sequence[str], *, newest: int | None = None
                 ) -> list[EpisodeText]:
        """(id, content, namespace key) of these episodes, in the order given, or the
        ``newest`` of them (last recorded first)."""
        found: dict[str, tuple[int, str, str, str]] = {}
        vis, vparams = visible_sql(self.scope)
        for chunk in self._b._chunks(list(ids)):
            cond, params = self._b._in_list("id", chunk)
            for rowid, eid, content, owner, project in self._b.q(
                    f"SELECT rowid, id, content, ns_owner, ns_project FROM episodes WHERE "
                    f"{cond}{vis}", [*params, *vparams]):
                found[str(eid)] = (int(rowid), str(eid), str(content), Scope(owner, project).key)
        rows = [found[i] for i in ids if i in found]
        if newest is not None:
            rows = sorted(rows, key=lambda r: -r[0])[:newest]
        return [EpisodeText(eid, content, ns) for _r, eid, content, ns in rows]

    def counts(self) -> list[VectorCount]:
        """(model, dimension, vectors) of the episodes this repository's scope sees."""
        if not self._exists():
            return []
        vis, params = visible_sql(self.scope, "e")
        rows = self._b.q("SELECT v.model, v.dim, COUNT(*) FROM episode_vectors v JOIN episodes e "
                         f"ON e.id = v.episode_id WHERE TRUE{vis} GROUP BY v.model, v.dim "
                         "ORDER BY v.model, v.dim", params)
        return [VectorCount(str(r[0]), int(r[1]), int(r[2])) for r in rows]

    def drop(self, model: str | None = None) -> int:
        """Remove the vectors (of ``model``, or every model's) of the episodes this scope
        may change: the whole store at the root, a view's own namespace. How many went."""
        reach, params = reach_sql(self.scope, "e")
        sql = ("DELETE FROM episode_vectors WHERE episode_id IN (SELECT e.id FROM episodes e "
               f"WHERE TRUE{reach})")
        if model is not None:
            sql += " AND model = ?"
            params = [*params, model]
        return int(self._b._rowcount(sql, params))
