"""LangGraph's own TTL tests for ``SqliteStore``, restated against ``AnnealStore``.

Source: langchain-ai/langgraph (MIT) at f09cfe8ffc1e, libs/checkpoint-sqlite/tests/
test_ttl.py: its eleven cases (six sync, five async; the package's test_store.py has no
TTL case), each with its own timings and assertions. Every case drives two stores side
by side through the same calls and sleeps: the reference ``SqliteStore`` (or
``AsyncSqliteStore``) on a temporary file and ``AnnealStore`` over a real anneal store
on another, so a difference in any answer fails the case naming the store. The async
cases call ``AnnealStore``'s async twins where ``AsyncSqliteStore`` has async methods
of the same name (``await sweep_ttl()`` -> ``await asweep_ttl()``, ``setup`` ->
``asetup``, ``start_ttl_sweeper`` -> ``astart_ttl_sweeper``); they run under ``asyncio.run`` (the
session has no pytest-asyncio). Upstream marks seven cases ``flaky(retries=3)`` (the
reference's clock has one-second steps); ``flaky`` below reruns those on fresh stores,
as often, without a plugin.

One thing is added to their assertions: after a sweep, the rows each store still holds
(``rows``/``arows``). AnnealStore hides an expired item before any sweep, so a ``get``
returning None cannot show on its own that the sweep deleted anything.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.metadata
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.store.base import TTLConfig
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from anneal_memory import ItemCollection, Store
from anneal_memory.adapters.langgraph import COLLECTION, AnnealStore

# AsyncSqliteStore's async methods -> AnnealStore's async twins of the same job
ASYNC_NAMES = {"setup": "asetup", "sweep_ttl": "asweep_ttl", "start_ttl_sweeper": "astart_ttl_sweeper",
               "stop_ttl_sweeper": "astop_ttl_sweeper"}


class Both:
    """Each call goes to every store in turn; the answer is ``{store name: result}``."""

    def __init__(self, stores: dict[str, Any], renames: dict[str, str] | None = None) -> None:
        self.stores = stores
        self.renames = renames or {}

    def __getattr__(self, name: str) -> Callable[..., dict[str, Any]]:
        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            return {label: getattr(s, self.renames.get(name, name) if label == "AnnealStore"
                                   else name)(*args, **kwargs)
                    for label, s in self.stores.items()}
        return call


class ABoth(Both):
    """The async form: each store's coroutine awaited in turn."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            out = {}
            for label, s in self.stores.items():
                method = getattr(s, self.renames.get(name, name) if label == "AnnealStore"
                                 else name)
                out[label] = await method(*args, **kwargs)
            return out
        return call


# AsyncSqliteStore before langgraph-checkpoint-sqlite 3 (2.0.11 is what resolves beside
# langgraph 1.0.0, the floor) fails its own asearch(refresh_ttl=True) case: its refresh
# runs as one statement with the search ("near UPDATE: syntax error"). There that one
# case runs on AnnealStore alone.
REFERENCE_ASEARCH_REFRESHES = int(
    importlib.metadata.version("langgraph-checkpoint-sqlite").split(".")[0]) >= 3


def each(results: dict[str, Any], check: Callable[[Any], bool]) -> None:
    """``check`` holds for every store's answer (the failing store is named)."""
    for label, value in results.items():
        assert check(value), f"{label}: {value!r}"


def rows(s: Both) -> dict[str, int]:
    """The rows each store holds, expired or not (SqliteStore's ``store`` table)."""
    return {label: ItemCollection(st.store, COLLECTION).count() if isinstance(st, AnnealStore)
            else st.conn.execute("SELECT count(*) FROM store").fetchone()[0]
            for label, st in s.stores.items()}


async def arows(s: Both) -> dict[str, int]:
    out = {}
    for label, st in s.stores.items():
        if isinstance(st, AnnealStore):
            out[label] = ItemCollection(st.store, COLLECTION).count()
        else:
            async with st.conn.execute("SELECT count(*) FROM store") as cur:
                out[label] = (await cur.fetchone())[0]
    return out


