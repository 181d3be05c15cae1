"""``AnnealStore``: a LangGraph ``BaseStore`` over an item collection of the store.

A BaseStore's items are framework state the graph reads and writes (profiles, notes,
whatever a node or tool puts there): they live in the ``langgraph.store`` item collection
of the memory given (the store, or one namespace of it), keyed by the LangGraph namespace
tuple and key, and are never recalled, wrapped or audited as memory (the middleware
records episodes for that). Lookups, prefix and filter search and paging run in SQL
through the core item API (``store.items``).

Semantics follow LangGraph's ``InMemoryStore`` where both define them: ``put`` replaces
(``value=None`` deletes), ``search`` takes a namespace prefix, a ``filter`` (equality per
key, nested dicts match partially, dotted keys are paths, ``$eq $ne $gt $gte $lt $lte``
operators) and ``limit`` / ``offset``. With ``index=`` (LangGraph's ``IndexConfig``, see
:mod:`._index`) ``search(query=...)`` ranks what the filters let through by cosine
similarity and sets ``score``; without one a ``query`` ranks nothing and filters nothing
(as ``InMemoryStore`` without ``index``): results come in the order items were first
put, with ``score=None``. ``list_namespaces`` lists the namespaces that hold items.
``abatch`` embeds on the event loop (the embedder's async methods) and runs the database
work off it. With ``ttl=`` (LangGraph's ``TTLConfig``, see :mod:`._ttl`) or
``put(..., ttl=minutes)`` items expire as in ``SqliteStore``: invisible once past their
deadline, deleted by ``sweep_ttl`` or the sweeper a server starts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
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

from anneal_memory import ItemCollection, Store, clock
from anneal_memory.adapters import MemoryAdapter, from_item_value, item_value
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

from . import _ttl
from ._index import ItemIndex
from ._ttl import Deadlines, Sweeper, check_minutes, check_ttl_config

COLLECTION = "langgraph.store"
NAMESPACES = "langgraph.store.namespaces"
_SEP = "\x1f"       # between the namespace part and the key of an item's key
_FIELD = "v:"       # metadata fields holding the value's string leaves (for SQL filters)
_MAX_LEAF = 500     # longer strings are checked in Python, not indexed
_PAGE = 200


def _ns_part(namespace: tuple[str, ...]) -> str:
    # labels cannot hold "." (LangGraph refuses them), so "a.b." is unambiguous and the
    # items under a prefix share the key prefix "a." ...
    return "".join(f"{label}." for label in namespace)


def _item_key(namespace: tuple[str, ...], key: str) -> str:
    return f"{_ns_part(namespace)}{_SEP}{key}"


def _leaves(value: Any, path: str = "", depth: int = 0) -> dict[str, str]:
    """The string leaves of a value, by dotted path (what SQL filters can match)."""
    out: dict[str, str] = {}
    if isinstance(value, Mapping) and depth < 8:
        for k, v in value.items():
            if isinstance(k, str) and '"' not in k and "\x00" not in k:
                out.update(_leaves(v, f"{path}.{k}" if path else k, depth + 1))
    elif isinstance(value, str) and path and len(value) <= _MAX_LEAF:
        out[_FIELD + path] = value
    return out


def _sql_conditions(flt: Mapping[str, Any] | None) -> tuple[dict[str, str], bool]:
    """(metadata equality conditions SQL can apply, whether they are the whole filter)."""
    where: dict[str, str] = {}
    whole = True

    def walk(path: str, expected: Any) -> None:
        nonlocal whole
        if isinstance(expected, Mapping) and any(str(k).startswith("$") for k in expected):
            if set(expected) == {"$eq"} and _pushable(path, expected["$eq"]):
                where[_FIELD + path] = expected["$eq"]
            else:
                whole = False
        elif isinstance(expected, Mapping) and expected:
            for k, v in expected.items():
                walk(f"{path}.{k}", v)
        elif _pushable(path, expected):
            where[_FIELD + path] = expected
        else:
            whole = False
    for key, expected in (flt or {}).items():
        walk(str(key), expected)
    return where, whole


def _pushable(path: str, value: Any) -> bool:
    return isinstance(value, str) and len(value) <= _MAX_LEAF and '"' not in path \
        and "\x00" not in path


def _resolve(value: Any, key: str) -> Any:
    """A filter key's value: the top-level key, else the dotted path."""
    if not isinstance(value, Mapping):
        return None
    if key in value or "." not in key:
        return value.get(key)
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _compare(actual: Any, expected: Any) -> bool:
    """InMemoryStore's matching: nested dicts partially, lists exactly, $-operators."""
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_operator(actual, op, v) for op, v in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return isinstance(actual, (list, tuple)) and len(actual) == len(expected) and all(
            _compare(a, e) for a, e in zip(actual, expected, strict=True))
    return bool(actual == expected)


