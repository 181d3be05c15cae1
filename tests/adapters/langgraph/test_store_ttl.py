"""AnnealStore's TTL beyond LangGraph's own cases (test_store_upstream_ttl.py): expired
items hidden at once, deadlines that outlive the process, one user's expiry never
touching another's items, bad input refused before anything changes, and the sweeper's
thread and task."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage
from langgraph.store.base import PutOp
from lc_scripted import ScriptedChatModel

from anneal_memory import ItemCollection, Store
from anneal_memory.adapters.langgraph import COLLECTION, AnnealStore
from anneal_memory.errors import ValidationError


def seconds(n: float) -> float:
    """A TTL in LangGraph's unit (minutes)."""
    return n / 60


def raw(store: Any, name: str = COLLECTION) -> int:
    """How many rows a collection of the store (or a scoped view) holds, hidden or not."""
    return ItemCollection(store, name).count()


def test_expired_items_are_invisible_at_once_and_gone_after_the_sweep(store: Store) -> None:
    lg = AnnealStore(store)
    lg.put(("users", "alice"), "note", {"kind": "note", "text": "short-lived"},
           ttl=seconds(0.3))
    lg.put(("users", "alice"), "keep", {"kind": "note", "text": "kept"})
    lg.put(("users", "carol"), "only", {"kind": "note", "text": "also short"},
           ttl=seconds(0.3))
    lg.put(("users", "bob"), "note", {"kind": "note", "text": "bob's"})
    assert len(lg.search(("users",))) == 4
    time.sleep(0.5)
    # no sweep yet: the rows are there, and no read shows them
    assert raw(store) == 4
    assert lg.get(("users", "alice"), "note") is None
    assert lg.get(("users", "carol"), "only") is None
    assert [i.key for i in lg.search(("users",))] == ["keep", "note"]                # SQL paging
    assert [i.value["text"] for i in lg.search(("users",), filter={"kind": "note"})] == \
        ["kept", "bob's"]
    assert [i.key for i in lg.search(("users",), filter={"text": {"$ne": "x"}}, limit=1,
                                     offset=1)] == ["note"]                          # in Python
    assert lg.search(("users",), limit=1, offset=1)[0].value["text"] == "bob's"
    assert lg.list_namespaces() == [("users", "alice"), ("users", "bob")]
    assert lg.list_namespaces(max_depth=1) == [("users",)]
    assert lg.sweep_ttl() == 2
    assert raw(store) == 2
    assert raw(store, COLLECTION + ".namespaces") == 2  # carol's namespace went with its item
    assert raw(store, COLLECTION + ".ttl") == 0
    assert lg.sweep_ttl() == 0


def test_deadlines_survive_a_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.db")
    first = AnnealStore(path, ttl={"default_ttl": seconds(0.8)})
    first.put(("docs",), "soon", {"text": "a"})
    first.put(("docs",), "later", {"text": "b"}, ttl=10)
    first.close()
    again = AnnealStore(path)  # no ttl config: the deadlines are the database's
    assert again.get(("docs",), "soon") is not None
    time.sleep(1.0)
    assert again.get(("docs",), "soon") is None
    assert again.get(("docs",), "later") is not None
    assert again.sweep_ttl() == 1
    again.close()
    third = AnnealStore(path)
    assert [i.key for i in third.search(("docs",))] == ["later"]
    third.close()


def test_one_users_expiry_never_touches_anothers_items(store: Store) -> None:
    alice = AnnealStore(store, namespace={"user": "alice"}, ttl={"default_ttl": seconds(0.3)})
    bob = AnnealStore(store, namespace={"user": "bob"})
    root = AnnealStore(store)
    for lg in (alice, bob, root):  # the same LangGraph namespace and key in three memories
        lg.put(("profile",), "p", {"text": "hello"})
    bob.put(("profile",), "q", {"text": "bob's own, expiring later"}, ttl=10)
    time.sleep(0.5)
    assert alice.get(("profile",), "p") is None
    assert bob.get(("profile",), "p") is not None and root.get(("profile",), "p") is not None
    assert bob.sweep_ttl() == 0 and root.sweep_ttl() == 0
    assert alice.sweep_ttl() == 1
    assert raw(store.scoped({"user": "alice"})) == 0
    assert raw(store.scoped({"user": "bob"})) == 2 and raw(store) == 1
    assert raw(store.scoped({"user": "bob"}), COLLECTION + ".ttl") == 1
    assert bob.list_namespaces() == [("profile",)] and alice.list_namespaces() == []


