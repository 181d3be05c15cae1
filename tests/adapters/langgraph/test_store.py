"""AnnealStore answers LangGraph's BaseStore calls as InMemoryStore does (sync and async),
keeps its items out of memory, and serves a real agent."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage
from langgraph.store.base import BaseStore, InvalidNamespaceError
from langgraph.store.memory import InMemoryStore
from lc_scripted import ScriptedChatModel

from anneal_memory import Store
from anneal_memory.adapters.langgraph import COLLECTION, AnnealStore
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession


@pytest.fixture
def lg(store: Store) -> AnnealStore:
    return AnnealStore(store)


def _put_many(s: BaseStore) -> None:
    s.put(("kb", "garden"), "t1", {"text": "tomatoes need water", "kind": "plant",
                                   "meta": {"bed": "north", "size": 3}, "tags": ["a", "b"]})
    s.put(("kb", "garden"), "t2", {"text": "shed key by the door", "kind": "tool",
                                   "meta": {"bed": "south", "size": 1}, "ok": True})
    s.put(("kb", "house"), "h1", {"text": "boiler every autumn", "kind": "tool",
                                  "meta": {"bed": "none", "size": 7}})
    s.put(("kbx",), "x1", {"text": "not under kb", "kind": "tool"})
    s.put(("kb", "garden"), "t1", {"text": "tomatoes need water daily", "kind": "plant",
                                   "meta": {"bed": "north", "size": 3}, "tags": ["a", "b"]})


SEARCHES: list[dict[str, Any]] = [
    {"namespace_prefix": ("kb",)},
    {"namespace_prefix": ("kb",), "filter": {"kind": "tool"}},
    {"namespace_prefix": ("kb",), "filter": {"meta": {"bed": "north"}}},     # nested partial
    {"namespace_prefix": ("kb",), "filter": {"meta": {"size": {"$gte": 3}}}},
    {"namespace_prefix": ("kb",), "filter": {"kind": {"$ne": "plant"}}},
    {"namespace_prefix": ("kb",), "filter": {"tags": ["a", "b"]}},
    {"namespace_prefix": ("kb",), "filter": {"ok": True}},
    {"namespace_prefix": ("kb",), "filter": {"kind": "tool", "meta": {"size": {"$lt": 5}}}},
    {"namespace_prefix": ("kb",), "query": "boiler"},                        # no index
    {"namespace_prefix": ("kb", "garden"), "limit": 1, "offset": 1},
    {"namespace_prefix": ("kb",), "filter": {"kind": "tool"}, "limit": 1, "offset": 1},
    {"namespace_prefix": ("kb",), "filter": {"meta": {"size": {"$gt": 0}}}, "limit": 2,
     "offset": 1},
    {"namespace_prefix": ("nothing",)},
]


def _shape(items: list[Any]) -> list[str]:
    return [json.dumps([i.namespace, i.key, i.value, getattr(i, "score", None)],
                       sort_keys=True) for i in items]


@pytest.mark.parametrize("query", SEARCHES, ids=[str(q) for q in SEARCHES])
def test_search_answers_as_in_memory_store(lg: AnnealStore, query: dict[str, Any]) -> None:
    reference = InMemoryStore()
    _put_many(reference)
    _put_many(lg)
    args = dict(query)
    prefix = args.pop("namespace_prefix")
    expected = _shape(reference.search(prefix, **args))
    got = _shape(lg.search(prefix, **args))
    # InMemoryStore orders by namespace first; anneal by first put: compare as sets, and
    # exactly where one namespace is searched or a page is taken of one
    if "limit" in args and len({i[0] for i in expected}) <= 1:
        assert got == expected
    else:
        assert sorted(got) == sorted(expected)


def test_dotted_filter_keys_are_paths_as_sql_stores_read_them(lg: AnnealStore) -> None:
    _put_many(lg)
    assert [i.key for i in lg.search(("kb",), filter={"meta.bed": "south"})] == ["t2"]
    assert [i.key for i in lg.search(("kb",), filter={"meta.size": {"$gt": 5}})] == ["h1"]
    lg.put(("lit",), "k", {"a.b": "literal"})  # a key that itself holds a dot still matches
    assert [i.key for i in lg.search(("lit",), filter={"a.b": "literal"})] == ["k"]


def test_get_put_delete_and_list_namespaces_as_in_memory_store(lg: AnnealStore) -> None:
    reference = InMemoryStore()
    for s in (reference, lg):
        _put_many(s)
        s.delete(("kbx",), "x1")
        s.put(("a", "x", "1"), "k", {"v": 1})
        s.put(("b", "x", "1"), "k", {"v": 2})
    for ns, key in [(("kb", "garden"), "t1"), (("kbx",), "x1"), (("kb",), "t1")]:
        a, b = reference.get(ns, key), lg.get(ns, key)
        assert (a and (a.namespace, a.key, a.value)) == (b and (b.namespace, b.key, b.value))
    conditions = [{}, {"prefix": ("kb",)}, {"suffix": ("x", "1")}, {"prefix": ("*", "x")},
                  {"max_depth": 1}, {"limit": 1, "offset": 1}, {"prefix": ("kb", "garden")}]
    # InMemoryStore keeps listing a namespace it has emptied, or only read from
    emptied = {("kbx",), ("kb",)}
    held = [ns for ns in reference.list_namespaces() if ns not in emptied]
    for condition in conditions:
        expected = [ns for ns in reference.list_namespaces(**condition) if ns not in emptied]
        if "max_depth" in condition:
            expected = sorted({ns[: condition["max_depth"]] for ns in held})
        if "limit" in condition:
            continue
        assert lg.list_namespaces(**condition) == expected, condition
    assert lg.list_namespaces(limit=1, offset=1) == [("b", "x", "1")]


def test_put_again_replaces_and_keeps_created_at(lg: AnnealStore) -> None:
    lg.put(("users", "u1"), "prefs", {"theme": "dark"})
    first = lg.get(("users", "u1"), "prefs")
    lg.put(("users", "u1"), "prefs", {"theme": "light"})
    second = lg.get(("users", "u1"), "prefs")
    assert first is not None and second is not None
    assert second.value == {"theme": "light"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert [i.value for i in lg.search(("users",))] == [{"theme": "light"}]


def test_items_are_state_not_memory(lg: AnnealStore, store: Store) -> None:
    lg.put(("users", "u1"), "prefs", {"food": "lentil soup"})
    assert store.recall(keyword="lentil").episodes == []
    assert store.items(COLLECTION).count() == 1
    lg.delete(("users", "u1"), "prefs")
    assert store.items(COLLECTION).count() == 0 and lg.list_namespaces() == []


def test_filter_and_paging_run_in_sql(lg: AnnealStore, store: Store, monkeypatch) -> None:
    for n in range(50):
        lg.put(("docs",), f"d{n:02d}", {"kind": "even" if n % 2 == 0 else "odd", "n": n})
    seen: list[dict[str, Any]] = []
    real = type(lg._items).list

    def spy(self, **kwargs: Any) -> Any:
        rows = real(self, **kwargs)
        if self.name == COLLECTION:  # the items (the deadlines' own look-up reads none)
            seen.append({**kwargs, "rows": len(rows)})
        return rows

    monkeypatch.setattr(type(lg._items), "list", spy)
    page = lg.search(("docs",), filter={"kind": "odd"}, limit=3, offset=4)
    assert [i.key for i in page] == ["d09", "d11", "d13"]
    assert seen == [{"prefix": "docs.", "where": {"v:kind": "odd"}, "limit": 3, "offset": 4,
                     "rows": 3}]  # one query, three rows read


def test_a_namespace_and_a_path_or_session(store: Store, tmp_path) -> None:
    ann = AnnealStore(store, namespace={"user": "ann"})
    ann.put(("prefs",), "k", {"v": 1})
    assert AnnealStore(store).get(("prefs",), "k") is None  # another memory's items
    assert store.scoped({"user": "ann"}).items(COLLECTION).count() == 1
    owned = AnnealStore(tmp_path / "own.db")
    owned.put(("a",), "k", {"v": 2})
    assert owned.get(("a",), "k").value == {"v": 2}
    owned.close()
    assert AnnealStore(MemorySession(store)).store is store
    with pytest.raises(ValidationError, match="one memory"):
        AnnealStore(store, namespace=lambda ctx: {"user": "x"})


def test_async_api_runs_off_the_event_loop(lg: AnnealStore, monkeypatch) -> None:
    threads: set[int] = set()
    real = lg.batch

    def batch(ops: Any) -> Any:
        threads.add(threading.get_ident())
        return real(ops)

    monkeypatch.setattr(lg, "batch", batch)

    async def go() -> None:
        loop_thread = threading.get_ident()
        await lg.aput(("m",), "k", {"text": "async apricot"})
        item = await lg.aget(("m",), "k")
        assert item is not None and item.value["text"] == "async apricot"
        assert [h.key for h in await lg.asearch(("m",), filter={"text": "async apricot"})] == ["k"]
        assert await lg.alist_namespaces() == [("m",)]
        await lg.adelete(("m",), "k")
        assert await lg.aget(("m",), "k") is None
        assert loop_thread not in threads

    asyncio.run(go())


def test_langgraph_validation_and_config_errors(lg: AnnealStore) -> None:
    assert isinstance(lg, BaseStore)
    with pytest.raises(InvalidNamespaceError):
        lg.put(("bad.label",), "k", {"v": 1})
    with pytest.raises(ValidationError):
        AnnealStore(42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="operator"):
        lg.search(("a",), filter={"n": {"$regex": "x"}})


def test_agent_tool_uses_runtime_store(store: Store) -> None:
    """create_agent(store=AnnealStore(...)): a tool writes through the injected store."""
    @tool
    def remember(fact: str, runtime: ToolRuntime) -> str:
        """Save a fact to long-term memory."""
        runtime.store.put(("facts",), "f1", {"text": fact})
        return "saved"

    model = ScriptedChatModel(messages=iter([
        AIMessage(content="", tool_calls=[{"name": "remember", "args": {"fact": "the gate code is 1234"},
                                           "id": "c1", "type": "tool_call"}]),
        AIMessage(content="Saved it."),
    ]))
    lg = AnnealStore(store)
    agent = create_agent(model, tools=[remember], store=lg)
    out = agent.invoke({"messages": [{"role": "user", "content": "remember the gate code"}]})
    assert out["messages"][-1].text == "Saved it."
    item = lg.get(("facts",), "f1")
    assert item is not None and item.value == {"text": "the gate code is 1234"}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_non_finite_values_round_trip_as_in_memory_store(tmp_path, value: float) -> None:
    """A value holding NaN or an infinity (a tool's reading) is kept and read back, by get
    and by search, as LangGraph's InMemoryStore keeps it (ours refused it: strict JSON)."""
    import math

    from langgraph.store.memory import InMemoryStore

    from anneal_memory import Store
    from anneal_memory.adapters.langgraph import AnnealStore

    with Store(tmp_path / "nf.db") as s:
        for store in (AnnealStore(s), InMemoryStore()):
            store.put(("sensors",), "pump", {"reading": value, "unit": "bar"})
            got = [store.get(("sensors",), "pump").value["reading"],
                   store.search(("sensors",), filter={"unit": "bar"})[0].value["reading"]]
            for r in got:
                assert isinstance(r, float) and (math.isnan(r) if math.isnan(value)
                                                 else r == value), (store, r)
