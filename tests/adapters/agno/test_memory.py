"""The adapter's own behaviour in real Agno runs: the memory manager seam, the hooks, the
options, failures, and Agno's memory-manager calls against Agno's own SQLite backend."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from agno.agent import Agent
from agno.db.sqlite import SqliteDb
from agno.memory import MemoryManager, UserMemory
from agno.run.base import RunStatus
from agno_scripted import ScriptedModel, lookup

from anneal_memory import Store, ValidationError
from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.adapters.agno import AnnealMemory
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def _episodes(store: Store) -> list[Any]:
    return store.recall(limit=1000).episodes


def _agent(memory: AnnealMemory, model: ScriptedModel, **options: Any) -> Agent:
    return Agent(model=model, id="test-agent", tools=[lookup], memory_manager=memory,
                 pre_hooks=[memory.pre_hook], post_hooks=[memory.post_hook], telemetry=False,
                 **options)


def test_memory_is_one_labelled_block_in_the_system_prompt_once_per_run(
        mem_store: Store) -> None:
    mem_store.scoped({"user": "ann"}).record("The irrigation pump runs at 42 psi",
                                             "observation")
    memory = AnnealMemory(mem_store)
    scripted = ScriptedModel(call_tool=True)
    out = _agent(memory, scripted).run("What pressure does the irrigation pump use?",
                                       user_id="ann")
    assert out.status == RunStatus.completed
    assert len(scripted.inputs) == 2  # the tool call, then the answer: one system prompt
    system = out.messages[0]
    assert system.role == "system"
    text = system.get_content_string()
    assert "<memories_from_previous_interactions>" in text and MEMORY_LABEL in text
    assert "42 psi" in text.split(MEMORY_LABEL, 1)[1]
    # the user's own words are the user message, after the memory
    assert out.messages[1].role == "user"
    assert out.messages[1].get_content_string() == "What pressure does the irrigation pump use?"


def test_own_request_is_not_recalled_back_in_the_same_run(mem_store: Store) -> None:
    scripted = ScriptedModel()
    _agent(AnnealMemory(mem_store), scripted).run("Zanzibar orchids need misting")
    system = scripted.inputs[0].split("Zanzibar orchids need misting")[0]
    assert "Zanzibar" not in system


def test_episodes_carry_agnos_session_and_run_ids(mem_store: Store) -> None:
    out = _agent(AnnealMemory(mem_store), ScriptedModel(call_tool=True)).run(
        "Check the pump", user_id="ann", session_id="conv-7")
    episodes = mem_store.scoped({"user": "ann"}).recall().episodes
    assert {e.type.value for e in episodes} == {"context", "observation", "outcome"}
    for episode in episodes:
        assert episode.metadata["agno_session_id"] == "conv-7"
        assert episode.metadata["agno_run_id"] == out.run_id


def test_async_hooks_under_arun_record_and_wrap_with_the_agents_model(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, wrap_on_end=True)
    scripted = ScriptedModel(call_tool=True)
    agent = Agent(model=scripted, tools=[lookup], memory_manager=memory,
                  pre_hooks=[memory.apre_hook], post_hooks=[memory.apost_hook], telemetry=False)
    out = asyncio.run(agent.arun("Check the pump pressure", user_id="ann"))
    assert out.content == "Done: noted."
    ann = mem_store.scoped({"user": "ann"})
    assert {"context", "observation", "outcome"} <= {e.type.value for e in _episodes(ann)}
    assert ann.status().total_wraps == 1 and "## State" in (ann.load_continuity() or "")


def test_sync_hooks_work_under_arun_too(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    asyncio.run(_agent(memory, ScriptedModel()).arun("Plant garlic in October", user_id="ann"))
    scripted = ScriptedModel()
    asyncio.run(_agent(memory, scripted).arun("When do I plant garlic?", user_id="ann"))
    assert "Plant garlic in October" in scripted.inputs[0]


def test_explicit_wrap_uses_the_last_agents_model(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)  # wrap_on_end defaults to False
    _agent(memory, ScriptedModel()).run("Decide to prune the roses in March", user_id="eve")
    eve = mem_store.scoped({"user": "eve"})
    assert eve.load_continuity() is None
    with pytest.raises(ValidationError):
        memory.wrap(namespace={"user": " "})
    outcome = memory.wrap(namespace={"user": "eve"})
    assert outcome.saved, outcome.message
    assert "roses" in (eve.load_continuity() or "")


def test_compress_callable_overrides_the_model(mem_store: Store) -> None:
    prompts: list[str] = []

    def compress(prompt: str) -> str:
        prompts.append(prompt)
        return scripted_compress(prompt)

    scripted = ScriptedModel()
    _agent(AnnealMemory(mem_store, wrap_on_end=True, compress=compress), scripted).run(
        "Decide to mulch the beds")
    assert len(prompts) == 1 and is_wrap_prompt(prompts[0])
    assert mem_store.status().total_wraps == 1


def test_failing_compress_keeps_episodes_and_the_run(mem_store: Store) -> None:
    def compress(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    out = _agent(AnnealMemory(mem_store, wrap_on_end=True, compress=compress),
                 ScriptedModel()).run("Decide to fertilise in spring")
    assert out.content == "Done: noted."
    assert mem_store.load_continuity() is None
    assert any("fertilise" in e.content for e in _episodes(mem_store))
    assert AnnealMemory(mem_store, compress=scripted_compress).wrap().saved


def test_record_options_switch_recording_off(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store, record_tools=False, record_user_input=False,
                          record_outcome=False)
    _agent(memory, ScriptedModel(call_tool=True), update_memory_on_run=True).run("Check it")
    assert _episodes(mem_store) == []


def test_broken_store_is_logged_on_the_adapters_logger(tmp_path: Path, caplog) -> None:
    broken = Store(tmp_path / "b.db")
    broken.close()
    with caplog.at_level(logging.WARNING):
        out = _agent(AnnealMemory(broken, wrap_on_end=True), ScriptedModel(call_tool=True)).run(
            "Keep going")
    assert out.content == "Done: noted."
    assert any(r.name == "anneal_memory.adapters.agno" for r in caplog.records)


def test_a_failing_namespace_callable_skips_memory_not_the_run(mem_store: Store, caplog) -> None:
    def pick(ctx: Any) -> Any:
        raise KeyError("no tenant in metadata")

    with caplog.at_level(logging.WARNING):
        out = _agent(AnnealMemory(mem_store, namespace=pick), ScriptedModel()).run("Prune it")
    assert out.content == "Done: noted."
    assert _episodes(mem_store) == []
    assert "no memory for this run" in caplog.text


def test_refused_identity_stops_the_run_before_the_model(mem_store: Store) -> None:
    scripted = ScriptedModel()
    out = _agent(AnnealMemory(mem_store), scripted).run("Hello", user_id="\u200b")
    assert out.status == RunStatus.error and "Agno's user_id" in str(out.content)
    assert scripted.inputs == [] and _episodes(mem_store) == []


def test_an_empty_run_user_id_is_agnos_not_given(mem_store: Store) -> None:
    # Agno's own rule (initialize_session): run(user_id="") means "the agent's user_id"
    memory = AnnealMemory(mem_store)
    _agent(memory, ScriptedModel(), user_id="ann").run("My plot is number 17", user_id="")
    assert [e.content for e in mem_store.scoped({"user": "ann"}).recall().episodes][-1] == (
        "My plot is number 17")


def test_without_hooks_the_memory_manager_alone_records_and_recalls(mem_store: Store) -> None:
    # the bare seam: Agno's background create_user_memories (a worker thread under run)
    memory = AnnealMemory(mem_store)
    agent = Agent(model=ScriptedModel(), memory_manager=memory, update_memory_on_run=True,
                  telemetry=False)
    agent.run("My locker code is Quasar-1711", user_id="ann")
    assert [e.content for e in mem_store.scoped({"user": "ann"}).recall().episodes] == [
        "My locker code is Quasar-1711"]
    scripted = ScriptedModel()
    Agent(model=scripted, memory_manager=memory, update_memory_on_run=True,
          telemetry=False).run("What is my locker code?", user_id="bob")
    assert "Quasar" not in scripted.inputs[0]
    scripted = ScriptedModel()
    asyncio.run(Agent(model=scripted, memory_manager=memory, update_memory_on_run=True,
                      telemetry=False).arun("What is my locker code?", user_id="ann"))
    assert "- My locker code is Quasar-1711" in scripted.inputs[0]


def test_agentic_memory_tool_records_the_models_request(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    scripted = ScriptedModel(call_tool=True, tool=("update_user_memory",
                                                   {"task": "The user's dog is called Biscuit"}))
    agent = Agent(model=scripted, memory_manager=memory, enable_agentic_memory=True,
                  pre_hooks=[memory.pre_hook], post_hooks=[memory.post_hook], telemetry=False)
    agent.run("Remember my dog's name, Biscuit", user_id="ann")
    contents = [e.content for e in mem_store.scoped({"user": "ann"}).recall().episodes]
    assert "The user's dog is called Biscuit" in contents


def test_clear_of_every_users_memory_is_refused(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="clear_user_memories"):
        AnnealMemory(mem_store).clear()


def _texts(memories: list[UserMemory] | None) -> list[str]:
    return [m.memory for m in memories or []]


def _scenario(manager: MemoryManager) -> dict[str, Any]:
    """Agno's memory-manager calls an app makes, as observed results (texts, not ids)."""
    seen: dict[str, Any] = {}
    notes = [UserMemory(memory=f"ann note {i}") for i in range(4)]
    ids = [manager.add_user_memory(n, user_id="ann") for n in notes]
    seen["add sets id and user"] = [(n.memory_id == i, n.user_id) for n, i in zip(notes, ids)]
    manager.add_user_memory(UserMemory(memory="bob note"), user_id="bob")
    manager.add_user_memory(UserMemory(memory="nobody's note"))
    seen["ann"] = _texts(manager.get_user_memories(user_id="ann"))
    seen["bob"] = _texts(manager.get_user_memories(user_id="bob"))
    seen["none is default"] = (_texts(manager.get_user_memories()),
                               _texts(manager.get_user_memories(user_id="default")))
    seen["unknown user"] = _texts(manager.get_user_memories(user_id="zed"))
    got = manager.get_user_memory(ids[1], user_id="ann")
    seen["get own"] = got.memory if got else None
    seen["get as another user"] = manager.get_user_memory(ids[1], user_id="bob")
    seen["last_n"] = _texts(manager.search_user_memories(limit=2, user_id="ann"))
    seen["first_n"] = _texts(manager.search_user_memories(limit=2, retrieval_method="first_n",
                                                          user_id="ann"))
    manager.delete_user_memory(ids[0], user_id="bob")  # not bob's: nothing happens
    seen["after foreign delete"] = _texts(manager.get_user_memories(user_id="ann"))
    manager.delete_user_memory(ids[0], user_id="ann")
    seen["after delete"] = _texts(manager.get_user_memories(user_id="ann"))
    manager.replace_user_memory(ids[2], UserMemory(memory="ann note 2, revised"), user_id="ann")
    seen["after replace"] = sorted(_texts(manager.get_user_memories(user_id="ann")))
    manager.clear_user_memories(user_id="ann")
    seen["after clear"] = (_texts(manager.get_user_memories(user_id="ann")),
                           _texts(manager.get_user_memories(user_id="bob")))
    return seen


