"""CAMEL-specific behaviour: the AgentMemory seam and the WorkforceCallback on real runs."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from pathlib import Path
from typing import Any

import pytest
from camel.agents import ChatAgent
from camel.memories import ChatHistoryMemory
from camel.models.stub_model import StubModel
from camel.societies.workforce import Workforce
from camel.societies.workforce.workforce import WorkforceMode
from camel.tasks import Task
from camel.types import ModelType
from camel_scripted import LOOKUP, ScriptedModel, _completion

from anneal_memory import Store
from anneal_memory.adapters.camel import (
    MEMORY_MARK,
    AnnealAgentMemory,
    AnnealKeyValueStorage,
    AnnealWorkforceCallback,
)
from anneal_memory.errors import ValidationError
from anneal_memory.testing import is_wrap_prompt, scripted_compress


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "memory.db", project_name="CamelTest")
    yield s
    s.close()


def _agent(memory: AnnealAgentMemory, model: ScriptedModel) -> ChatAgent:
    return ChatAgent("You are a careful gardener.", model=model, memory=memory, tools=[LOOKUP])


def test_construction_and_reset_clear_the_window_not_the_store(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    model = ScriptedModel()
    memory = AnnealAgentMemory(store, model=model)
    agent = _agent(memory, model)  # ChatAgent calls memory.clear() here
    agent.step("Note the shed key is under the pot")
    agent.reset()  # and here
    assert store.status().total_episodes == 3
    assert len(memory.inner.retrieve()) == 1  # only the system message is left in the window


def test_memory_record_sits_before_the_request_and_is_not_kept(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    model = ScriptedModel()
    memory = AnnealAgentMemory(store, model=model)
    _agent(memory, model).step("Which greenhouse heater do we have?")
    messages, _ = memory.get_context()
    contents = [m["content"] for m in messages]
    index = next(i for i, c in enumerate(contents) if "Zephyrion" in str(c))
    assert messages[index]["role"] == "user"
    assert contents[index + 1] == "Which greenhouse heater do we have?"
    stored = memory.inner.retrieve()
    assert not any(r.memory_record.extra_info.get(MEMORY_MARK) for r in stored)
    requests = [e for e in store.recall(limit=100).episodes if e.type.value == "context"]
    assert [e.content for e in requests] == ["Which greenhouse heater do we have?"]


def test_tool_calls_results_and_answer_recorded(store: Store) -> None:
    model = ScriptedModel(call_tool=True, answer="The pump is fine.")
    memory = AnnealAgentMemory(store, model=model, record_tool_calls=True)
    response = _agent(memory, model).step("Check the pump")
    assert response.info["tool_calls"][0].tool_name == "lookup"
    episodes = store.recall(limit=100).episodes
    tool = [e for e in episodes if e.trust == "tool"]
    assert len(tool) == 1 and "42 psi" in tool[0].content
    assert any("lookup" in e.content for e in episodes if e.type.value == "decision")
    assert [e.content for e in episodes if e.type.value == "outcome"] == ["The pump is fine."]


def test_astep_records_and_recalls(store: Store) -> None:
    store.record("The greenhouse heater is a Zephyrion 4000", "observation")
    model = ScriptedModel()
    memory = AnnealAgentMemory(store, model=model)
    asyncio.run(_agent(memory, model).astep("Which greenhouse heater do we have?"))
    assert any("Zephyrion" in text for text in model.inputs)
    assert any(e.type.value == "outcome" for e in store.recall(limit=100).episodes)


def test_search_and_delete(store: Store) -> None:
    memory = AnnealAgentMemory(store, model=ScriptedModel())
    kept = store.record("The irrigation pump runs at 42 psi", "observation")
    found = memory.search("irrigation pump")
    assert [s.id for s in found] == [kept.id]
    assert memory.delete(kept.id) is True and memory.delete(kept.id) is False
    assert memory.search("irrigation pump") == []


def test_refused_wrap_keeps_episodes(store: Store) -> None:
    model = ScriptedModel(fail_wrap=True, answer="Prune in March.")
    memory = AnnealAgentMemory(store, model=model, wrap_on_end=True)
    _agent(memory, model).step("Decide when to prune the roses")
    assert memory.session.last_wrap is not None and memory.session.last_wrap.status != "saved"
    assert store.load_continuity() is None
    assert memory.wrap(compress=scripted_compress).status == "saved"
    assert store.status().total_wraps == 1


def test_custom_inner_memory_and_failure_logging(store: Store, caplog, monkeypatch) -> None:
    model = ScriptedModel()
    creator = AnnealAgentMemory(store, model=model).get_context_creator()
    memory = AnnealAgentMemory(store, inner=ChatHistoryMemory(creator, window_size=4))

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("memory exploded")

    monkeypatch.setattr(memory.session, "record_user_input", boom)
    monkeypatch.setattr(memory.session, "memory_block", boom)
    with caplog.at_level(logging.WARNING, logger="anneal_memory.adapters.camel"):
        response = _agent(memory, model).step("Go on")
    assert response.msgs[0].content == "Final answer: done."
    messages = [r.getMessage() for r in caplog.records]
    assert any("_record failed: memory exploded" in m for m in messages)
    assert any("_with_memory failed: memory exploded" in m for m in messages)


def test_configuration_errors(store: Store) -> None:
    with pytest.raises(ValidationError, match="working window"):
        AnnealAgentMemory(store)
    with pytest.raises(ValidationError, match="nickname"):
        AnnealAgentMemory(store, model=ScriptedModel(), namespace={"nickname": "x"})
    with pytest.raises(ValidationError, match="compress"):
        AnnealWorkforceCallback(store, compress="not callable")
    with pytest.raises(ValidationError, match="fixed namespace"):
        AnnealKeyValueStorage(store, namespace=lambda ctx: {"user": "x"})


def test_agents_and_workforce_share_one_session_over_a_path(tmp_path) -> None:
    model = ScriptedModel()
    memory = AnnealAgentMemory(str(tmp_path / "owned.db"), model=model)
    callback = AnnealWorkforceCallback(memory.session)
    assert memory.session.owns_store and callback.store is memory.store
    _agent(memory, model).step("Keep the seed order list")
    assert "Keep the seed order list" in [e.content for e in memory.store.recall(limit=10).episodes]
    memory.close()


class Responder(StubModel):
    """Prompt-keyed Workforce model: assigns task 1 to the first worker, then reports success."""

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__(model_type=ModelType.STUB)
        self.fail = fail

    def _reply(self, messages: list[dict[str, Any]]) -> Any:
        text = "\n".join(str(m.get("content") or "") for m in messages)
        if is_wrap_prompt(str(messages[-1].get("content") or "")):
            return _completion(scripted_compress(str(messages[-1]["content"])))
        if "assignee_id" in text:
            worker = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text)[0]
            return _completion(json.dumps({"assignments": [
                {"task_id": "1", "assignee_id": worker, "dependencies": []}]}))
        return _completion(json.dumps({"content": "watered: 12 plants", "failed": False}))

    def _run(self, messages, response_format=None, tools=None):  # type: ignore[override]
        return self._reply(messages)

    async def _arun(self, messages, response_format=None, tools=None):  # type: ignore[override]
        return self._reply(messages)


def test_workforce_callback_records_tasks_and_wraps(store: Store) -> None:
    callback = AnnealWorkforceCallback(store, wrap_on_end=True)  # the coordinator's model wraps
    workforce = Workforce("garden team", coordinator_agent=ChatAgent("coord", model=Responder()),
                          task_agent=ChatAgent("tasks", model=Responder()), callbacks=[callback],
                          mode=WorkforceMode.PIPELINE)
    workforce.add_single_agent_worker("gardener", worker=ChatAgent("You garden.", model=Responder()))
    workforce.set_pipeline_tasks([Task(content="Water the tomatoes", id="1")])
    result = workforce.process_task(Task(content="Care for the garden", id="root"))
    assert result.state.value == "DONE"
    episodes = store.recall(limit=100).episodes
    assert [e.content for e in episodes if e.type.value == "context"] == ["Care for the garden"]
    assert [e.content for e in episodes if e.type.value == "outcome"] == ["watered: 12 plants"]
    assert callback.session_of().last_wrap is not None and callback.session_of().last_wrap.saved
    assert "## State" in (store.load_continuity() or "")


# --- identity, the storage seam -----------------------------------------------------------

def test_agent_id_names_whose_memory_it_is(store: Store) -> None:
    def step(agent_id: str | None, text: str) -> ScriptedModel:
        model = ScriptedModel()
        _agent_with_id(AnnealAgentMemory(store, model=model), model, agent_id).step(text)
        return model

    step("alice-helper", "My locker code is 4417 Quasar")
    step("bob-helper", "My locker code is 9902 Nebula")
    alice, bob = step("alice-helper", "What is my code?"), step("bob-helper", "What is my code?")
    assert any("Quasar" in t for t in alice.inputs) and not any("Nebula" in t for t in alice.inputs)
    assert any("Nebula" in t for t in bob.inputs) and not any("Quasar" in t for t in bob.inputs)
    assert store.scoped({"agent": "alice-helper"}).status().total_episodes == 4
    # an agent without an id of yours (CAMEL makes a random one) uses the store's memory
    step(None, "The shed key is under the blue pot")
    assert step(None, "Where is the shed key?").inputs and any(
        "blue pot" in t for t in step(None, "Where is the shed key again?").inputs)


def _agent_with_id(memory: AnnealAgentMemory, model: ScriptedModel, agent_id: str | None) -> ChatAgent:
    return ChatAgent("You are a careful gardener.", model=model, memory=memory, tools=[LOOKUP],
                     agent_id=agent_id)


def test_namespace_option_and_callable_of_the_agent_id(store: Store) -> None:
    model = ScriptedModel()
    _agent_with_id(AnnealAgentMemory(store, model=model, namespace={"user": "carol"}), model,
                   "ignored").step("Carol sows beans")
    assert store.scoped({"user": "carol"}).status().total_episodes == 2
    seen: list[str] = []

    def per_tenant(agent_id: str) -> dict:
        seen.append(agent_id)
        return {"tenant": "acme", "agent": agent_id}

    _agent_with_id(AnnealAgentMemory(store, model=model, namespace=per_tenant), model,
                   "dana").step("Dana sows peas")
    assert "dana" in seen
    assert store.scoped({"tenant": "acme", "agent": "dana"}).status().total_episodes == 2


def test_the_agents_own_model_writes_the_continuity(store: Store) -> None:
    model = ScriptedModel(answer="Prune in March.")
    creator = AnnealAgentMemory(store, model=model).get_context_creator()
    memory = AnnealAgentMemory(store, context_creator=creator, wrap_on_end=True)  # no model=
    _agent_with_id(memory, model, "erin").step("Decide when to prune the roses")
    assert memory.scope().last_wrap is not None and memory.scope().last_wrap.saved
    assert "## State" in (store.scoped({"agent": "erin"}).load_continuity() or "")


def test_key_value_storage_behaves_as_camels_own(store: Store) -> None:
    from camel.memories.context_creators.score_based import ScoreBasedContextCreator
    from camel.storages.key_value_storages import InMemoryKeyValueStorage

    model = ScriptedModel()
    ours = AnnealKeyValueStorage(store, namespace={"user": "alice"})
    reference = InMemoryKeyValueStorage()
    for storage in (ours, reference):
        history = ChatHistoryMemory(ScoreBasedContextCreator(model.token_counter, 4096),
                                    storage=storage)
        ChatAgent("You are a careful gardener.", model=model, memory=history).step(
            "Note the shed key is under the pot")
    mine, theirs = ours.load(), reference.load()
    assert [r["message"]["content"] for r in mine] == [r["message"]["content"] for r in theirs]
    assert [r["role_at_backend"] for r in mine] == [r["role_at_backend"] for r in theirs]
    assert AnnealKeyValueStorage(store, namespace={"user": "bob"}).load() == []
    reopened = AnnealKeyValueStorage(store, namespace={"user": "alice"})  # durable
    assert [r["uuid"] for r in reopened.load()] == [r["uuid"] for r in mine]
    reopened.clear()
    assert ours.load() == [] and store.status().total_episodes == 0



@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_key_value_storage_keeps_non_finite_values_as_camels_json_storage(
        store: Store, tmp_path: Path, value: float) -> None:
    """Records holding NaN / an infinity (a tool's result in a message's meta) are kept
    and loaded back as CAMEL's own JsonStorage keeps them (the store's JSON refused them)."""
    from camel.storages.key_value_storages import JsonStorage
    from camel.types import OpenAIBackendRole

    records = [{"role_at_backend": OpenAIBackendRole.USER, "uuid": "u1",
                "message": {"content": "measure it", "meta_dict": {"reading": value}}},
               {"role_at_backend": OpenAIBackendRole.ASSISTANT, "uuid": "u2",
                "message": {"content": "done", "meta_dict": None}}]
    ours = AnnealKeyValueStorage(store, namespace={"user": "alice"})
    reference = JsonStorage(tmp_path / "reference.json")
    for storage in (ours, reference):
        storage.save(records)
    mine, theirs = ours.load(), reference.load()
    assert [(r["uuid"], r["role_at_backend"]) for r in mine] == [
        (r["uuid"], r["role_at_backend"]) for r in theirs]
    for got in (mine[0]["message"]["meta_dict"]["reading"],
                theirs[0]["message"]["meta_dict"]["reading"]):
        assert math.isnan(got) if math.isnan(value) else got == value
