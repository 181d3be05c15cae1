"""AnnealMemoryStore: this memory as a plain Strands MemoryStore behind Strands' own
MemoryManager (its injection, its extraction, its search/add tools), one identity per
store instance."""

from __future__ import annotations

import asyncio

import pytest
from strands import Agent
from strands.memory import MemoryManager
from strands.memory.extraction.triggers import InvocationTrigger
from strands.memory.extraction.types import MemoryMessageFilter
from strands_scripted import ScriptedModel, lookup

from anneal_memory import Store, ValidationError
from anneal_memory.adapters.strands import AnnealMemoryStore


def _run(store: AnnealMemoryStore, text: str, **model: object) -> ScriptedModel:
    scripted = ScriptedModel(**model)  # type: ignore[arg-type]
    agent = Agent(model=scripted, tools=[lookup], callback_handler=None,
                  memory_manager=MemoryManager(stores=[store], add_tool_config=True))
    agent(text)  # the sync call flushes the manager's extraction before it returns
    return scripted


def test_extraction_records_the_turn_and_injection_recalls_it(mem_store: Store) -> None:
    alice = AnnealMemoryStore(mem_store, namespace={"user": "alice"})
    _run(alice, "Remember that the greenhouse heater is a Zephyrion 4000")
    mine = mem_store.scoped({"user": "alice"}).recall(limit=100).episodes
    assert {(e.type.value, e.content) for e in mine} >= {
        ("context", "Remember that the greenhouse heater is a Zephyrion 4000"),
        ("outcome", "Done: noted.")}
    again = _run(AnnealMemoryStore(mem_store, namespace={"user": "alice"}),
                 "Which greenhouse heater do we have?")
    assert "Zephyrion" in again.inputs[0] and '<entry source="anneal">' in again.inputs[0]
    bob = _run(AnnealMemoryStore(mem_store, namespace={"user": "bob"}),
               "Which greenhouse heater do we have?")
    assert "Zephyrion" not in bob.inputs[0]


def test_add_memory_tool_writes_an_observation(mem_store: Store) -> None:
    store = AnnealMemoryStore(mem_store, writable=True, extraction=False)
    _run(store, "Note the pump", call_tool=True, tool_name="add_memory",
         tool_input={"entries": ["The pump runs at 42 psi"]})
    assert [(e.type.value, e.content) for e in mem_store.recall(limit=10).episodes] == [
        ("observation", "The pump runs at 42 psi")]


def test_tool_results_kept_by_the_filter_are_tool_trust(mem_store: Store) -> None:
    store = AnnealMemoryStore(mem_store, extraction={
        "trigger": InvocationTrigger(), "filter": MemoryMessageFilter(exclude=[])})
    _run(store, "Check the pump pressure", call_tool=True)
    tool = [e for e in mem_store.recall(limit=100).episodes if e.trust == "tool"]
    assert tool and "toolresult" in tool[0].content and tool[0].metadata["tool"] == "lookup"


def test_search_and_add_answer_their_own_calls(mem_store: Store) -> None:
    store = AnnealMemoryStore(mem_store, namespace={"user": "cy"}, max_search_results=1)
    manager = MemoryManager(stores=[store])

    async def use() -> list:
        assert await store.add("Cy's plot is number 17") is not None
        assert await store.add("Cy's plot is number 17") is None  # once per session
        await store.add("Cy waters at dawn")
        return await manager.search("plot number")

    found = asyncio.run(use())
    assert len(found) == 1 and "number 17" in found[0].content
    assert found[0].store_name == "anneal"
    assert mem_store.scoped({"user": "dy"}).recall(limit=10).episodes == []


def test_a_store_has_one_identity(mem_store: Store) -> None:
    with pytest.raises(ValidationError, match="fixed per store"):
        AnnealMemoryStore(mem_store, namespace=lambda context: {"user": "cy"})
    with pytest.raises(ValidationError, match="namespace="):
        AnnealMemoryStore(mem_store, namespace={"user": "\u200b"})
    with pytest.raises(ValueError, match="writable"):  # Strands' own check of a store
        MemoryManager(stores=[AnnealMemoryStore(mem_store, writable=False,
                                                extraction={"trigger": InvocationTrigger()})])
