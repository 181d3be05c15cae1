"""A LangGraph ``BaseStore`` whose items are anneal episodes.

Mapping: an item ``(namespace, key) -> value`` is one episode. Its content is the text
recall searches (the value's indexed fields), its metadata holds the namespace, key and
exact value, and a state key derived from (namespace, key) makes a newer ``put`` replace
the older version through the store's own supersession, so history stays auditable.
``search(query=...)`` is ranked by anneal keyword recall; without a query, newest first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from anneal_memory import EpisodeType, Store, clock
from anneal_memory.errors import ValidationError
from anneal_memory.types import Episode

SOURCE = "langgraph-store"
_META = "langgraph"
_PAGE = 500


def state_key_for(namespace: tuple[str, ...], key: str) -> str:
    """The state key naming one item's slot (a digest: keys may hold any character)."""
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()[:24]
    return f"langgraph.item/{digest}"


class AnnealStore(BaseStore):
    """``BaseStore`` over an anneal :class:`~anneal_memory.Store`.

    ``AnnealStore(store)``; pass it to ``create_agent(..., store=...)`` or
    ``graph.compile(store=...)``. Every op of a ``batch`` runs against one scan of the
    items, so large stores cost a scan per batch. TTLs are not supported
    (``supports_ttl = False``); ``abatch`` runs the same work on the calling thread.
    """

    supports_ttl = False

    def __init__(self, store: Store, *, episode_type: EpisodeType | str = EpisodeType.OBSERVATION,
                 trust: str = "agent") -> None:
        if not isinstance(store, Store):
            raise ValidationError(
                f"expected an anneal_memory.Store, got {type(store).__name__}: "
                "pass Store('path/memory.db')"
            )
        self.store = store
        self.episode_type = EpisodeType.coerce(episode_type)
        self.trust = trust

    # -- the two abstract methods ------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        items: dict[tuple[tuple[str, ...], str], Episode] | None = None
        results: list[Result] = []
        for op in ops:
            if items is None or isinstance(op, PutOp):
                items = None if isinstance(op, PutOp) else self._items()
            if isinstance(op, GetOp):
                assert items is not None
                episode = items.get((tuple(op.namespace), op.key))
                results.append(_to_item(episode) if episode else None)
            elif isinstance(op, SearchOp):
                assert items is not None
                results.append(self._search(op, items))
            elif isinstance(op, ListNamespacesOp):
                assert items is not None
                results.append(_list_namespaces(op, {ns for ns, _ in items}))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)

    # -- operations ------------------------------------------------------------------
    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        history = self._versions(namespace, op.key)
        if op.value is None:
            for episode in history:
                self.store.delete(episode.id)
            return
        now = clock.utcnow().isoformat()
        current = next((e for e in history if not e.superseded_by), None)
        created = (current.metadata or {})[_META]["created_at"] if current else now
        self.store.record(
            _content(namespace, op.key, op.value, op.index),
            self.episode_type,
            source=SOURCE,
            trust=self.trust,
            state_key=state_key_for(namespace, op.key),
            metadata={_META: {"namespace": list(namespace), "key": op.key,
                              "value": dict(op.value), "created_at": created,
                              "updated_at": now}},
        )

    def _search(self, op: SearchOp, items: dict[tuple[tuple[str, ...], str], Episode]
                ) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        wanted = {e.id for (ns, _), e in items.items() if ns[: len(prefix)] == prefix
                  and _matches(_value(e), op.filter)}
        if op.query:
            ranked = [e for e in self._scan(keyword=op.query) if e.id in wanted]
        else:
            ranked = sorted((e for e in items.values() if e.id in wanted),
                            key=lambda e: _meta(e)["updated_at"], reverse=True)
        page = ranked[op.offset: op.offset + op.limit]
        total = max(len(ranked), 1)
        return [_to_item(e, score=(1.0 - (op.offset + i) / total) if op.query else None)
                for i, e in enumerate(page)]

    # -- scans -----------------------------------------------------------------------
    def _scan(self, *, keyword: str | None = None, include_superseded: bool = False
              ) -> list[Episode]:
        found: list[Episode] = []
        offset = 0
        while True:
            # context=False: items are unrelated, so one recorded next to a match is no hit
            page = self.store.recall(source=SOURCE, keyword=keyword, limit=_PAGE, offset=offset,
                                     include_superseded=include_superseded, context=False)
            found.extend(e for e in page.episodes if _META in (e.metadata or {}))
            offset += _PAGE
            if offset >= page.total_matching or not page.episodes:
                return found

    def _items(self) -> dict[tuple[tuple[str, ...], str], Episode]:
        items: dict[tuple[tuple[str, ...], str], Episode] = {}
        for episode in self._scan():
            meta = _meta(episode)
            items.setdefault((tuple(meta["namespace"]), meta["key"]), episode)
        return items

    def _versions(self, namespace: tuple[str, ...], key: str) -> list[Episode]:
        return [e for e in self._scan(include_superseded=True)
                if tuple(_meta(e)["namespace"]) == namespace and _meta(e)["key"] == key]


def _meta(episode: Episode) -> dict[str, Any]:
    return (episode.metadata or {})[_META]


def _value(episode: Episode) -> dict[str, Any]:
    return dict(_meta(episode)["value"])


def _to_item(episode: Episode, *, score: float | None = None) -> Any:
    meta = _meta(episode)
    fields = dict(namespace=tuple(meta["namespace"]), key=meta["key"], value=dict(meta["value"]),
                  created_at=clock.parse_timestamp(meta["created_at"], field="created_at"),
                  updated_at=clock.parse_timestamp(meta["updated_at"], field="updated_at"))
    return SearchItem(**fields, score=score) if score is not None else Item(**fields)


def _content(namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
             index: Any) -> str:
    """The text recall searches: the indexed fields (all of them by default)."""
    label = "/".join((*namespace, key))
    if index is False:
        return label
    if isinstance(index, list):
        fields = {p: _path(value, p) for p in index}
    else:
        fields = dict(value)
    parts = [f"{name}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)}"
             for name, v in fields.items() if v is not None]
    return f"{label}: {'; '.join(parts)}" if parts else label


def _path(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


_OPS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def _matches(value: Mapping[str, Any], flt: dict[str, Any] | None) -> bool:
    """LangGraph filter semantics: equality per key, or a dict of $eq/$ne/$gt/... operators."""
    for field, expected in (flt or {}).items():
        actual = value.get(field)
        if isinstance(expected, Mapping) and expected and all(k in _OPS for k in expected):
            if not all(_OPS[k](actual, v) for k, v in expected.items()):
                return False
        elif actual != expected:
            return False
    return True


def _match(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if not path:
        return True
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def _list_namespaces(op: ListNamespacesOp, namespaces: set[tuple[str, ...]]
                     ) -> list[tuple[str, ...]]:
    selected = {ns for ns in namespaces
                if all(_match(ns, c) for c in (op.match_conditions or ()))}
    if op.max_depth is not None:
        selected = {ns[: op.max_depth] for ns in selected}
    return sorted(selected)[op.offset: op.offset + op.limit]