@contextmanager
def both(tmp_path: Path, **kwargs: Any) -> Iterator[Both]:
    """The reference SqliteStore and AnnealStore, built from the same ``ttl=`` / ``index=``."""
    with ExitStack() as stack:
        reference = stack.enter_context(
            SqliteStore.from_conn_string(str(tmp_path / "reference.db"), **kwargs))
        stack.callback(reference.stop_ttl_sweeper, 5)  # a failed case leaves none running
        store = stack.enter_context(Store(tmp_path / "anneal.db"))
        ours = AnnealStore(store, **kwargs)
        stack.callback(ours.close)
        yield Both({"SqliteStore": reference, "AnnealStore": ours})


@asynccontextmanager
async def aboth(tmp_path: Path, *, reference: bool = True, **kwargs: Any) -> Any:
    """The reference AsyncSqliteStore (unless ``reference=False``) and AnnealStore."""
    async with AsyncSqliteStore.from_conn_string(str(tmp_path / "areference.db"),
                                                 **kwargs) as ref:
        with Store(tmp_path / "aanneal.db") as store:
            ours = AnnealStore(store, **kwargs)
            stores = {"AsyncSqliteStore": ref} if reference else {}
            try:
                yield ABoth({**stores, "AnnealStore": ours}, ASYNC_NAMES)
            finally:
                ours.close()


def flaky(retries: int) -> Callable[[Callable[[Path, int], None]], Callable[[Path], None]]:
    """Upstream's ``flaky(retries=N)``: rerun the case (fresh stores each try)."""
    def decorate(case: Callable[[Path, int], None]) -> Callable[[Path], None]:
        @functools.wraps(case)
        def run(tmp_path: Path) -> None:
            for attempt in range(retries + 1):
                try:
                    case(tmp_path, attempt)
                    return
                except AssertionError:
                    if attempt == retries:
                        raise
        return run
    return decorate


def _dir(tmp_path: Path, attempt: int) -> Path:
    d = tmp_path / f"try{attempt}"
    d.mkdir()
    return d


# -- the sync cases ------------------------------------------------------------------------
def test_ttl_basic(tmp_path: Path) -> None:
    ttl_seconds = 1
    ttl_minutes = ttl_seconds / 60
    with both(tmp_path, ttl={"default_ttl": ttl_minutes}) as s:
        s.setup()
        s.put(("test",), "item1", {"value": "test"})
        each(s.get(("test",), "item1"), lambda i: i is not None and i.value["value"] == "test")
        time.sleep(ttl_seconds + 1.0)
        s.sweep_ttl()
        each(s.get(("test",), "item1"), lambda i: i is None)
        each(rows(s), lambda n: n == 0)


@flaky(3)
def test_ttl_refresh(tmp_path: Path, attempt: int = 0) -> None:
    ttl_seconds = 1
    ttl_minutes = ttl_seconds / 60
    with both(_dir(tmp_path, attempt),
              ttl={"default_ttl": ttl_minutes, "refresh_on_read": True}) as s:
        s.setup()
        s.put(("test",), "item1", {"value": "test"})
        time.sleep(ttl_seconds - 0.5)
        each(s.sweep_ttl(), lambda n: n == 0)
        each(s.get(("test",), "item1", refresh_ttl=True), lambda i: i is not None)
        time.sleep(ttl_seconds - 0.5)
        each(s.sweep_ttl(), lambda n: n == 0)
        each(s.get(("test",), "item1"), lambda i: i is not None and i.value["value"] == "test")
        time.sleep(ttl_seconds + 0.75)
        each(s.sweep_ttl(), lambda n: n == 1)
        each(s.get(("test",), "item1"), lambda i: i is None)


def test_ttl_sweeper(tmp_path: Path) -> None:
    ttl_seconds = 2
    ttl_minutes = ttl_seconds / 60
    ttl_config: TTLConfig = {"default_ttl": ttl_minutes,
                             "sweep_interval_minutes": ttl_minutes / 2}  # type: ignore[typeddict-item]
    with both(tmp_path, ttl=ttl_config) as s:
        s.setup()
        s.start_ttl_sweeper()
        s.put(("test",), "item1", {"value": "test"})
        each(s.get(("test",), "item1"), lambda i: i is not None)
        time.sleep(ttl_seconds + (ttl_seconds / 2) + 0.5)
        each(s.get(("test",), "item1"), lambda i: i is None)
        each(rows(s), lambda n: n == 0)  # swept by the thread, not only hidden
        each(s.stop_ttl_sweeper(), lambda ok: ok is True)