def test_bad_ttl_input_is_refused_and_changes_nothing(store: Store) -> None:
    for config in ({"default_ttl": -1}, {"default_ttl": "5"}, {"refresh_on_read": "yes"},
                   {"sweep_interval_minutes": 0}, {"ttl_minutes": 5}, "5",
                   {"default_ttl": float("nan")}):
        with pytest.raises(ValidationError):
            AnnealStore(store, ttl=config)  # type: ignore[arg-type]
    lg = AnnealStore(store, ttl={"default_ttl": 1})
    lg.put(("docs",), "d", {"text": "first"})
    for bad in (0, -1, float("nan"), float("inf"), "1", True):
        with pytest.raises(ValidationError):
            lg.put(("docs",), "d", {"text": "changed"}, ttl=bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            lg.put(("docs",), "new", {"text": "new"}, ttl=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):  # one bad put: none of the batch is written
        lg.batch([PutOp(("docs",), "e", {"text": "fine"}, ttl=None),
                  PutOp(("docs",), "f", {"text": "bad"}, ttl=-5)])
    assert [(i.key, i.value["text"]) for i in lg.search(("docs",))] == [("d", "first")]
    with pytest.raises(ValidationError):
        lg.start_ttl_sweeper(-1)
    assert not [t for t in threading.enumerate() if t.name == "anneal-ttl-sweeper"]


def test_put_and_delete_keep_the_deadline_in_step(store: Store) -> None:
    index = {"dims": 16, "embed": DeterministicFakeEmbedding(size=16), "text_fields": ["text"]}
    lg = AnnealStore(store, index=index)
    lg.put(("docs",), "a", {"text": "expires"}, ttl=seconds(0.3))
    lg.put(("docs",), "b", {"text": "expires, then kept"}, ttl=seconds(0.3))
    lg.put(("docs",), "b", {"text": "kept"})  # a put without ttl: never expires again
    lg.put(("docs",), "c", {"text": "deleted"}, ttl=seconds(0.3))
    lg.delete(("docs",), "c")
    assert raw(store, COLLECTION + ".ttl") == 1
    assert raw(store, COLLECTION + ".vectors") == 2
    time.sleep(0.5)
    assert [i.key for i in lg.search(("docs",), query="kept")] == ["b"]  # ranked: hidden too
    assert lg.sweep_ttl() == 1
    assert raw(store, COLLECTION + ".vectors") == 1  # the item's vectors went with it
    assert lg.get(("docs",), "b") is not None


@pytest.mark.parametrize("refresh_on_read", [True, False, None])
def test_a_read_refreshes_as_sqlite_store_does(store: Store, refresh_on_read: Any) -> None:
    config: dict[str, Any] = {"default_ttl": seconds(1.0)}
    if refresh_on_read is not None:
        config["refresh_on_read"] = refresh_on_read
    lg = AnnealStore(store, ttl=config)
    lg.put(("docs",), "read", {"text": "x"})
    lg.put(("docs",), "searched", {"text": "y"})
    lg.put(("docs",), "read-no-refresh", {"text": "z"})
    before = lg.get(("docs",), "read", refresh_ttl=False)
    assert before is not None
    time.sleep(0.6)
    lg.get(("docs",), "read")                                    # refresh_ttl from the config
    lg.search(("docs",), filter={"text": "y"})
    lg.get(("docs",), "read-no-refresh", refresh_ttl=False)
    time.sleep(0.6)
    alive = sorted(i.key for i in lg.search(("docs",), refresh_ttl=False))
    # SqliteStore refreshes only when the config says refresh_on_read=True (default False)
    assert alive == (["read", "searched"] if refresh_on_read else [])
    if refresh_on_read:
        after = lg.get(("docs",), "read", refresh_ttl=False)
        assert after is not None and after.updated_at == before.updated_at
        # an expired item is not brought back by a refreshing read
        assert lg.get(("docs",), "read-no-refresh", refresh_ttl=True) is None


def test_the_sweeper_thread_starts_once_and_stops(store: Store) -> None:
    assert AnnealStore(store).start_ttl_sweeper().done()  # no ttl config: nothing to start
    lg = AnnealStore(store, ttl={"default_ttl": seconds(0.3),
                                 "sweep_interval_minutes": seconds(0.2)})
    future = lg.start_ttl_sweeper()
    try:
        lg.start_ttl_sweeper()  # already running: no second thread
        assert len([t for t in threading.enumerate() if t.name == "anneal-ttl-sweeper"]) == 1
        lg.put(("docs",), "d", {"text": "x"})
        time.sleep(0.9)
        assert raw(store) == 0  # deleted by the thread, not only hidden
    finally:
        assert lg.stop_ttl_sweeper(timeout=5) is True
    assert future.result(timeout=5) is None
    assert not [t for t in threading.enumerate() if t.name == "anneal-ttl-sweeper"]
    lg.start_ttl_sweeper()
    lg.close()  # close stops it too
    assert not [t for t in threading.enumerate() if t.name == "anneal-ttl-sweeper"]


def test_the_sweeper_task_on_an_event_loop(store: Store) -> None:
    async def run() -> None:
        lg = AnnealStore(store, ttl={"default_ttl": seconds(0.3),
                                     "sweep_interval_minutes": seconds(0.2)})
        task = await lg.astart_ttl_sweeper()
        try:
            assert await lg.astart_ttl_sweeper() is task
            await lg.aput(("docs",), "d", {"text": "x"})
            await asyncio.sleep(0.9)
            assert raw(store) == 0
        finally:
            assert await lg.astop_ttl_sweeper(timeout=5) is True
        assert task.done()
        idle = await AnnealStore(store).astart_ttl_sweeper()
        await idle
        assert idle.done()
    asyncio.run(run())


def test_langgraph_reads_the_config(store: Store) -> None:
    config = {"default_ttl": 5, "refresh_on_read": True, "sweep_interval_minutes": 2,
              "omit_expired": True}
    lg = AnnealStore(store, ttl=config)
    assert lg.supports_ttl is True and lg.ttl_config == config
    lg.put(("docs",), "d", {"text": "x"})  # BaseStore.put applies default_ttl
    record = ItemCollection(store, COLLECTION + ".ttl").list()[0].value
    assert record["ttl"] == 5 and 290 < record["expires_at"] - time.time() <= 300


def test_a_read_only_store_reads_without_refreshing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with Store(path) as writer:
        AnnealStore(writer).put(("docs",), "d", {"text": "x"}, ttl=10)
        deadline = ItemCollection(writer, COLLECTION + ".ttl").list()[0].value["expires_at"]
    with Store(path, read_only=True) as reader:
        lg = AnnealStore(reader, ttl={"refresh_on_read": True})
        assert lg.get(("docs",), "d", refresh_ttl=True) is not None  # no write attempted
        assert [i.key for i in lg.search(("docs",), refresh_ttl=True)] == ["d"]
        assert ItemCollection(reader, COLLECTION + ".ttl").list()[0].value["expires_at"] == \
            deadline


def test_an_agents_tools_store_expiring_items_through_the_real_loop(store: Store) -> None:
    """create_agent(store=AnnealStore(ttl=...)): the default TTL applies to a tool's put
    through runtime.store, and a later run's tool no longer finds the expired item."""
    @tool
    def remember(code: str, runtime: ToolRuntime) -> str:
        """Keep a one-time code for a moment."""
        runtime.store.put(("codes",), "otp", {"code": code})
        return "kept"

    @tool
    def recall_code(runtime: ToolRuntime) -> str:
        """Read the one-time code back."""
        item = runtime.store.get(("codes",), "otp")
        return item.value["code"] if item else "no code"

    def call(name: str, args: dict[str, Any]) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": name,
                                                  "type": "tool_call"}])

    model = ScriptedChatModel(messages=iter([
        call("remember", {"code": "4711"}), AIMessage(content="Kept."),
        call("recall_code", {}), AIMessage(content="Done."),
    ]))
    lg = AnnealStore(store, ttl={"default_ttl": seconds(0.4)})
    agent = create_agent(model, tools=[remember, recall_code], store=lg)
    agent.invoke({"messages": [{"role": "user", "content": "keep 4711"}]})
    assert raw(store, COLLECTION + ".ttl") == 1  # the tool's put took the default TTL
    time.sleep(0.6)
    out = agent.invoke({"messages": [{"role": "user", "content": "what was the code?"}]})
    assert [m.text for m in out["messages"] if m.type == "tool"] == ["no code"]
    assert lg.sweep_ttl() == 1
