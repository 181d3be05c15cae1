"""DSPy specifics: the callback on its own, async programs, options, the wrap, failures."""

from __future__ import annotations

import asyncio
import logging

import dspy
import pytest
from dspy_scripted import ScriptedLM, react_program, react_script

from anneal_memory import Store
from anneal_memory.adapters.dspy import (
    AnnealCallback,
    MemoryProgram,
    lm_compress,
    with_memory_field,
)
from anneal_memory.errors import ValidationError


def _by_type(store: Store, kind: str) -> list[str]:
    return [e.content for e in store.recall(limit=100).episodes if e.type.value == kind]


def test_callback_alone_records_outer_module_only(store: Store) -> None:
    cb = AnnealCallback(store)
    lm = ScriptedLM(react_script("42 psi.", call_tool=True))
    react = dspy.ReAct("question -> answer", tools=[react_program().tools["read_gauge"]], max_iters=4)
    with dspy.context(lm=lm, callbacks=[cb]):
        react(question="What does the pump read?")
    assert _by_type(store, "context") == ["What does the pump read?"]
    assert _by_type(store, "outcome") == ["42 psi."]   # not the inner Predict outputs
    tool = [e for e in store.recall(limit=100).episodes if e.trust == "tool"]
    assert [e.type.value for e in tool] == ["observation"] and "42 psi" in tool[0].content
    assert not store.recall(keyword="Completed").episodes  # ReAct's finish tool is not memory


def test_record_lm_completions_is_opt_in(store: Store) -> None:
    cb = AnnealCallback(store, record_lm=True)
    lm = ScriptedLM([{"answer": "Basil likes sun."}])
    with dspy.context(lm=lm, callbacks=[cb]):
        dspy.Predict("question -> answer")(question="What does basil like?")
    completions = [e for e in store.recall(limit=100).episodes
                   if (e.metadata or {}).get("event") == "lm_completion"]
    assert completions and "Basil likes sun." in completions[0].content


def test_async_program_injects_and_records(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline", "observation")
    lm = ScriptedLM(react_script("42 psi.", call_tool=True))
    program = MemoryProgram(react_program(), store)

    async def go() -> dspy.Prediction:
        with dspy.context(lm=lm):
            return await program.acall(question="What does the pump gauge read?")

    prediction = asyncio.run(go())
    assert prediction.answer == "42 psi."
    assert "Ottoline" in lm.seen[0]       # the memory field reached the LM
    assert _by_type(store, "outcome") == ["42 psi."]
    assert any(e.trust == "tool" for e in store.recall(limit=100).episodes)


def test_memory_field_is_not_recorded_as_the_request(store: Store) -> None:
    store.record("Seed packets are in the blue tin", "observation")
    with dspy.context(lm=ScriptedLM(react_script("In the blue tin."))):
        MemoryProgram(react_program(), store)(question="Where are the seed packets?")
    assert "Where are the seed packets?" in _by_type(store, "context")
    assert not any("memory" in c.lower() for c in _by_type(store, "context"))


def test_explicit_wrap_through_configured_lm_and_async_wrap(store: Store) -> None:
    lm = ScriptedLM(react_script("Noted."))
    program = MemoryProgram(react_program(), store)
    with dspy.context(lm=lm):
        program(question="We decided to prune the apple trees in February")
        assert store.load_continuity() is None   # wrap_on_end defaults to False
        assert program.wrap().status == "saved"
    assert "## State" in (store.load_continuity() or "")
    with dspy.context(lm=ScriptedLM(react_script("Ok."))):
        program(question="Also net the strawberries")
        outcome = asyncio.run(program.awrap(lm_compress()))
    assert outcome.status == "saved"


def test_failing_compress_keeps_episodes(store: Store) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    program = MemoryProgram(react_program(), store, wrap_on_end=True, compress=broken)
    with dspy.context(lm=ScriptedLM(react_script("Noted."))):
        assert program(question="Keep the hose coiled").answer == "Noted."
    assert program.session.last_wrap is not None and program.session.last_wrap.status == "failed"
    assert store.load_continuity() is None
    assert store.status().episodes_since_wrap >= 2


def test_broken_store_is_logged_not_raised(tmp_path, caplog) -> None:
    broken = Store(tmp_path / "b.db", project_name="B")
    broken.close()
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.dspy"):
        with dspy.context(lm=ScriptedLM(react_script("fine", call_tool=True))):
            out = MemoryProgram(react_program(), broken, wrap_on_end=True)(question="go on")
    assert out.answer == "fine"
    assert any(r.name.startswith("anneal_memory.adapters.dspy") for r in caplog.records)


def test_configuration_errors(store: Store) -> None:
    with pytest.raises(ValidationError, match="with_memory_field"):
        MemoryProgram(dspy.Predict("question -> answer"), store)
    sig = with_memory_field("question -> answer")
    assert "memory" in sig.input_fields and with_memory_field(sig) is sig


def test_store_path_opens_a_store_the_program_owns(tmp_path) -> None:
    program = MemoryProgram(react_program(), str(tmp_path / "owned.db"))
    with dspy.context(lm=ScriptedLM(react_script("Noted."))):
        program(question="Keep the seed order list")
    assert program.session.owns_store
    contents = [e.content for e in program.session.store.recall(limit=10).episodes]
    assert "Keep the seed order list" in contents
    program.session.close()