@flaky(3)
def test_ttl_custom_value(tmp_path: Path, attempt: int = 0) -> None:
    with both(_dir(tmp_path, attempt)) as s:
        s.setup()
        s.put(("test",), "item1", {"value": "short"}, ttl=1 / 60)
        s.put(("test",), "item2", {"value": "long"}, ttl=3 / 60)
        time.sleep(2)
        s.sweep_ttl()
        each(s.get(("test",), "item1"), lambda i: i is None)
        each(s.get(("test",), "item2"), lambda i: i is not None)
        each(rows(s), lambda n: n == 1)
        time.sleep(4)
        s.sweep_ttl()
        each(s.get(("test",), "item2"), lambda i: i is None)
        each(rows(s), lambda n: n == 0)


@flaky(3)
def test_ttl_override_default(tmp_path: Path, attempt: int = 0) -> None:
    with both(_dir(tmp_path, attempt), ttl={"default_ttl": 5 / 60}) as s:
        s.setup()
        s.put(("test",), "item1", {"value": "override"}, ttl=1 / 60)
        s.put(("test",), "item2", {"value": "default"})
        s.put(("test",), "item3", {"value": "permanent"}, ttl=None)
        time.sleep(2)
        s.sweep_ttl()
        each(s.get(("test",), "item1"), lambda i: i is None)
        each(s.get(("test",), "item2"), lambda i: i is not None)
        each(s.get(("test",), "item3"), lambda i: i is not None)
        each(rows(s), lambda n: n == 2)
        time.sleep(4)
        s.sweep_ttl()
        each(s.get(("test",), "item2"), lambda i: i is None)
        each(s.get(("test",), "item3"), lambda i: i is not None)
        each(rows(s), lambda n: n == 1)


@flaky(3)
def test_search_with_ttl(tmp_path: Path, attempt: int = 0) -> None:
    ttl_seconds = 1
    ttl_minutes = ttl_seconds / 60
    with both(_dir(tmp_path, attempt), ttl={"default_ttl": ttl_minutes}) as s:
        s.setup()
        s.put(("test",), "item1", {"value": "apple"})
        s.put(("test",), "item2", {"value": "banana"})
        each(s.search(("test",), filter={"value": "apple"}),
             lambda r: len(r) == 1 and r[0].key == "item1")
        time.sleep(ttl_seconds + 1)
        s.sweep_ttl()
        each(s.search(("test",), filter={"value": "apple"}), lambda r: len(r) == 0)
        each(rows(s), lambda n: n == 0)


# -- the async cases -----------------------------------------------------------------------
def test_async_ttl_basic(tmp_path: Path) -> None:
    async def case() -> None:
        ttl_seconds = 1
        ttl_minutes = ttl_seconds / 60
        async with aboth(tmp_path, ttl={"default_ttl": ttl_minutes}) as s:
            await s.setup()
            await s.aput(("test",), "item1", {"value": "test"})
            each(await s.aget(("test",), "item1"),
                 lambda i: i is not None and i.value["value"] == "test")
            await asyncio.sleep(ttl_seconds + 1.0)
            await s.sweep_ttl()
            each(await s.aget(("test",), "item1"), lambda i: i is None)
            each(await arows(s), lambda n: n == 0)
    asyncio.run(case())


