"""The backend seen through one namespace, as one flat object.

The roles of ``roles.py`` are how the layers above storage act in a namespace: each is
built for its scope. :class:`ScopedBackend` is the same view for a caller that still
holds one backend-like object (the Store's scoped views until they hold roles, the
vectors and governance helpers that take a backend): every method it has is written out
below. Those that read or write namespaced rows go through the roles built for its
scope; those that are namespace-neutral (transactions, raw SQL for the helpers in this
package, lookups by ids the view has already checked) are passed to the backend
unchanged and listed in :data:`NEUTRAL`. The audit chain and the metadata are not
forwarded at all: they are the view's ``chain`` and ``meta`` roles. A backend method with no
counterpart here does not exist on a view (AttributeError), so a method added to the
backend later cannot leak across namespaces by being forwarded unscoped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from .base import (
    KEEP,
    Backend,
    Connection,
    EpisodeRow,
    Keep,
    RankedPage,
    Scope,
    SearchFilters,
    SearchPage,
)
from .common import SQLBackend
from .roles import AuditChain, Episodes, Items, Links, Meta, OutOfScope, Wraps
from .rows import (
    CollectionCount,
    DayActivity,
    ItemRow,
    NamespaceCount,
    WordCounts,
)

_T = TypeVar("_T")

#: Backend members a view passes on unchanged (each acts on ids or rows the view has
#: already filtered, or on what is one per database: transactions; the audit chain and
#: the metadata are the view's ``chain`` and ``meta`` roles), and the role methods that act
#: alike in every scope (``Links`` adding or reading the links of ids its caller has read,
#: ``Wraps.update_probe`` and ``close_wrap`` by row id).
NEUTRAL: frozenset[str] = frozenset({
    "add_derivations", "add_supersession", "checkpoint", "close", "close_wrap", "closed",
    "delete_episode_rows", "delete_supersessions_touching", "derivations_of", "execute",
    "executemany", "id_taken", "ids_taken", "in_transaction", "integrity_check",
    "mark_source_removed", "mark_wrapped", "mirrors_audit_to_files", "path", "q", "q1",
    "read", "read_only", "savepoint", "link_tables_used", "remove_supersession",
    "scrub_indexes", "superseded_by_new", "supersessions_of", "transaction",
    "update_episode", "update_probe", "dsn",
})


class ScopedBackend(Connection):
    """``inner`` as one namespace sees it (its namespaced calls go through the roles
    built for ``scope``, once, when the view is built)."""

    def __init__(self, inner: Backend, scope: Scope) -> None:
        if isinstance(inner, ScopedBackend):
            raise TypeError("scope the underlying backend, not a scoped one")
        if not isinstance(inner, SQLBackend):
            raise TypeError(f"a scoped view needs a SQL backend, not {type(inner).__name__}")
        self._inner: SQLBackend = inner
        self._schema_ready = False
        self.scope = scope
        self.path = inner.path
        self.read_only = inner.read_only
        #: the view's roles, built once for its scope (``Repositories.of`` hands them out)
        self.episodes = Episodes(inner, scope)
        self.links = Links(inner, scope)
        self.wraps = Wraps(inner, scope)
        self.items = Items(inner, scope)
        self.meta = Meta(inner, scope)
        self.chain = AuditChain(inner, scope)

    @property
    def inner(self) -> Backend:
        return self._inner

    # -- what the helpers of this package reach on a backend (vectors, governance)
    @property
    def dsn(self) -> str | None:
        return getattr(self._inner, "dsn", None)

    @property
    def _gov_schema_ready(self) -> bool:
        return self._schema_ready or self._inner._gov_schema_ready

    @_gov_schema_ready.setter
    def _gov_schema_ready(self, ready: bool) -> None:
        self._schema_ready = ready  # this view's own mark, as the backend's is its own

    def _filter_sql(self, f: SearchFilters, alias: str = "e") -> tuple[str, list[Any]]:
        return self._inner._filter_sql(f, alias)

    def _in_list(self, col: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
        return self._inner._in_list(col, ids)

    def _chunks(self, ids: Sequence[Any]) -> Iterator[list[Any]]:
        return self._inner._chunks(ids)

    def _rowcount(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._inner._rowcount(sql, params)

    # -- connection: transactions and raw SQL (namespace-neutral)
    def close(self) -> None:
        self._inner.close()

    @property
    def closed(self) -> bool:
        return self._inner.closed

    @property
    def in_transaction(self) -> bool:
        return self._inner.in_transaction

    def transaction(self, *, appends_only: bool = False
                    ) -> contextlib.AbstractContextManager[None]:
        return self._inner.transaction(appends_only=appends_only)

    def read(self) -> contextlib.AbstractContextManager[None]:
        return self._inner.read()

    def integrity_check(self) -> str:
        return self._inner.integrity_check()

    def q(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._inner.q(sql, params)

    def q1(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._inner.q1(sql, params)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._inner.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._inner.executemany(sql, rows)

    # -- metadata, blobs and the erasure rows: the view's ``meta`` role
    # -- the audit chain (one per database: its role is ``self.chain``)
    @property
    def mirrors_audit_to_files(self) -> bool:
        return self._inner.mirrors_audit_to_files

    # -- episodes
    def memo(self, key: Hashable, compute: Callable[[], _T], *,
             size: Callable[[_T], int] | None = None) -> _T:
        return self.episodes.memo(key, compute, size=size)

    def insert_episode(self, row: EpisodeRow) -> None:
        self.episodes.insert_episode(row)

    def insert_episodes(self, rows: Sequence[EpisodeRow]) -> None:
        self.episodes.insert_episodes(rows)

    def id_taken(self, episode_id: str) -> bool:
        return self.episodes.id_taken(episode_id)

    def ids_taken(self, ids: Sequence[str]) -> set[str]:
        return self.episodes.ids_taken(ids)

    def get_episodes(self, ids: Sequence[str], *, exact: bool = False) -> dict[str, EpisodeRow]:
        return self.episodes.get_episodes(ids, exact=exact)

    def trusts_of(self, ids: Sequence[str]) -> dict[str, str]:
        return self.episodes.trusts_of(ids)

    def all_episodes(self, *, order: str = "timestamp ASC, rowid ASC") -> Iterator[EpisodeRow]:
        return self.episodes.all_episodes(order=order)

    def unwrapped_episodes(self) -> list[EpisodeRow]:
        return self.episodes.unwrapped_episodes()

    def unwrapped_trusts(self) -> dict[str, str]:
        return self.episodes.unwrapped_trusts()

    def state_key_holders(self, key: str | None = None) -> list[EpisodeRow]:
        return self.episodes.state_key_holders(key)

    def ids_older_than(self, cutoff: str) -> list[str]:
        return self.episodes.ids_older_than(cutoff)

    def update_episode(self, episode_id: str, *, trust: str | Keep = KEEP,
                       state_key: str | None | Keep = KEEP) -> None:
        self.episodes.update_episode(episode_id, trust=trust, state_key=state_key)

    def mark_wrapped(self, ids: Sequence[str], wrap_id: int) -> None:
        self.episodes.mark_wrapped(ids, wrap_id)

    def delete_episode_rows(self, ids: Sequence[str]) -> int:
        return self.episodes.delete_episode_rows(ids)

    def scrub_indexes(self) -> None:
        self.episodes.scrub_indexes()

    def checkpoint(self) -> None:
        self.episodes.checkpoint()

    def count_episodes(self) -> int:
        return self.episodes.count_episodes()

    def count_unwrapped(self) -> int:
        return self.episodes.count_unwrapped()

    def counts_by_type(self) -> dict[str, int]:
        return self.episodes.counts_by_type()

    def counts_by_trust(self) -> dict[str, int]:
        return self.episodes.counts_by_trust()

    def activity_by_day(self, since_day: str) -> list[DayActivity]:
        return self.episodes.activity_by_day(since_day)

    def namespace_counts(self) -> list[NamespaceCount]:
        """Refused: it lists every namespace, which no view may see."""
        raise OutOfScope("namespace_counts lists every namespace: call it on the root "
                         "Store's backend, not through a namespace-scoped view")

    # -- keyword search
    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> SearchPage:
        return self.episodes.search(filters, phrase=phrase, words=words, limit=limit,
                                          offset=offset, order=order)

    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]:
        return self.episodes.rows_by_rowid(rowids, filters)

    def ranked_ids(self, filters: SearchFilters, words: Sequence[str], pool: int
                   ) -> RankedPage:
        return self.episodes.ranked_ids(filters, words, pool)

    def index_scores(self, filters: SearchFilters, words: Sequence[str],
                     rowids: Sequence[int]) -> dict[int, float]:
        return self.episodes.index_scores(filters, words, rowids)

    def times_by_rowid(self, rowids: Sequence[int], filters: SearchFilters
                       ) -> dict[int, float | None]:
        return self.episodes.times_by_rowid(rowids, filters)

    def word_counts(self, filters: SearchFilters, words: Sequence[str], cap: int
                    ) -> WordCounts:
        return self.episodes.word_counts(filters, words, cap)

    # -- item collections: the namespace's own
    def item_put(self, collection: str, key: str, value: str, metadata: str | None,
                 now: str) -> ItemRow:
        return self.items.item_put(collection, key, value, metadata, now)

    def item_get(self, collection: str, key: str) -> ItemRow | None:
        return self.items.item_get(collection, key)

    def item_list(self, collection: str, *, prefix: str | None = None,
                  where: Mapping[str, object] | None = None, contains: str | None = None,
                  order: str = "asc", limit: int | None = None, offset: int = 0) -> list[ItemRow]:
        return self.items.item_list(collection, prefix=prefix, where=where,
                                          contains=contains, order=order, limit=limit,
                                          offset=offset)

    def item_count(self, collection: str, *, prefix: str | None = None,
                   where: Mapping[str, object] | None = None) -> int:
        return self.items.item_count(collection, prefix=prefix, where=where)

    def item_delete(self, collection: str, *, key: str | None = None,
                    prefix: str | None = None) -> int:
        return self.items.item_delete(collection, key=key, prefix=prefix)

    def item_collections(self) -> list[CollectionCount]:
        return self.items.item_collections()