def test_memory_manager_calls_behave_as_agnos_sqlite_backend(tmp_path: Path,
                                                            mem_store: Store) -> None:
    reference = MemoryManager(db=SqliteDb(db_file=str(tmp_path / "agno.db")))
    ours = _scenario(AnnealMemory(mem_store))
    theirs = _scenario(reference)
    assert ours == theirs
    assert theirs["ann"] == [f"ann note {i}" for i in range(4)]  # the scenario means something


def test_agentic_search_ranks_by_recall(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    for text in ("The shed key is under the blue pot", "Tomatoes like full sun",
                 "The compost needs turning weekly"):
        memory.add_user_memory(UserMemory(memory=text), user_id="ann")
    found = memory.search_user_memories("where is the shed key", limit=1,
                                        retrieval_method="agentic", user_id="ann")
    assert _texts(found) == ["The shed key is under the blue pot"]
    assert memory.search_user_memories("shed key", retrieval_method="agentic",
                                       user_id="bob") == []
    with pytest.raises(ValueError, match="Query is required"):
        memory.search_user_memories(retrieval_method="agentic", user_id="ann")


def test_streamed_runs_record_and_recall(mem_store: Store) -> None:
    memory = AnnealMemory(mem_store)
    for _ in _agent(memory, ScriptedModel(call_tool=True)).run(
            "The greenhouse heater is a Zephyrion 4000", user_id="ann", stream=True):
        pass
    ann = mem_store.scoped({"user": "ann"})
    assert {"context", "observation", "outcome"} <= {e.type.value for e in _episodes(ann)}

    async def streamed() -> ScriptedModel:
        scripted = ScriptedModel()
        agent = Agent(model=scripted, memory_manager=memory, pre_hooks=[memory.apre_hook],
                      post_hooks=[memory.apost_hook], telemetry=False)
        async for _ in agent.arun("Which greenhouse heater do we have?", user_id="ann",
                                  stream=True):
            pass
        return scripted

    assert "Zephyrion" in asyncio.run(streamed()).inputs[0]


def test_a_failed_run_keeps_its_request(mem_store: Store) -> None:
    class Down(ScriptedModel):
        def invoke(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("model down")

    memory = AnnealMemory(mem_store, wrap_on_end=True, compress=scripted_compress)
    out = _agent(memory, Down()).run("Decide to sow leeks", user_id="ann")
    assert out.status == RunStatus.error  # Agno reports it; no post-hook runs
    ann = mem_store.scoped({"user": "ann"})
    assert [e.content for e in _episodes(ann)] == ["Decide to sow leeks"]
    assert memory.wrap(namespace={"user": "ann"}).saved  # the next wrap has it
    assert "sow leeks" in (ann.load_continuity() or "")


def test_agentos_fresh_copies_share_the_memory(mem_store: Store) -> None:
    # AgentOS (create_fresh=True) runs each request on agent.deep_copy()
    memory = AnnealMemory(mem_store)
    copy = _agent(memory, ScriptedModel()).deep_copy()
    assert copy.memory_manager is memory and copy.pre_hooks[0].__self__ is memory
    copy.run("The shed key is under the blue pot", user_id="ann")
    assert "shed key" in mem_store.scoped({"user": "ann"}).recall().episodes[-1].content


def test_a_team_takes_the_same_memory_manager_and_hooks(mem_store: Store) -> None:
    from agno.team import Team

    memory = AnnealMemory(mem_store, wrap_on_end=True)
    member = Agent(model=ScriptedModel(), id="helper", name="helper", telemetry=False)

    def team(model: ScriptedModel) -> Team:
        return Team(members=[member], model=model, memory_manager=memory,
                    pre_hooks=[memory.pre_hook], post_hooks=[memory.post_hook], telemetry=False)

    team(ScriptedModel()).run("The greenhouse heater is a Zephyrion 4000", user_id="ann")
    ann = mem_store.scoped({"user": "ann"})
    assert {"context", "outcome"} <= {e.type.value for e in _episodes(ann)}
    assert ann.status().total_wraps == 1  # through the team's model
    scripted = ScriptedModel()
    team(scripted).run("Which greenhouse heater do we have?", user_id="ann")
    assert "Zephyrion" in scripted.inputs[0]
    refused = ScriptedModel()
    assert team(refused).run("Hello", user_id=" ").status == RunStatus.error
    assert refused.inputs == []