@flaky(3)
def test_async_ttl_refresh(tmp_path: Path, attempt: int = 0) -> None:
    async def case() -> None:
        ttl_seconds = 1
        ttl_minutes = ttl_seconds / 60
        async with aboth(_dir(tmp_path, attempt),
                         ttl={"default_ttl": ttl_minutes, "refresh_on_read": True}) as s:
            await s.setup()
            await s.aput(("test",), "item1", {"value": "test"})
            await asyncio.sleep(ttl_seconds - 0.5)
            each(await s.aget(("test",), "item1", refresh_ttl=True), lambda i: i is not None)
            await asyncio.sleep(ttl_seconds - 0.5)
            each(await s.aget(("test",), "item1"),
                 lambda i: i is not None and i.value["value"] == "test")
            await asyncio.sleep(ttl_seconds + 1.0)
            await s.sweep_ttl()
            each(await s.aget(("test",), "item1"), lambda i: i is None)
            each(await arows(s), lambda n: n == 0)
    asyncio.run(case())


def test_async_ttl_sweeper(tmp_path: Path) -> None:
    async def case() -> None:
        ttl_seconds = 2
        ttl_minutes = ttl_seconds / 60
        ttl_config: TTLConfig = {"default_ttl": ttl_minutes,
                                 "sweep_interval_minutes": ttl_minutes / 2}  # type: ignore[typeddict-item]
        async with aboth(tmp_path, ttl=ttl_config) as s:
            await s.setup()
            await s.start_ttl_sweeper()
            await s.aput(("test",), "item1", {"value": "test"})
            each(await s.aget(("test",), "item1"), lambda i: i is not None)
            await asyncio.sleep(ttl_seconds + (ttl_seconds / 2) + 0.5)
            each(await s.aget(("test",), "item1"), lambda i: i is None)
            each(await arows(s), lambda n: n == 0)  # swept by the task, not only hidden
            each(await s.stop_ttl_sweeper(), lambda ok: ok is True)
    asyncio.run(case())


@flaky(3)
def test_async_search_with_ttl(tmp_path: Path, attempt: int = 0) -> None:
    async def case() -> None:
        ttl_seconds = 1
        ttl_minutes = ttl_seconds / 60
        async with aboth(_dir(tmp_path, attempt), ttl={"default_ttl": ttl_minutes}) as s:
            await s.setup()
            await s.aput(("test",), "item1", {"value": "apple"})
            await s.aput(("test",), "item2", {"value": "banana"})
            each(await s.asearch(("test",), filter={"value": "apple"}),
                 lambda r: len(r) == 1 and r[0].key == "item1")
            await asyncio.sleep(ttl_seconds + 1)
            await s.sweep_ttl()
            each(await s.asearch(("test",), filter={"value": "apple"}), lambda r: len(r) == 0)
            each(await arows(s), lambda n: n == 0)
    asyncio.run(case())


@flaky(3)
def test_async_asearch_refresh_ttl(tmp_path: Path, attempt: int = 0) -> None:
    async def case() -> None:
        ttl_seconds = 4.0
        ttl_minutes = ttl_seconds / 60.0
        async with aboth(_dir(tmp_path, attempt), reference=REFERENCE_ASEARCH_REFRESHES,
                         ttl={"default_ttl": ttl_minutes, "refresh_on_read": True}) as s:
            await s.setup()
            namespace = ("docs", "user1")
            await s.aput(namespace, "item1", {"text": "content1", "id": 1})   # t=0, due t=4
            await s.aput(namespace, "item2", {"text": "content2", "id": 2})
            await asyncio.sleep(ttl_seconds * 0.75)                          # t=3
            # only what the search returns is refreshed: item1 now due at t=7
            each(await s.asearch(namespace, filter={"id": 1}, refresh_ttl=True),
                 lambda r: len(r) == 1 and r[0].key == "item1")
            await asyncio.sleep(ttl_seconds * 0.5)                           # t=5
            await s.sweep_ttl()
            each(await s.aget(namespace, "item1", refresh_ttl=False),
                 lambda i: i is not None and i.value["text"] == "content1")
            each(await s.aget(namespace, "item2", refresh_ttl=False), lambda i: i is None)
            each(await arows(s), lambda n: n == 1)
            await asyncio.sleep(ttl_seconds * 0.625)                         # t=7.5
            await s.sweep_ttl()
            each(await s.aget(namespace, "item1", refresh_ttl=False), lambda i: i is None)
            each(await arows(s), lambda n: n == 0)
    asyncio.run(case())
