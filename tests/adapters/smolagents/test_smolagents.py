"""smolagents-specific behaviour: step types, instructions, callbacks that never raise, the wrap."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from smol_scripted import ScriptedModel, make_agent, message_text, read_gauge
from smolagents import ToolCallingAgent
from smolagents.memory import ActionStep, FinalAnswerStep, PlanningStep
from smolagents.models import ChatMessage
from smolagents.monitoring import LogLevel

from anneal_memory import Store
from anneal_memory.adapters.smolagents import (
    LOGGER_NAME,
    AnnealMemory,
    RunContext,
    model_compressor,
)
from anneal_memory.errors import ValidationError
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
    agent.run("The compost bin is behind the blue shed")
    agent.run("Where is the compost bin?")
    system_prompt = model.systems[-1]
    assert "Answer in one sentence." in system_prompt
    assert "blue shed" in system_prompt
    assert system_prompt.index("Answer in one sentence.") < system_prompt.index("blue shed")
    # the agent's own instructions are never left changed by memory
    assert agent.instructions == "Answer in one sentence."


def test_the_users_later_instructions_hold(store: Store) -> None:
    memory = AnnealMemory(store)
    model = ScriptedModel(answer="ok")
    agent = make_agent(model, memory, instructions="Answer in French.")
    agent.run("The compost bin is behind the blue shed")
    agent.instructions = "Answer in German."
    agent.run("Where is the compost bin?")
    assert "Answer in German." in model.systems[-1]
    assert "Answer in French." not in model.systems[-1]
    assert "blue shed" in model.systems[-1]
    assert agent.instructions == "Answer in German."
    agent.instructions = None
    agent.run("Where is the compost bin again?")
    assert agent.instructions is None and "blue shed" in model.systems[-1]


def test_plain_agent_run_recalls_and_records(store: Store) -> None:
    """The path GradioUI and managed agents take: agent.run, no memory.run around it."""
    memory = AnnealMemory(store)
    model = ScriptedModel(answer="Noted.")
    agent = make_agent(model, memory)
    agent.run("The greenhouse heater is a Zephyrion 4000")
    assert [e.content for e in _episodes(store) if e.type.value == "context"] == [
        "The greenhouse heater is a Zephyrion 4000"]
    agent.run("Which greenhouse heater do we have?")
    assert "Zephyrion" in model.systems[-1]
    # the run's own request is not recalled back into its own prompt
    assert "Which greenhouse heater do we have?" not in model.systems[-1]


def test_streamed_plain_run_as_gradio_does(store: Store) -> None:
    memory = AnnealMemory(store, wrap_on_end=True)
    model = ScriptedModel(answer="Noted.")
    agent = make_agent(model, memory)
    list(agent.run("The greenhouse heater is a Zephyrion 4000", stream=True, reset=False))
    steps = list(agent.run("Which heater?", stream=True, reset=False))
    assert isinstance(steps[-1], FinalAnswerStep)
    assert "Zephyrion" in model.systems[-1]
    assert store.status().total_wraps == 2
    assert {e.content for e in _episodes(store) if e.type.value == "context"} == {
        "The greenhouse heater is a Zephyrion 4000", "Which heater?"}


def test_managed_agent_runs_through_its_manager_get_memory(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline", "observation")
    memory = AnnealMemory(store)
    worker_model = ScriptedModel(answer="Ottoline did.")
    worker = memory.attach(ToolCallingAgent(
        tools=[], model=worker_model, name="gauge_expert", description="Knows the gauges.",
        verbosity_level=LogLevel.OFF, max_steps=3))
    manager_model = _ManagerModel()
    manager = ToolCallingAgent(tools=[], model=manager_model, managed_agents=[worker],
                               verbosity_level=LogLevel.OFF, max_steps=3)
    assert "Ottoline did." in str(manager.run("Who recalibrated the pump gauge?"))
    assert any("Ottoline" in s for s in worker_model.systems)
    outcomes = [e.content for e in _episodes(store) if e.type.value == "outcome"]
    assert "Ottoline did." in outcomes


class _ManagerModel(ScriptedModel):
    """Delegates to the managed agent once, then answers with its report."""

    def _reply(self, messages, stop_sequences, tools_to_call_from):
        texts = [message_text(m if isinstance(m, ChatMessage) else ChatMessage.from_dict(m))
                 for m in messages]
        report = next((t for t in texts if "Ottoline did." in t), None)
        if report is None:
            return self._call("gauge_expert", {"task": "Who recalibrated the pump gauge?",
                                               "additional_args": {}})
        return self._call("final_answer", {"answer": "Ottoline did."})


def test_callbacks_alone_wire_the_run_from_the_second_run_on(store: Store) -> None:
    memory = AnnealMemory(store)
    model = ScriptedModel(answer="Noted.")
    agent = ToolCallingAgent(tools=[read_gauge], model=model, step_callbacks=memory.step_callbacks,
                             verbosity_level=LogLevel.OFF, max_steps=3)
    agent.run("The greenhouse heater is a Zephyrion 4000")
    assert "The greenhouse heater is a Zephyrion 4000" in [e.content for e in _episodes(store)]
    agent.run("Which greenhouse heater do we have?")
    assert "Zephyrion" in model.systems[-1]


def test_two_users_on_one_store_never_see_each_other(store: Store) -> None:
    alice = AnnealMemory(store, namespace={"user": "alice"})
    bob = AnnealMemory(store, namespace={"user": "bob"})
    a_model, b_model = ScriptedModel(answer="ok"), ScriptedModel(answer="ok")
    a_agent, b_agent = make_agent(a_model, alice), make_agent(b_model, bob)
    a_agent.run("My locker code is 4417 Quasar")
    b_agent.run("My locker code is 9902 Nebula")
    a_agent.run("What is my locker code?")
    b_agent.run("What is my locker code?")
    assert "Quasar" in a_model.systems[-1] and "Nebula" in b_model.systems[-1]
    assert not any("Nebula" in t for t in a_model.inputs)
    assert not any("Quasar" in t for t in b_model.inputs)
    assert alice.session_of(a_agent).namespace.user == "alice"


def test_namespace_callable_gets_the_run(store: Store) -> None:
    seen: list[RunContext] = []

    def who(run: RunContext) -> dict:
        seen.append(run)
        return {"user": run.additional_args["user_id"]}

    memory = AnnealMemory(store, namespace=who)
    model = ScriptedModel(answer="ok")
    agent = make_agent(model, memory)
    agent.run("My locker code is 4417 Quasar", additional_args={"user_id": "alice"})
    agent.run("What is my locker code?", additional_args={"user_id": "bob"})
    assert "Quasar" not in model.systems[-1]
    agent.run("What is my locker code?", additional_args={"user_id": "alice"})
    assert "Quasar" in model.systems[-1]
    assert seen[0].agent is agent and seen[0].task == "My locker code is 4417 Quasar"


def test_namespace_callable_returning_none_is_refused_not_global(store: Store, caplog) -> None:
    store.record("Root secret Zephyrion", "observation")
    memory = AnnealMemory(store, namespace=lambda run: None)
    model = ScriptedModel(answer="still answered")
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        assert make_agent(model, memory).run("What is the secret?") == "still answered"
    assert not any("Zephyrion" in t for t in model.inputs)
    assert any("returned None" in r.getMessage() for r in caplog.records)


def test_bad_namespace_raises_at_construction(store: Store) -> None:
    with pytest.raises(ValidationError, match="nickname"):
        AnnealMemory(store, namespace={"nickname": "al"})
    with pytest.raises(ValidationError, match="already one namespace"):
        AnnealMemory(MemorySession(store, namespace={"user": "a"}), namespace={"user": "b"})


def test_concurrent_runs_of_two_users_both_wrap(store: Store) -> None:
    import threading

    errors: list[BaseException] = []

    def one(user: str) -> None:
        try:
            memory = AnnealMemory(store, namespace={"user": user}, wrap_on_end=True)
            make_agent(ScriptedModel(answer=f"done for {user}"), memory).run(
                f"Decide the watering plan of {user}")
            assert memory.session_of().last_wrap.status == "saved"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(u,)) for u in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for user in ("alice", "bob"):
        view = store.scoped({"user": user})
        assert view.status().total_wraps == 1 and user in (view.load_continuity() or "")


def test_an_agent_belongs_to_one_memory(store: Store) -> None:
    agent = make_agent(ScriptedModel(), AnnealMemory(store))
    with pytest.raises(ValidationError, match="another AnnealMemory"):
        AnnealMemory(store).attach(agent)


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
    assert memory.wrap(agent, compress=model_compressor(model)).status == "saved"
    assert store.status().total_wraps == 1


def test_streamed_run_wraps_once_exhausted(store: Store) -> None:
    memory = AnnealMemory(store, wrap_on_end=True)
    agent = make_agent(ScriptedModel(answer="streamed"), memory)
    steps = list(memory.run(agent, "Stream the watering plan", stream=True))
    assert store.status().total_wraps == 1  # once the generator is exhausted
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
