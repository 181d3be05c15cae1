"""AnnealSessionStore: the SDK's own conformance suite, then the real mirror path."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from cas_scripted import LOOKUP, arun, options
from claude_agent_sdk import (
    get_session_messages_from_store,
    list_sessions_from_store,
)
from claude_agent_sdk.testing import run_session_store_conformance

from anneal_memory import Store
from anneal_memory.adapters.claude_agent_sdk import AnnealMemory, AnnealSessionStore
from anneal_memory.errors import ValidationError

pytestmark = pytest.mark.anyio


async def test_sdk_conformance_suite_all_optional_methods(tmp_path: Path) -> None:
    counter = itertools.count()
    opened: list[Store] = []

    def make() -> AnnealSessionStore:
        store = Store(tmp_path / f"s{next(counter)}.db")
        opened.append(store)
        return AnnealSessionStore(store)

    try:
        await run_session_store_conformance(make)  # nothing skipped
    finally:
        for s in opened:
            s.close()
    assert len(opened) >= 14


async def test_conformance_on_one_shared_database_per_namespace(mem_store: Store) -> None:
    # every contract in its own namespace of ONE database: namespaces never leak
    counter = itertools.count()
    await run_session_store_conformance(
        lambda: AnnealSessionStore(mem_store, namespace={"tenant": f"t{next(counter)}"}))


async def test_entries_roundtrip_verbatim_and_dedupe_by_uuid(mem_store: Store) -> None:
    s = AnnealSessionStore(mem_store)
    key = {"project_key": "p/with/slashes", "session_id": "s%1"}
    entry = {"type": "user", "uuid": "u1", "message": {"content": [{"type": "text", "text":
                                                                    "日本語 ✓"}]}, "n": 1.5}
    await s.append(key, [entry, {"type": "title", "customTitle": "t"}])
    await s.append(key, [entry, {"type": "title", "customTitle": "t"}])  # retried batch
    loaded = await s.load(key)
    assert loaded == [entry, {"type": "title", "customTitle": "t"},
                      {"type": "title", "customTitle": "t"}]  # uuid-less entries are kept
    assert await s.load({"project_key": "p", "session_id": "s%1"}) is None
    assert [x["session_id"] for x in await s.list_sessions("p/with/slashes")] == ["s%1"]
    assert await s.list_sessions("p") == []
    with pytest.raises(ValidationError, match="session_id"):
        await s.append({"project_key": "p", "session_id": ""}, [entry])
    with pytest.raises(ValidationError, match="subpath"):
        await s.load({"project_key": "p", "session_id": "s", "subpath": ""})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
async def test_entries_with_non_finite_values_as_the_sdks_in_memory_store(
        mem_store: Store, value: float) -> None:
    """An entry holding NaN / an infinity (a tool's result) is kept and loaded back as the
    SDK's InMemorySessionStore keeps it (the store's JSON refused it: append raised)."""
    from claude_agent_sdk import InMemorySessionStore

    key = {"project_key": "p", "session_id": "s1"}
    entries = [{"type": "user", "uuid": "u1", "toolUseResult": {"reading": value}},
               {"type": "assistant", "uuid": "u2", "message": {"content": "done"}}]
    loaded = []
    for s in (AnnealSessionStore(mem_store), InMemorySessionStore()):
        await s.append(key, entries)
        got = await s.load(key)
        assert got is not None and [e["uuid"] for e in got] == ["u1", "u2"]
        loaded.append(got[0]["toolUseResult"]["reading"])
    for got in loaded:
        assert math.isnan(got) if math.isnan(value) else got == value


async def test_a_second_host_sees_the_transcripts(tmp_path: Path) -> None:
    key = {"project_key": "proj", "session_id": "sess"}
    with Store(tmp_path / "shared.db") as one:
        await AnnealSessionStore(one).append(key, [{"type": "user", "uuid": "a"}])
    with Store(tmp_path / "shared.db") as two:
        other = AnnealSessionStore(two)
        assert await other.load(key) == [{"type": "user", "uuid": "a"}]
        await other.append(key, [{"type": "user", "uuid": "a"}, {"type": "user", "uuid": "b"}])
        assert [e["uuid"] for e in await other.load(key) or []] == ["a", "b"]


async def test_the_sdk_mirrors_a_real_run_into_the_store(mem_store: Store,
                                                         project: Path) -> None:
    sessions = AnnealSessionStore(mem_store)
    memory = AnnealMemory(mem_store)
    opts = options(memory, project, session_store=sessions)
    result = await arun(memory, "Check the pump pressure", [LOOKUP, "2.1 bar."], cwd=project,
                        opts=opts)
    sid, pk = result.cli.session_id, result.cli.project_key
    entries = await sessions.load({"project_key": pk, "session_id": sid})
    assert entries is not None and len(entries) == 4  # prompt, tool use, tool result, answer
    # the SDK's own store-backed helpers read it back
    listed = await list_sessions_from_store(sessions, directory=str(project))
    assert [i.session_id for i in listed] == [sid]
    messages = await get_session_messages_from_store(sessions, sid, directory=str(project))
    assert [m.type for m in messages] == ["user", "assistant", "user", "assistant"]
    # and the episodes of the same run are in the same database
    assert any("2.1 bar" in e.content for e in mem_store.scoped(
        {"project": pk}).recall(limit=100).episodes)
