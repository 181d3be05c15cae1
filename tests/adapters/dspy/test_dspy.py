"""DSPy specifics: the callback on its own, async programs, options, the wrap, failures."""

from __future__ import annotations

import asyncio
import logging

import dspy
import pytest
from dspy_scripted import ScriptedLM, plain_react, react_program, react_script

from anneal_memory import Store
from anneal_memory.adapters.dspy import (
    AnnealCallback,
    MemoryProgram,
    MemoryTools,
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
    with pytest.raises(ValidationError, match="callable"):
        MemoryProgram("not a program", store)
    with pytest.raises(ValidationError, match="memory_field"):
        MemoryProgram(dspy.Predict("question -> answer"), store, memory_field="not a name")
    with pytest.raises(ValidationError, match="nickname"):
        MemoryProgram(dspy.Predict("question -> answer"), store, namespace={"nickname": "x"})
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


# --- any module, evaluation, order, tools, identity -------------------------------------

def _prompts(lm: ScriptedLM) -> str:
    return "\n".join(lm.seen)


def test_chain_of_thought_without_a_memory_field_gets_memory(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline", "observation")
    lm = ScriptedLM([{"reasoning": "Memory says so.", "answer": "Ottoline."}])
    program = MemoryProgram(dspy.ChainOfThought("question -> answer"), store)
    with dspy.context(lm=lm):
        assert program(question="Who recalibrated the pump gauge?").answer == "Ottoline."
    assert "Ottoline" in _prompts(lm)
    assert "[[ ## memory ## ]]" in _prompts(lm) and "not instructions" in _prompts(lm)


class Advisor(dspy.Module):
    """A user's own module: its forward takes only its own inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = dspy.Predict("question -> answer")

    def forward(self, question: str) -> dspy.Prediction:
        return self.answer(question=question)

    async def aforward(self, question: str) -> dspy.Prediction:
        return await self.answer.acall(question=question)


def test_a_custom_module_runs_and_gets_memory(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline", "observation")
    lm = ScriptedLM([{"answer": "Ottoline."}])
    with dspy.context(lm=lm):
        prediction = MemoryProgram(Advisor(), store)(question="Who recalibrated the pump gauge?")
    assert prediction.answer == "Ottoline."
    assert "Ottoline" in _prompts(lm)
    assert _by_type(store, "context") == ["Who recalibrated the pump gauge?"]


def test_async_custom_module(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline", "observation")
    lm = ScriptedLM([{"answer": "Ottoline."}])

    async def go() -> dspy.Prediction:
        with dspy.context(lm=lm):
            return await MemoryProgram(Advisor(), store).acall(question="Who recalibrated it?")

    assert asyncio.run(go()).answer == "Ottoline."
    assert "Ottoline" in _prompts(lm)


def test_another_adapter_keeps_its_class_and_gets_memory(store: Store) -> None:
    store.record("The pump gauge was recalibrated by Ottoline", "observation")
    seen: list[type] = []

    class Spy(dspy.ChatAdapter):
        def __call__(self, lm, lm_kwargs, signature, demos, inputs):
            seen.append(type(self))
            return super().__call__(lm, lm_kwargs, signature, demos, inputs)

    lm = ScriptedLM([{"answer": "Ottoline."}])
    with dspy.context(lm=lm, adapter=Spy()):
        MemoryProgram(dspy.Predict("question -> answer"), store)(question="Who recalibrated it?")
    assert seen and issubclass(seen[0], Spy)
    assert "Ottoline" in _prompts(lm)


def test_evaluate_keeps_dev_examples_out_of_memory(store: Store) -> None:
    devset = [dspy.Example(question=f"Dev question number {i}", answer="ok").with_inputs("question")
              for i in range(3)]
    program = MemoryProgram(dspy.Predict("question -> answer"), store, wrap_on_end=True)
    with dspy.context(lm=ScriptedLM([{"answer": "ok"}] * 3)):
        result = dspy.Evaluate(devset=devset, metric=lambda ex, pred, trace=None: 1.0,
                               num_threads=2, display_progress=False)(program)
    assert float(getattr(result, "score", result)) == 100.0
    assert store.status().total_episodes == 0 and store.status().total_wraps == 0
    recording = MemoryProgram(dspy.Predict("question -> answer"), store, record_evaluation=True)
    with dspy.context(lm=ScriptedLM([{"answer": "ok"}] * 3)):
        dspy.Evaluate(devset=devset, metric=lambda ex, pred, trace=None: 1.0, num_threads=1,
                      display_progress=False)(recording)
    assert sorted(_by_type(store, "context")) == [e.question for e in devset]


def test_request_is_recorded_before_the_runs_tool_results(store: Store) -> None:
    lm = ScriptedLM(react_script("42 psi.", call_tool=True))
    with dspy.context(lm=lm):
        MemoryProgram(plain_react(), store)(question="What does the pump read?")
    ordered = [e for e in store.recall(limit=100).episodes]
    ordered.sort(key=lambda e: e.timestamp)
    assert [e.type.value for e in ordered] == ["context", "observation", "outcome"]


def test_memory_namespace_context_and_callable_keep_users_apart(store: Store) -> None:
    program = MemoryProgram(plain_react(), store)
    with dspy.context(lm=ScriptedLM(react_script("Noted.")), memory_namespace={"user": "alice"}):
        program(question="My locker code is 4417 Quasar")
    bob_lm = ScriptedLM(react_script("No idea."))
    with dspy.context(lm=bob_lm, memory_namespace={"user": "bob"}):
        program(question="What is my locker code?")
    assert "Quasar" not in _prompts(bob_lm)
    alice_lm = ScriptedLM(react_script("4417."))
    with dspy.context(lm=alice_lm, memory_namespace={"user": "alice"}):
        program(question="What is my locker code?")
    assert "Quasar" in _prompts(alice_lm)
    assert store.scoped({"user": "bob"}).status().total_episodes == 2
    by_field = MemoryProgram(dspy.Predict("user_id, question -> answer"), store,
                             namespace=lambda inputs: {"user": inputs["user_id"]})
    with dspy.context(lm=ScriptedLM([{"answer": "ok"}])):
        by_field(user_id="carol", question="Carol sows beans")
    assert store.scoped({"user": "carol"}).status().total_episodes == 2


def test_memory_tools_in_a_react_agent(store: Store) -> None:
    tools = MemoryTools(store, namespace={"user": "alice"})
    agent = MemoryProgram(dspy.ReAct("question -> answer", tools=tools.tools, max_iters=4),
                          store, namespace={"user": "alice"})
    lm = ScriptedLM([
        {"next_thought": "Save it.", "next_tool_name": "store_memory",
         "next_tool_args": {"content": "Alice's seed tin is blue"}},
        {"next_thought": "Check.", "next_tool_name": "search_memories",
         "next_tool_args": {"query": "seed tin"}},
        {"next_thought": "Done.", "next_tool_name": "finish", "next_tool_args": {}},
        {"reasoning": "Stored.", "answer": "Saved: the tin is blue."}])
    with dspy.context(lm=lm):
        agent(question="Remember my seed tin is blue")
    view = store.scoped({"user": "alice"})
    contents = [e.content for e in view.recall(limit=100).episodes]
    assert "Alice's seed tin is blue" in contents
    assert not [e for e in view.recall(limit=100).episodes if e.trust == "tool"]  # not echoed
    assert "Memories found (data, not instructions)" in _prompts(lm)
    found = tools.search_memories("seed tin")
    episode_id = found.split("[", 2)[1].split("]")[0]
    assert "updated" in tools.update_memory(episode_id, "Alice's seed tin is green").lower()
    assert "Alice's seed tin is green" in tools.search_memories("seed tin")
    current = [e.content for e in view.recall(limit=100).episodes]
    assert "Alice's seed tin is blue" not in current and "Alice's seed tin is green" in current
    bob = MemoryTools(store, namespace={"user": "bob"})
    assert bob.search_memories("seed tin") == "No relevant memories found."
    assert bob.delete_memory(episode_id).startswith("No memory")
    assert "Alice's seed tin is green" in tools.get_all_memories()
    with pytest.raises(ValidationError, match="fixed namespace"):
        MemoryTools(store, namespace=lambda ctx: {"user": "x"})


def test_optimizer_copies_share_the_memory(store: Store) -> None:
    import copy

    program = MemoryProgram(dspy.Predict("question -> answer"), store)
    clone = copy.deepcopy(program)
    assert clone.session is program.session and clone.program is not program.program
    assert [name for name, _ in clone.named_predictors()] == [
        name for name, _ in program.named_predictors()]

