"""AnnealMiddleware behaviour specific to create_agent: ephemeral injection, async, wrap."""

from __future__ import annotations

import asyncio
import logging

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from lc_scripted import read_gauge, scripted

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealMiddleware
from anneal_memory.testing import scripted_compress

ASK = {"messages": [{"role": "user", "content": "What pressure does the pump gauge show?"}]}


def _seed(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline last spring", "observation")


def test_memory_reaches_model_but_not_saved_state(store: Store) -> None:
    _seed(store)
    model = scripted("It reads 42 psi.", call_tool=True)
    agent = create_agent(model, tools=[read_gauge], system_prompt="You are the garden agent.",
                         middleware=[AnnealMiddleware(store)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke(ASK, config)
    # every model call saw the agent's own system prompt and the recalled episode
    assert len(model.seen) == 2
    assert all("You are the garden agent." in s and "Ottoline" in s for s in model.seen)
    saved = agent.get_state(config).values["messages"]
    assert not any(isinstance(m, SystemMessage) for m in saved)
    assert not any("Ottoline" in m.text for m in saved)


def test_records_types_trust_and_steps(store: Store) -> None:
    agent = create_agent(scripted("It reads 42 psi.", call_tool=True), tools=[read_gauge],
                         middleware=[AnnealMiddleware(store)])
    agent.invoke(ASK)
    episodes = store.recall(limit=100).episodes
    by_type = {(e.type.value, e.trust) for e in episodes}
    assert ("context", "agent") in by_type          # the request
    assert ("observation", "tool") in by_type       # the gauge reading
    assert ("outcome", "agent") in by_type          # the answer
    assert any("Checking the gauge first." == e.content for e in episodes)  # model step
    tool_ep = next(e for e in episodes if e.trust == "tool")
    assert "42 psi" in tool_ep.content


def test_options_turn_recording_off(store: Store) -> None:
    memory = AnnealMiddleware(store, record_tools=False, record_steps=False)
    agent = create_agent(scripted("ok", call_tool=True), tools=[read_gauge], middleware=[memory])
    agent.invoke(ASK)
    assert not [e for e in store.recall(limit=100).episodes if e.trust == "tool"]
    assert not [e for e in store.recall(limit=100).episodes if e.content == "Checking the gauge first."]


def test_async_run_injects_records_and_wraps(store: Store) -> None:
    _seed(store)
    model = scripted("It reads 42 psi.", call_tool=True)
    memory = AnnealMiddleware(store, wrap_on_end=True)
    agent = create_agent(model, tools=[read_gauge], middleware=[memory])
    result = asyncio.run(agent.ainvoke(ASK))
    assert result["messages"][-1].text == "It reads 42 psi."
    assert "Ottoline" in model.seen[0]
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status == "saved"
    assert "## State" in (store.load_continuity() or "")
    # the wrap prompt went to the agent's own model, and its reply is not in the thread
    assert not any(isinstance(m, AIMessage) and "## State" in m.text for m in result["messages"])


def test_explicit_wrap_uses_agent_model_and_next_run_sees_continuity(store: Store) -> None:
    memory = AnnealMiddleware(store)
    model = scripted("Noted.")
    create_agent(model, tools=[], middleware=[memory]).invoke(
        {"messages": [{"role": "user", "content": "We decided to mulch the beds in May"}]})
    assert store.load_continuity() is None  # wrap_on_end defaults to False
    outcome = memory.wrap()
    assert outcome.status == "saved"
    nxt = scripted("Sure.")
    create_agent(nxt, tools=[], middleware=[AnnealMiddleware(store)]).invoke(
        {"messages": [{"role": "user", "content": "hello again"}]})
    assert "## State" in nxt.seen[0]


def test_failing_compress_keeps_episodes(store: Store) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    memory = AnnealMiddleware(store, wrap_on_end=True, compress=broken)
    create_agent(scripted("Noted."), tools=[], middleware=[memory]).invoke(ASK)
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status == "failed"
    assert store.load_continuity() is None
    assert store.status().episodes_since_wrap >= 2
    assert memory.wrap(compress=scripted_compress).status == "saved"


def test_broken_store_logs_and_run_goes_on(tmp_path, caplog) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.langgraph"):
        agent = create_agent(scripted("Still fine.", call_tool=True), tools=[read_gauge],
                             middleware=[AnnealMiddleware(broken, wrap_on_end=True)])
        out = asyncio.run(agent.ainvoke(ASK))
    assert out["messages"][-1].text == "Still fine."
    assert any(r.name == "anneal_memory.adapters.langgraph" for r in caplog.records)

