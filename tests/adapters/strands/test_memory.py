"""AnnealMemory's own behaviour in Strands' real agent loop: where memory goes, what is
recorded, the wrap, options and failures."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest
from strands import Agent
from strands.session import FileSessionManager
from strands_scripted import ScriptedModel, lookup

from anneal_memory import Store, ValidationError
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.strands import AnnealMemory, RunContext
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def _episodes(store: Store):
    return store.recall(limit=1000).episodes


def _agent(memory: AnnealMemory, scripted: ScriptedModel, **kw) -> Agent:
    return Agent(model=scripted, tools=[lookup], callback_handler=None, memory_manager=memory,
                 **kw)


def test_memory_reaches_every_model_call_and_never_the_history(mem_store: Store,
                                                               tmp_path: Path) -> None:
    mem_store.record("The irrigation pump runs at 42 psi", "observation")
    scripted = ScriptedModel(call_tool=True)
    sessions = FileSessionManager(session_id="s1", storage_dir=str(tmp_path / "sessions"))
    agent = _agent(AnnealMemory(mem_store), scripted, session_manager=sessions)
    agent("What pressure does the irrigation pump use?")
    assert len(scripted.received) == 2  # the tool call, then the answer
    for messages in scripted.received:
        last_user = [m for m in messages if m["role"] == "user"][-1]
        folded = [b["text"] for b in last_user["content"] if MEMORY_LABEL in b.get("text", "")]
        assert len(folded) == 1 and "42 psi" in folded[0]
    # the user's words stay a block of their own (Strands appends the memory since 1.5x,
    # put it first before)
    first = [b.get("text", "").strip() for b in scripted.received[0][-1]["content"]]
    assert "What pressure does the irrigation pump use?" in first
    history = repr(agent.messages)
    assert MEMORY_LABEL not in history and "irrigation pump runs" not in history
    saved = " ".join(p.read_text() for p in (tmp_path / "sessions").rglob("*.json"))
    assert "What pressure" in saved and MEMORY_LABEL not in saved


def test_user_turn_trigger_injects_on_the_first_call_only(mem_store: Store) -> None:
    mem_store.record("The irrigation pump runs at 42 psi", "observation")
    scripted = ScriptedModel(call_tool=True)
    _agent(AnnealMemory(mem_store, inject="userTurn"), scripted)("Irrigation pump pressure?")
    assert MEMORY_LABEL in scripted.inputs[0] and MEMORY_LABEL not in scripted.inputs[1]


def test_continuity_reaches_the_model_without_a_recall_hit(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, compress=scripted_compress)
    _agent(memory, ScriptedModel())("Decide to water the tomatoes at dawn")
    assert memory.wrap().saved
    scripted = ScriptedModel()
    _agent(AnnealMemory(mem_store), scripted)("Hello")
    assert "tomatoes" in scripted.inputs[0] and MEMORY_LABEL in scripted.inputs[0]


def test_records_request_tool_result_and_answer(mem_store: Store) -> None:
    _agent(AnnealMemory(mem_store), ScriptedModel(call_tool=True))("Check the pump pressure")
    kinds = {(e.type.value, e.trust) for e in _episodes(mem_store)}
    assert {("context", "agent"), ("observation", "tool"), ("outcome", "agent")} <= kinds
    tool = next(e for e in _episodes(mem_store) if e.trust == "tool")
    assert "toolresult" in tool.content and tool.metadata.get("tool") == "lookup"


def test_record_options_switch_recording_off(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, record_user_input=False, record_tools=False,
                          record_outcome=False)
    _agent(memory, ScriptedModel(call_tool=True))("Check the pump")
    assert _episodes(mem_store) == []


def test_search_memory_tool_answers_and_is_not_recorded(mem_store: Store) -> None:
    mem_store.scoped({"user": "ann"}).record("Ann's allotment plot is number 17", "observation")
    scripted = ScriptedModel(call_tool=True, tool_name="search_memory",
                             tool_input={"query": "allotment plot"})
    _agent(AnnealMemory(mem_store, inject="userTurn"),
           scripted)("Where is it?", invocation_state={"user_id": "ann"})
    tool_turn = scripted.inputs[1]
    assert "plot is number 17" in tool_turn.split("Where is it?", 1)[1]
    assert not [e for e in _episodes(mem_store) if e.trust == "tool"]


def test_no_search_tool_when_switched_off(mem_store: Store) -> None:
    agent = _agent(AnnealMemory(mem_store, search_tool=False), ScriptedModel())
    assert "search_memory" not in agent.tool_names
    assert "search_memory" in _agent(AnnealMemory(mem_store), ScriptedModel()).tool_names


def test_wrap_on_end_uses_the_agents_model(mem_store: Store) -> None:
    scripted = ScriptedModel()
    _agent(AnnealMemory(mem_store, wrap_on_end=True), scripted)("Decide to mulch the beds")
    assert mem_store.status().total_wraps == 1
    assert "mulch" in (mem_store.load_continuity() or "")
    assert not any(is_wrap_prompt(t) for t in scripted.inputs)  # not a turn of the agent


def test_explicit_wrap_names_the_users_memory(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    _agent(memory, ScriptedModel())("Decide to plant garlic in autumn",
                                    invocation_state={"user_id": "eve"})
    assert mem_store.scoped({"user": "eve"}).load_continuity() is None
    outcome = memory.wrap(context=RunContext(invocation_state={"user_id": "eve"}))
    assert outcome.saved, outcome.message
    assert "garlic" in mem_store.scoped({"user": "eve"}).load_continuity()
    assert asyncio.run(memory.awrap(namespace={"user": "eve"})).status != "saved"  # nothing new


def test_failing_compress_keeps_episodes(mem_store: Store) -> None:
    def compress(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    result = _agent(AnnealMemory(mem_store, wrap_on_end=True, compress=compress),
                    ScriptedModel())("Decide to fertilise in spring")
    assert str(result).strip() == "Done: noted."
    assert mem_store.load_continuity() is None
    assert AnnealMemory(mem_store, compress=scripted_compress).wrap().saved


def test_broken_store_is_logged_not_raised(tmp_path: Path, caplog) -> None:
    broken = Store(tmp_path / "b.db")
    broken.close()
    with caplog.at_level(logging.WARNING):
        result = _agent(AnnealMemory(broken, wrap_on_end=True),
                        ScriptedModel(call_tool=True))("Keep going")
    assert str(result).strip() == "Done: noted."
    assert any(r.name == "anneal_memory.adapters.strands" for r in caplog.records)


def test_a_failing_namespace_callable_skips_memory_not_the_run(mem_store: Store,
                                                                caplog) -> None:
    def pick(context: RunContext) -> dict[str, str]:
        raise KeyError("no tenant in invocation_state")

    mem_store.record("The shared note Vermilion", "observation")
    scripted = ScriptedModel()
    with caplog.at_level(logging.WARNING):
        _agent(AnnealMemory(mem_store, namespace=pick), scripted)("Vermilion?")
    assert "no memory for this run" in caplog.text
    assert MEMORY_LABEL not in scripted.inputs[0]
    assert len(_episodes(mem_store)) == 1  # nothing written to anyone's memory


def test_fixed_namespace_and_callable_of_the_run_context(mem_store: Store) -> None:
    fixed = AnnealMemory(mem_store, namespace={"user": "kim"})
    _agent(fixed, ScriptedModel())("Kim keeps bees", invocation_state={"user_id": "lee"})
    assert "Kim keeps bees" in [e.content for e in _episodes(mem_store.scoped({"user": "kim"}))]
    assert _episodes(mem_store.scoped({"user": "lee"})) == []  # the fixed namespace wins
    per_agent = AnnealMemory(mem_store, namespace=lambda c: {"user": c.agent.state.get("who")})
    _agent(per_agent, ScriptedModel(), state={"who": "max"})("Max keeps goats")
    assert "Max keeps goats" in [e.content for e in _episodes(mem_store.scoped({"user": "max"}))]


def test_two_users_in_threads_through_one_manager(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    for user, fact in (("ann", "Ann's gate code is Quasar"), ("ben", "Ben's gate code is Nebulon")):
        _agent(memory, ScriptedModel())(fact, invocation_state={"user_id": user})
    seen: dict[str, str] = {}

    def ask(user: str) -> None:
        scripted = ScriptedModel()
        _agent(memory, scripted)("What is my gate code?", invocation_state={"user_id": user})
        seen[user] = scripted.inputs[0]

    threads = [threading.Thread(target=ask, args=(u,)) for u in ("ann", "ben")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "Quasar" in seen["ann"] and "Nebulon" not in seen["ann"]
    assert "Nebulon" in seen["ben"] and "Quasar" not in seen["ben"]


def test_programmatic_search_outside_a_run_is_the_adapters_memory(mem_store: Store,
                                                                  caplog) -> None:
    mem_store.scoped({"user": "ann"}).record("Ann's plot is number 17", "observation")
    mem_store.scoped({"user": "ben"}).record("Ben's plot is number 23", "observation")
    ann = AnnealMemory(mem_store, namespace={"user": "ann"})
    found = asyncio.run(ann.search("plot number"))
    assert [e.store_name for e in found] == ["anneal"]
    assert "number 17" in found[0].content
    assert "Ben" not in " ".join(e.content for e in found)
    per_run = AnnealMemory(mem_store, namespace=lambda c: {"user": "ann"})
    with caplog.at_level(logging.WARNING):  # Strands' manager logs a failed store, skips it
        assert asyncio.run(per_run.search("plot number")) == []
    assert "session_for(" in caplog.text


def test_bad_options_raise_at_construction(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="inject"):
        AnnealMemory(mem_store, inject="sometimes")
    with pytest.raises(ValidationError, match="store_name"):
        AnnealMemory(mem_store, store_name=" ")


def test_a_failed_invocation_still_records_and_wraps(mem_store: Store) -> None:
    class Down(ScriptedModel):
        async def stream(self, *args, **kwargs):  # type: ignore[override]
            raise RuntimeError("model down")
            yield

    memory = AnnealMemory(mem_store, wrap_on_end=True, compress=scripted_compress)
    with pytest.raises(RuntimeError, match="model down"):
        _agent(memory, Down())("Decide to sow leeks")
    assert "sow leeks" in (mem_store.load_continuity() or "")  # AfterInvocation still runs
