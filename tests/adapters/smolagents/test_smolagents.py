"""smolagents-specific behaviour: step types, instructions, callbacks that never raise, the wrap."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from smol_scripted import ScriptedModel, make_agent
from smolagents.memory import ActionStep, FinalAnswerStep, PlanningStep

from anneal_memory import Store
from anneal_memory.adapters.smolagents import LOGGER_NAME, AnnealMemory, model_compressor
from anneal_memory.session import MemorySession


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="Smol")
    yield s
    s.close()


def _episodes(store: Store):
    return store.recall(limit=1000).episodes


def test_tool_calling_run_records_typed_episodes(store: Store) -> None:
    memory = AnnealMemory(store)
    model = ScriptedModel(answer="The pump reads 3.2 bar.", call_tool=True)
    out = memory.run(make_agent(model, memory), "Check the irrigation pump gauge")
    assert out == "The pump reads 3.2 bar."
    by_type = {}
    for ep in _episodes(store):
        by_type.setdefault(ep.type.value, []).append(ep)
    assert [e.content for e in by_type["context"]] == ["Check the irrigation pump gauge"]
    assert [e.content for e in by_type["outcome"]] == ["The pump reads 3.2 bar."]
    tool = [e for e in _episodes(store) if e.trust == "tool"]
    assert len(tool) == 1 and "3.2 bar" in tool[0].content
    # the final_answer tool call is the outcome, not a second tool episode
    assert not any("final_answer" in (e.content or "") for e in tool)


def test_code_agent_records_code_execution_as_tool_output(store: Store) -> None:
    memory = AnnealMemory(store)
    model = ScriptedModel(code=True, answer="3.2 bar", call_tool=True)
    assert memory.run(make_agent(model, memory), "Read the pump gauge with code") == "3.2 bar"
    tool = [e for e in _episodes(store) if e.trust == "tool"]
    assert any("toolresult" in e.content for e in tool)


def test_planning_step_is_recorded_as_decision(store: Store) -> None:
    memory = AnnealMemory(store)
    model = ScriptedModel(answer="ok", plan="Plan: read the gauge before watering the beds.")
    memory.run(make_agent(model, memory, planning_interval=1), "Water the raised beds")
    decisions = [e.content for e in _episodes(store) if e.type.value == "decision"]
    assert any("read the gauge before watering" in d for d in decisions)


def test_memory_goes_into_system_prompt_after_own_instructions(store: Store) -> None:
    memory = AnnealMemory(store)
    model = ScriptedModel(answer="ok")
    agent = make_agent(model, memory, instructions="Answer in one sentence.")
    memory.run(agent, "The compost bin is behind the blue shed")
    memory.run(agent, "Where is the compost bin?")
    system_prompt = agent.memory.system_prompt.system_prompt
    assert "Answer in one sentence." in system_prompt
    assert "blue shed" in system_prompt
    # each run replaces the block instead of stacking a new one on the last
    memory.run(agent, "Where is the compost bin again?")
    assert agent.instructions.count("Answer in one sentence.") == 1
    assert agent.instructions.startswith("Answer in one sentence.")


def test_prepare_does_not_recall_the_task_back_to_itself(store: Store) -> None:
    memory = AnnealMemory(store)
    agent = make_agent(ScriptedModel(), memory)
    block = memory.prepare(agent, "Zanzibar seedlings need shade")
    assert "Zanzibar" not in block
    assert any("Zanzibar" in e.content for e in _episodes(store))


def test_failing_memory_is_logged_and_the_run_goes_on(tmp_path: Path, caplog) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    memory = AnnealMemory(broken)
    model = ScriptedModel(answer="still answered", call_tool=True)
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        assert memory.run(make_agent(model, memory), "Check the gauge") == "still answered"
    assert any(r.name == LOGGER_NAME for r in caplog.records)


def test_strict_session_lets_hook_failures_through(store: Store, monkeypatch) -> None:
    memory = AnnealMemory(MemorySession(store, strict=True))

    def boom(*args, **kwargs):
        raise RuntimeError("memory exploded")

    monkeypatch.setattr(memory.session, "record_tool_output", boom)
    model = ScriptedModel(answer="never", call_tool=True)
    with pytest.raises(RuntimeError, match="memory exploded"):
        memory.run(make_agent(model, memory), "Check the gauge")


def test_wrap_is_off_by_default_and_explicit_wrap_saves(store: Store) -> None:
    memory = AnnealMemory(store)
    agent = make_agent(ScriptedModel(answer="Water at dawn."), memory)
    memory.run(agent, "Decide when to water the tomatoes")
    assert store.load_continuity() is None
    outcome = memory.wrap(agent)
    assert outcome.status == "saved", outcome.message
    assert "## State" in (store.load_continuity() or "")


def test_failed_compress_keeps_episodes_for_the_next_wrap(store: Store) -> None:
    def broken_compress(prompt: str) -> str:
        raise RuntimeError("model offline")

    memory = AnnealMemory(store, compress=broken_compress, wrap_on_end=True)
    model = ScriptedModel(answer="Mulch the beds.")
    agent = make_agent(model, memory)
    memory.run(agent, "Decide how to keep the beds moist")
    assert store.load_continuity() is None
    assert store.status().episodes_since_wrap >= 2
    memory.compress = None  # fall back to the agent's own model
    assert memory.wrap(agent).status == "saved"
    assert store.status().total_wraps == 1


def test_streamed_run_wraps_once_exhausted(store: Store) -> None:
    memory = AnnealMemory(store, wrap_on_end=True)
    agent = make_agent(ScriptedModel(answer="streamed"), memory)
    steps = list(memory.run(agent, "Stream the watering plan", stream=True))
    assert isinstance(steps[-1], FinalAnswerStep) and steps[-1].output == "streamed"
    assert store.status().total_wraps == 1


def test_attach_registers_callbacks_once(store: Store) -> None:
    memory = AnnealMemory(store)
    model = ScriptedModel(answer="fine")
    agent = make_agent(model, None)
    memory.attach(agent)
    memory.attach(agent)
    registered = agent.step_callbacks._callbacks
    for step_cls in (ActionStep, PlanningStep, FinalAnswerStep):
        ours = [cb for cb in registered.get(step_cls, []) if getattr(cb, "__self__", None) is memory]
        assert len(ours) == 1
    memory.run(agent, "Attach after construction")
    assert [e.content for e in _episodes(store) if e.type.value == "outcome"] == ["fine"]


def test_model_compressor_answers_a_wrap_prompt(store: Store) -> None:
    session = MemorySession(store)
    session.record_decision("Use drip lines for the greenhouse")
    outcome = session.wrap(model_compressor(ScriptedModel()))
    assert outcome.status == "saved", outcome.message


def test_wrap_without_compress_or_model_fails_softly(store: Store) -> None:
    memory = AnnealMemory(store)
    memory.session.record_decision("Something to wrap")
    assert memory.wrap().status == "failed"
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status == "failed"
    assert store.status().episodes_since_wrap == 1
