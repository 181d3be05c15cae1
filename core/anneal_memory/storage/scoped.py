"""The backend seen through one namespace: every call carries the view's scope.

A scoped Store view holds this object instead of the raw backend. Each method that
reads or writes namespaced rows is defined here and passes the view's :class:`Scope`
to the backend, whose SQL filters on the indexed namespace columns before anything is
ranked, counted or exported. Methods that are namespace-neutral (transactions, the
audit chain, metadata, lookups by ids the view has already checked) are forwarded by
name from :data:`NEUTRAL`; any other attribute is refused, so a backend method added
later cannot leak across namespaces by being forwarded unscoped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from .base import Backend, EpisodeRow, RankedHit, Scope, SearchFilters

#: Backend members a view forwards unchanged (each acts on ids or rows the view has
#: already filtered, or on what is one per database: transactions, audit, metadata).
NEUTRAL: frozenset[str] = frozenset({
    "add_derivations", "add_meta_int", "add_supersession", "audit_compact", "audit_count",
    "audit_digests", "audit_entries", "audit_insert", "audit_insert_rows", "audit_row_values", "audit_rows", "audit_tip", "checkpoint", "close", "close_wrap", "closed", "conn",
    "delete_episode_rows", "delete_supersessions_touching", "derivations_of", "execute",
    "executemany", "get_meta", "id_taken", "ids_taken", "in_transaction", "integrity_check",
    "mark_source_removed", "mark_wrapped", "mirrors_audit_to_files", "path", "q", "q1",
    "read", "read_blob", "read_only", "savepoint", "meta_with_prefix",
    "delete_meta_if", "link_tables_used", "remove_supersession", "scrub_indexes", "set_meta",
    "superseded_by_new", "supersessions_of", "transaction", "update_blob", "update_episode",
    "update_probe", "write_blob", "dsn", "schema",
    # erasure: each names the owner, keys or ids it acts on (the erase path passes them)
    "delete_blob", "text_cells", "set_text_cell", "erase_namespace_rows", "erase_scope_rows",
    "episode_ids_of_owner", "owner_projects", "owners", "meta_rows", "erase_owner_meta",
})


class ScopedBackend:
    """``inner`` as one namespace sees it."""

    def __init__(self, inner: Backend, scope: Scope) -> None:
        if isinstance(inner, ScopedBackend):
            raise TypeError("scope the underlying backend, not a scoped one")
        self._inner = inner
        self.scope = scope

    @property
    def inner(self) -> Backend:
        return self._inner

    def __getattr__(self, name: str) -> Any:
        if name in NEUTRAL or (name.startswith("_") and not name.startswith("__")):
            return getattr(self._inner, name)
        raise AttributeError(f"{name!r} is not available through a namespace-scoped backend")

    # -- episodes
    def insert_episode(self, row: EpisodeRow) -> None:
        self._inner.insert_episode(replace(row, ns_owner=self.scope.owner,
                                           ns_project=self.scope.project))

    def insert_episodes(self, rows: Sequence[EpisodeRow]) -> None:
        self._inner.insert_episodes([replace(row, ns_owner=self.scope.owner,
                                             ns_project=self.scope.project) for row in rows])

    def get_episodes(self, ids: Sequence[str], *, exact: bool = False,
                     **_: Any) -> dict[str, EpisodeRow]:
        return self._inner.get_episodes(ids, scope=self.scope, exact=exact)

    def memo(self, key: Any, compute: Callable[[], Any], *,
             size: Callable[[Any], int] | None = None, **_: Any) -> Any:
        return self._inner.memo(key, compute, scope=self.scope, size=size)

    def trusts_of(self, ids: Sequence[str], **_: Any) -> dict[str, str]:
        return self._inner.trusts_of(ids, scope=self.scope)

    def all_episodes(self, *, order: str = "timestamp ASC, rowid ASC",
                     **_: Any) -> Iterator[EpisodeRow]:
        return self._inner.all_episodes(order=order, scope=self.scope)

    def unwrapped_episodes(self, **_: Any) -> list[EpisodeRow]:
        return self._inner.unwrapped_episodes(scope=self.scope)

    def unwrapped_trusts(self, **_: Any) -> dict[str, str]:
        return self._inner.unwrapped_trusts(scope=self.scope)

    def state_key_holders(self, key: str | None = None, **_: Any) -> list[EpisodeRow]:
        return self._inner.state_key_holders(key, scope=self.scope)

    def ids_older_than(self, cutoff: str, **_: Any) -> list[str]:
        return self._inner.ids_older_than(cutoff, scope=self.scope)

    def count_episodes(self, **_: Any) -> int:
        return self._inner.count_episodes(scope=self.scope)

    def count_unwrapped(self, **_: Any) -> int:
        return self._inner.count_unwrapped(scope=self.scope)

    def counts_by_type(self, **_: Any) -> dict[str, int]:
        return self._inner.counts_by_type(scope=self.scope)

    def counts_by_trust(self, **_: Any) -> dict[str, int]:
        return self._inner.counts_by_trust(scope=self.scope)

    def activity_by_day(self, since_day: str, **_: Any) -> list[tuple[str, int, int]]:
        return self._inner.activity_by_day(since_day, scope=self.scope)

    def namespace_counts(self) -> list[tuple[str, str | None, int, int]]:
        """Refused: it lists every namespace, which no view may see."""
        raise AttributeError("namespace_counts lists every namespace: call it on the root "
                             "Store's backend, not through a namespace-scoped view")

    def wrap_totals(self) -> tuple[int, str | None, int, int]:
        """Refused: it counts every namespace's wraps, which no view may see."""
        raise AttributeError("wrap_totals counts every namespace's wraps: call it on the "
                             "root Store's backend, not through a namespace-scoped view")

    # -- search
    def _scoped(self, filters: SearchFilters) -> SearchFilters:
        return replace(filters, scope=self.scope)

    def search(self, filters: SearchFilters, **kwargs: Any) -> tuple[list[tuple[EpisodeRow, float]], int]:
        return self._inner.search(self._scoped(filters), **kwargs)

    def rows_by_rowid(self, rowids: Sequence[int], filters: SearchFilters) -> dict[int, EpisodeRow]:
        return self._inner.rows_by_rowid(rowids, self._scoped(filters))

    def ranked_ids(self, filters: SearchFilters, words: Sequence[str], pool: int
                   ) -> tuple[list[RankedHit], int]:
        return self._inner.ranked_ids(self._scoped(filters), words, pool)

    def index_scores(self, filters: SearchFilters, words: Sequence[str],
                     rowids: Sequence[int]) -> dict[int, float]:
        return self._inner.index_scores(self._scoped(filters), words, rowids)

    def times_by_rowid(self, rowids: Sequence[int], filters: SearchFilters
                       ) -> dict[int, float | None]:
        return self._inner.times_by_rowid(rowids, self._scoped(filters))

    def word_counts(self, filters: SearchFilters, words: Sequence[str], cap: int
                    ) -> tuple[int, dict[str, int]]:
        return self._inner.word_counts(self._scoped(filters), words, cap)

    # -- links and tombstones
    def all_supersessions(self, **_: Any) -> list[tuple[str, str, str, str]]:
        return self._inner.all_supersessions(scope=self.scope)

    def count_superseded(self, **_: Any) -> int:
        return self._inner.count_superseded(scope=self.scope)

    def all_derivations(self, **_: Any) -> list[tuple[str, str, str | None]]:
        return self._inner.all_derivations(scope=self.scope)

    def add_tombstone(self, *args: Any, **_: Any) -> None:
        self._inner.add_tombstone(*args, scope=self.scope)

    def tombstones(self, ids: Sequence[str] | None = None, *, namespaces: bool = False,
                   **_: Any) -> dict[str, dict[str, Any]]:
        return self._inner.tombstones(ids, scope=self.scope, namespaces=namespaces)

    def count_tombstones(self, **_: Any) -> int:
        return self._inner.count_tombstones(scope=self.scope)

    # -- wraps, patterns, probes: one set per namespace
    def open_wrap(self, **_: Any) -> dict[str, Any] | None:
        return self._inner.open_wrap(scope=self.scope)

    def insert_wrap(self, *args: Any, **_: Any) -> int:
        return self._inner.insert_wrap(*args, scope=self.scope)

    def wrap_history(self, limit: int | None = None, **_: Any) -> list[dict[str, Any]]:
        return self._inner.wrap_history(limit, scope=self.scope)

    def wrap_counts(self, **_: Any) -> tuple[int, str | None]:
        return self._inner.wrap_counts(scope=self.scope)

    def wrapped_ids_before(self, wrap_id: int, **_: Any) -> set[str]:
        return self._inner.wrapped_ids_before(wrap_id, scope=self.scope)

    def pattern_history(self, **_: Any) -> dict[str, dict[str, Any]]:
        return self._inner.pattern_history(scope=self.scope)

    def upsert_pattern(self, rec: dict[str, Any], **_: Any) -> None:
        self._inner.upsert_pattern(rec, scope=self.scope)

    def delete_pattern(self, name: str, **_: Any) -> int:
        return self._inner.delete_pattern(name, scope=self.scope)

    def has_pattern_history(self, **_: Any) -> bool:
        return self._inner.has_pattern_history(scope=self.scope)

    def insert_probe(self, rec: dict[str, Any], **_: Any) -> None:
        self._inner.insert_probe(rec, scope=self.scope)

    def probes(self, **_: Any) -> list[dict[str, Any]]:
        return self._inner.probes(scope=self.scope)

    def delete_probe(self, probe_id: str, **_: Any) -> int:
        return self._inner.delete_probe(probe_id, scope=self.scope)

    # -- item collections: the namespace's own
    def item_put(self, *args: Any, **_: Any) -> tuple[Any, ...]:
        return self._inner.item_put(*args, scope=self.scope)  # type: ignore[attr-defined, no-any-return]

    def item_get(self, collection: str, key: str, **_: Any) -> tuple[Any, ...] | None:
        return self._inner.item_get(collection, key, scope=self.scope)  # type: ignore[attr-defined, no-any-return]

    def item_list(self, collection: str, **kwargs: Any) -> list[tuple[Any, ...]]:
        kwargs["scope"] = self.scope
        return self._inner.item_list(collection, **kwargs)  # type: ignore[attr-defined, no-any-return]

    def item_count(self, collection: str, **kwargs: Any) -> int:
        kwargs["scope"] = self.scope
        return self._inner.item_count(collection, **kwargs)  # type: ignore[attr-defined, no-any-return]

    def item_delete(self, collection: str, **kwargs: Any) -> int:
        kwargs["scope"] = self.scope
        return self._inner.item_delete(collection, **kwargs)  # type: ignore[attr-defined, no-any-return]

    def item_collections(self, **_: Any) -> list[tuple[str, int]]:
        return self._inner.item_collections(scope=self.scope)  # type: ignore[attr-defined, no-any-return]
