"""AnnealStore answers LangGraph's BaseStore calls, sync and async, and serves a real agent."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage
from langgraph.store.base import BaseStore, InvalidNamespaceError
from lc_scripted import ScriptedChatModel

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealStore
from anneal_memory.errors import ValidationError


@pytest.fixture
def lg(store: Store) -> AnnealStore:
    return AnnealStore(store)


def test_put_get_roundtrip_and_episode_shape(lg: AnnealStore, store: Store) -> None:
    lg.put(("users", "u1"), "prefs", {"theme": "dark", "food": "lentil soup"})
    item = lg.get(("users", "u1"), "prefs")
    assert item is not None
    assert item.value == {"theme": "dark", "food": "lentil soup"}
    assert item.namespace == ("users", "u1") and item.key == "prefs"
    episodes = store.recall(keyword="lentil").episodes
    assert len(episodes) == 1 and episodes[0].source == "langgraph-store"
    assert lg.get(("users", "u1"), "missing") is None
    assert lg.get(("users", "u2"), "prefs") is None


def test_put_again_replaces_and_keeps_created_at(lg: AnnealStore, store: Store) -> None:
    lg.put(("users", "u1"), "prefs", {"theme": "dark"})
    first = lg.get(("users", "u1"), "prefs")
    lg.put(("users", "u1"), "prefs", {"theme": "light"})
    second = lg.get(("users", "u1"), "prefs")
    assert first is not None and second is not None
    assert second.value == {"theme": "light"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert [i.value for i in lg.search(("users",))] == [{"theme": "light"}]
    # the old version is kept as superseded history, not deleted
    history = store.recall(source="langgraph-store", include_superseded=True, limit=10)
    assert history.total_matching == 2


def test_delete_removes_item_and_history(lg: AnnealStore, store: Store) -> None:
    lg.put(("docs",), "a", {"text": "alpha"})
    lg.put(("docs",), "a", {"text": "alpha two"})
    lg.put(("docs",), "b", {"text": "beta"})
    lg.delete(("docs",), "a")
    assert lg.get(("docs",), "a") is None
    assert [i.key for i in lg.search(("docs",))] == ["b"]
    left = store.recall(source="langgraph-store", include_superseded=True, limit=10)
    assert left.total_matching == 1


def test_search_query_filter_prefix_and_paging(lg: AnnealStore) -> None:
    lg.put(("kb", "garden"), "t1", {"text": "tomatoes need watering at dawn", "kind": "plant"})
    lg.put(("kb", "garden"), "t2", {"text": "the shed key hangs by the door", "kind": "tool"})
    lg.put(("kb", "house"), "h1", {"text": "boiler service every autumn", "kind": "tool"})
    hits = lg.search(("kb",), query="watering tomatoes")
    assert [h.key for h in hits] == ["t1"] and hits[0].score is not None
    assert {h.key for h in lg.search(("kb",), filter={"kind": "tool"})} == {"t2", "h1"}
    assert [h.key for h in lg.search(("kb", "garden"), filter={"kind": {"$ne": "plant"}})] == ["t2"]
    assert len(lg.search(("kb",), limit=2)) == 2
    assert len(lg.search(("kb",), limit=2, offset=2)) == 1
    assert lg.search(("nothing",)) == []


def test_index_false_and_index_fields(lg: AnnealStore) -> None:
    lg.put(("n",), "secret", {"text": "zanzibar password"}, index=False)
    lg.put(("n",), "picked", {"title": "orchard plan", "body": "quince"}, index=["title"])
    assert lg.search(("n",), query="zanzibar") == []
    assert [h.key for h in lg.search(("n",), query="orchard")] == ["picked"]
    assert lg.search(("n",), query="quince") == []
    assert lg.get(("n",), "secret").value == {"text": "zanzibar password"}


def test_list_namespaces(lg: AnnealStore) -> None:
    for ns in [("a", "x", "1"), ("a", "y", "1"), ("b", "x", "1")]:
        lg.put(ns, "k", {"v": 1})
    assert lg.list_namespaces() == [("a", "x", "1"), ("a", "y", "1"), ("b", "x", "1")]
    assert lg.list_namespaces(prefix=("a",)) == [("a", "x", "1"), ("a", "y", "1")]
    assert lg.list_namespaces(suffix=("x", "1")) == [("a", "x", "1"), ("b", "x", "1")]
    assert lg.list_namespaces(prefix=("*", "x")) == [("a", "x", "1"), ("b", "x", "1")]
    assert lg.list_namespaces(max_depth=1) == [("a",), ("b",)]
    assert lg.list_namespaces(limit=1, offset=1) == [("a", "y", "1")]


def test_async_api(lg: AnnealStore) -> None:
    async def go() -> None:
        await lg.aput(("m",), "k", {"text": "async apricot"})
        item = await lg.aget(("m",), "k")
        assert item is not None and item.value["text"] == "async apricot"
        assert [h.key for h in await lg.asearch(("m",), query="apricot")] == ["k"]
        assert await lg.alist_namespaces() == [("m",)]
        await lg.adelete(("m",), "k")
        assert await lg.aget(("m",), "k") is None

    asyncio.run(go())


def test_langgraph_validation_and_config_errors(lg: AnnealStore) -> None:
    assert isinstance(lg, BaseStore)
    with pytest.raises(InvalidNamespaceError):
        lg.put(("bad.label",), "k", {"v": 1})
    with pytest.raises(ValidationError):
        AnnealStore("not a store")  # type: ignore[arg-type]


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
    assert store.recall(keyword="gate code").total_matching >= 1