_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def check_filter(flt: Any) -> None:
    """Refuse a filter LangGraph's stores do not understand, before any row is read."""
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise ValidationError(f"a search filter is a dict of field -> value, not {flt!r:.60}")

    def walk(expected: Any) -> None:
        if isinstance(expected, Mapping):
            for k, v in expected.items():
                if str(k).startswith("$") and k not in _OPERATORS:
                    raise ValidationError(f"unsupported filter operator {k!r}: use "
                                          "$eq $ne $gt $gte $lt $lte")
                walk(v)
    walk(flt)


def _operator(actual: Any, op: str, expected: Any) -> bool:
    if op == "$eq":
        return bool(actual == expected)
    if op == "$ne":
        return bool(actual != expected)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValidationError(f"unsupported filter operator {op!r}: use $eq $ne $gt $gte $lt $lte")
    try:
        a, e = float(actual), float(expected)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > e, "$gte": a >= e, "$lt": a < e, "$lte": a <= e}[op]


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph ``filter``."""
    return all(_compare(_resolve(value, str(k)), v) for k, v in (flt or {}).items())


def _match(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if not path:
        return True
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


class AnnealStore(MemoryAdapter, BaseStore):
    """``BaseStore`` over an anneal store's item collection.

    ``AnnealStore(memory)``: a :class:`~anneal_memory.Store`, a store path (opened and
    owned: :meth:`close` closes it) or a :class:`MemorySession`; ``namespace`` (a mapping
    or ``MemoryNamespace``) keeps the items in that namespace of the store. ``index``: a
    LangGraph ``IndexConfig`` (vector search); ``ttl``: a ``TTLConfig`` (expiry). Pass it
    to ``create_agent(..., store=...)`` or ``graph.compile(store=...)``.
    """

    framework = "langgraph"
    extra = "langgraph"
    logger_name = "anneal_memory.adapters.langgraph"
    supports_ttl = True

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 namespace: Any = None, collection: str = COLLECTION,
                 index: Mapping[str, Any] | None = None,
                 ttl: Mapping[str, Any] | None = None) -> None:
        if callable(namespace):
            raise ValidationError("AnnealStore keeps its items in one memory: pass a mapping "
                                  "or a MemoryNamespace as namespace (graphs scope items by "
                                  "their own namespace tuples)")
        ttl_config = check_ttl_config(ttl)
        self._init_memory(memory, namespace=namespace)
        view = self.session_for().store
        self.store = view
        self._items = ItemCollection(view, collection)
        self._namespaces = ItemCollection(view, f"{collection}.namespaces")
        self._index: ItemIndex | None = None
        #: the ``IndexConfig`` given (None: no vector index), as InMemoryStore keeps it
        self.index_config: dict[str, Any] | None = None
        if index is not None:
            self._index = ItemIndex(index, ItemCollection(view, f"{collection}.vectors"))
            self.index_config = self._index.config
        self._vectors = ItemCollection(view, f"{collection}.vectors")
        #: the ``TTLConfig`` given (None: items expire only with ``put(..., ttl=...)``)
        self.ttl_config = ttl_config  # type: ignore[assignment]
        self._deadlines = Deadlines(ItemCollection(view, f"{collection}.ttl"), ttl_config)
        self._sweeper = Sweeper(self.sweep_ttl, self.asweep_ttl,
                                logging.getLogger(self.logger_name))

    # -- the two abstract methods ------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _checked(ops)
        texts, queries = self._to_embed(ops)
        vectors = self._index.embed_documents([t for _i, _p, t in texts]) if texts else []
        found = {q: list(self._index.embeddings.embed_query(q))
                 for q in queries} if self._index else {}
        return self._run(ops, texts, vectors, found)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = _checked(ops)
        texts, queries = self._to_embed(ops)
        vectors = await self._index.aembed_documents([t for _i, _p, t in texts]) if texts else []
        found = {q: list(await self._index.embeddings.aembed_query(q))
                 for q in queries} if self._index else {}
        return await asyncio.to_thread(self._run, ops, texts, vectors, found)

    def _to_embed(self, ops: list[Op]) -> tuple[list[tuple[int, str, str]], list[str]]:
        """(op index, field path, text) of every field the puts index, and the distinct
        search queries (nothing without an index)."""
        if self._index is None:
            return [], []
        texts = [(i, path, text) for i, op in enumerate(ops) if isinstance(op, PutOp)
                 for path, text in self._index.texts(op)]
        queries = list(dict.fromkeys(op.query for op in ops
                                     if isinstance(op, SearchOp) and op.query))
        return texts, queries

    def _run(self, ops: list[Op], texts: list[tuple[int, str, str]],
             vectors: list[list[float]], queries: dict[str, list[float]]) -> list[Result]:
        if len(vectors) != len(texts):
            raise ValidationError(f"the index's embedder returned {len(vectors)} vectors for "
                                  f"{len(texts)} texts")
        by_op: dict[int, list[tuple[str, list[float]]]] = {}
        for (i, path, _t), vec in zip(texts, vectors, strict=True):
            by_op.setdefault(i, []).append((path, vec))
        results: list[Result] = []
        now = _ttl.now()
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                results.append(self._get(op, now))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, queries.get(op.query or ""), now))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, now))
            elif isinstance(op, PutOp):
                self._put(op, by_op.get(i, []), now)
                results.append(None)
            else:
                raise ValidationError(f"unknown store operation {type(op).__name__}")
        return results

    # -- operations ------------------------------------------------------------------
    def _get(self, op: GetOp, now: float) -> Item | None:
        key = _item_key(tuple(op.namespace), op.key)
        found = self._items.get(key)
        if found is None:
            return None
        if _expires(found):
            if self._deadlines.expired(key, now):
                return None
            if getattr(op, "refresh_ttl", False) and self._deadlines.refresh_on_read:
                self._deadlines.refresh([key], now)
        return _to_item(found)

    def _put(self, op: PutOp, vectors: Sequence[tuple[str, list[float]]], now: float) -> None:
        namespace = tuple(op.namespace)
        key = _item_key(namespace, op.key)
        ns_key = _ns_part(namespace)
        with self.store.batch():  # the item, its vectors and deadline: all or none
            if op.value is None:
                self._delete(key, namespace)
                return
            value = dict(op.value)
            minutes = getattr(op, "ttl", None)
            self._items.put(key, item_value(value), metadata={
                "ns": list(namespace), "key": op.key, **_leaves(value),
                **({"ttl": minutes} if minutes is not None else {})})
            if self._index is not None:
                self._index.save(key, vectors)
            self._deadlines.start(key, minutes, now)
            if self._namespaces.get(ns_key) is None:
                self._namespaces.put(ns_key, list(namespace))

    def _delete(self, key: str, namespace: tuple[str, ...]) -> bool:
        """Remove one item, its vectors and deadline (and its namespace once empty)."""
        ns_key = _ns_part(namespace)
        self._vectors.delete(key)
        self._deadlines.drop(key)
        if self._items.delete(key):
            if not self._items.count(prefix=ns_key + _SEP):
                self._namespaces.delete(ns_key)
            return True
        return False

    def _search(self, op: SearchOp, query: list[float] | None, now: float) -> list[SearchItem]:
        check_filter(op.filter)
        prefix = _ns_part(tuple(op.namespace_prefix)) or None
        where, whole = _sql_conditions(op.filter)
        expired = self._deadlines.expired_under(prefix, now)
        if query is not None and self._index is not None:
            found = self._ranked(op, query, prefix, where, expired)
        elif whole and not expired:  # the filter is all SQL and nothing hides: page there
            rows = self._items.list(prefix=prefix, where=where or None, limit=op.limit,
                                    offset=op.offset)
            found = [(r, None) for r in rows]
        else:
            found = []
            skip, offset = op.offset, 0
            while len(found) < op.limit:
                rows = self._items.list(prefix=prefix, where=where or None, limit=_PAGE,
                                        offset=offset)
                for row in rows:
                    if row.key not in expired and matches(_value(row), op.filter):
                        if skip:
                            skip -= 1
                        elif len(found) < op.limit:
                            found.append((row, None))
                if len(rows) < _PAGE:
                    break
                offset += _PAGE
        if getattr(op, "refresh_ttl", False) and self._deadlines.refresh_on_read:
            self._deadlines.refresh([r.key for r, _s in found if _expires(r)], now)
        return [_to_item(r, search=True, score=s) for r, s in found]

    def _ranked(self, op: SearchOp, query: list[float], prefix: str | None,
                where: dict[str, str], expired: set[str]) -> list[tuple[Any, float | None]]:
        """Every item the filters let through, ranked by cosine (filters first)."""
        assert self._index is not None
        rows: list[Any] = []
        offset = 0
        while True:
            page = self._items.list(prefix=prefix, where=where or None, limit=_PAGE,
                                    offset=offset)
            rows += [r for r in page if r.key not in expired and matches(_value(r), op.filter)]
            if len(page) < _PAGE:
                break
            offset += _PAGE
        scored, scoreless = self._index.rank(query, rows, prefix)
        kept: list[tuple[Any, float | None]] = [
            (r, s) for s, r in scored[op.offset:op.offset + op.limit]]
        if len(kept) < op.limit:  # as InMemoryStore: fill with what has no vector
            kept += [(r, None) for r in scoreless[:op.limit - len(kept)]]
        return kept

    def _list_namespaces(self, op: ListNamespacesOp, now: float) -> list[tuple[str, ...]]:
        # a condition's literal prefix narrows in SQL; "*" and suffixes are checked here
        literal: list[str] = []
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                break
        prefix = _ns_part(tuple(literal)) or None
        rows = self._namespaces.list(prefix=prefix)
        hidden = self._expired_namespaces(prefix, now)
        selected = {tuple(r.value) for r in rows if r.key not in hidden
                    and all(_match(tuple(r.value), c) for c in (op.match_conditions or ()))}
        if op.max_depth is not None:
            selected = {ns[: op.max_depth] for ns in selected}
        return sorted(selected)[op.offset: op.offset + op.limit]

    def _expired_namespaces(self, prefix: str | None, now: float) -> set[str]:
        """The namespaces (by key) under ``prefix`` whose every item has expired."""
        by_ns: dict[str, int] = {}
        for key in self._deadlines.expired_under(prefix, now):
            ns_key = key.partition(_SEP)[0]
            by_ns[ns_key] = by_ns.get(ns_key, 0) + 1
        return {ns for ns, n in by_ns.items() if self._items.count(prefix=ns + _SEP) <= n}

    def setup(self) -> None:
        """Nothing to do: the store's tables exist once it is open. Here so code written
        for ``SqliteStore`` / ``PostgresStore`` (which must ``setup()`` first) runs as is."""

    async def asetup(self) -> None:
        """Async :meth:`setup` (``AsyncSqliteStore``'s ``await store.setup()``)."""

    # -- TTL ---------------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Delete this store's expired items (with their vectors, and namespaces left
        empty) in one transaction; how many went. Only this store's memory namespace is
        read: another user's items are never touched."""
        if not self._deadlines.expired_under(None, _ttl.now()):
            return 0  # nothing due: no write transaction
        swept = 0
        with self.store.batch():
            now = _ttl.now()  # re-read under the write lock: a refresh may have won
            for key in sorted(self._deadlines.expired_under(None, now)):
                row = self._items.get(key)
                if row is None:
                    self._deadlines.drop(key)
                    continue
                swept += self._delete(key, tuple(row.metadata["ns"]))
        return swept

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl` (the database work off the event loop)."""
        return await asyncio.to_thread(self.sweep_ttl)

    def _interval(self, minutes: float | None) -> float:
        chosen = minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        return check_minutes("sweep_interval_minutes", chosen or _ttl.DEFAULT_SWEEP_MINUTES,
                             optional=False) or _ttl.DEFAULT_SWEEP_MINUTES

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None,
                          ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (else the config's, else 5) in a daemon
        thread until :meth:`stop_ttl_sweeper`, as ``SqliteStore`` does; without a
        ``ttl`` config nothing starts (a finished future)."""
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        return self._sweeper.start(self._interval(sweep_interval_minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; False if it had not stopped within ``timeout`` s."""
        return self._sweeper.stop(timeout)

    async def astart_ttl_sweeper(self, sweep_interval_minutes: float | None = None,
                                 ) -> asyncio.Task[None]:
        """The sweeper as a task of the running event loop (an async server's), as
        ``AsyncSqliteStore.start_ttl_sweeper``; :meth:`astop_ttl_sweeper` ends it."""
        if not self.ttl_config:  # as AsyncSqliteStore: a task that is done at once
            return asyncio.get_running_loop().create_task(asyncio.sleep(0))
        return await self._sweeper.astart(self._interval(sweep_interval_minutes))

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; False if it had not stopped within ``timeout`` s."""
        return await self._sweeper.astop(timeout)

    def close(self) -> None:
        """Stop the sweeper thread, then close the store if this adapter opened it."""
        self._sweeper.stop()
        super().close()


def _checked(ops: Iterable[Op]) -> list[Op]:
    """The ops, each put's ``ttl`` checked before anything is embedded or written."""
    ops = list(ops)
    for op in ops:
        if isinstance(op, PutOp) and op.value is not None:
            check_minutes("ttl", getattr(op, "ttl", None))
    return ops


def _expires(row: Any) -> bool:
    return row.metadata.get("ttl") is not None


def _value(row: Any) -> Any:
    """An item's value as LangGraph put it (one holding NaN or an infinity is kept as its
    JSON text: the store's values are strict JSON, LangGraph's stores keep such floats)."""
    return from_item_value(row.value, f"the item {row.metadata.get('key')!r}")


def _to_item(row: Any, *, search: bool = False, score: float | None = None) -> Any:
    fields = dict(namespace=tuple(row.metadata["ns"]), key=row.metadata["key"],
                  value=dict(_value(row)),
                  created_at=clock.parse_timestamp(row.created_at, field="created_at"),
                  updated_at=clock.parse_timestamp(row.updated_at, field="updated_at"))
    return SearchItem(**fields, score=score) if search else Item(**fields)
