"""``AnnealCrewMemory`` and ``AnnealStorage``: CrewAI's Memory interface, answered by the store."""

from __future__ import annotations

import asyncio

import pytest
from crew_scripted import AnnealEventListener, run_crew, scripted_llm
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryRecord

from anneal_memory import Store
from anneal_memory.adapters.crewai import AnnealCrewMemory, AnnealStorage
from anneal_memory.errors import ValidationError
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def _memory(store: Store, **kwargs) -> AnnealCrewMemory:
    return AnnealCrewMemory(store, llm=scripted_llm(), **kwargs)


def test_storage_is_a_crewai_backend(mem_store: Store) -> None:
    assert isinstance(AnnealStorage(mem_store), StorageBackend)
    assert isinstance(_memory(mem_store)._storage, AnnealStorage)


def test_storage_text_search_answers_the_matches_only(mem_store: Store) -> None:
    storage = AnnealStorage(mem_store)
    storage.save([MemoryRecord(content="Tomatoes need deep watering"),
                  MemoryRecord(content="Roses are pruned in March")])
    # recorded right after the match, the rose record is no hit for an item store
    assert [r.content for r, _ in storage.search("watering tomatoes")] == [
        "Tomatoes need deep watering"]
    assert asyncio.run(storage.asearch("pruned roses"))[0][0].content == "Roses are pruned in March"


def test_remember_recall_list_forget(mem_store: Store) -> None:
    memory = _memory(mem_store)
    first = memory.remember("Tomatoes need deep watering", scope="garden/veg",
                            categories=["watering"])
    memory.remember("Roses are pruned in March", scope="garden/flowers", categories=["pruning"])
    assert first is not None and first.scope == "/garden/veg"
    matches = memory.recall("How should tomatoes be watered?")
    assert any("deep watering" in m.record.content for m in matches)
    assert [r.content for r in memory.list_records(scope="/garden/veg")] == [
        "Tomatoes need deep watering"]
    assert memory.list_scopes("/garden") == ["/garden/flowers", "/garden/veg"]
    assert memory.list_categories() == {"watering": 1, "pruning": 1}
    assert memory.info("/garden").record_count == 2
    assert "/garden/veg (1 records)" in memory.tree("/garden")
    assert memory.forget(scope="/garden/flowers") == 1
    assert [r.content for r in memory.list_records()] == ["Tomatoes need deep watering"]
    assert not any("Roses" in e.content for e in mem_store.recall(limit=100).episodes)


def test_update_keeps_the_record_id(mem_store: Store) -> None:
    memory = _memory(mem_store)
    record = memory.remember("Pump pressure is 40 psi", scope="pump")
    updated = memory.update(record.id, content="Pump pressure is 42 psi")
    assert updated.id == record.id
    assert memory._storage.get_record(record.id).content == "Pump pressure is 42 psi"
    assert [r.content for r in memory.list_records()] == ["Pump pressure is 42 psi"]


def test_reset_touches_only_crewai_records(mem_store: Store) -> None:
    mem_store.record("An episode from elsewhere", "observation")
    memory = _memory(mem_store)
    memory.remember_many(["one fact", "another fact"], scope="facts")
    memory.reset()
    assert memory.list_records() == []
    assert [e.content for e in mem_store.recall(limit=100).episodes] == [
        "An episode from elsewhere"]


def test_recall_puts_continuity_first_and_labels_relayed(mem_store: Store) -> None:
    memory = _memory(mem_store)
    memory.session.record_tool_output("lookup", "the valve is brass")
    memory.session.record_decision("Decide to replace the valve")
    assert memory.wrap(scripted_compress).status == "saved"
    mem_store.record("The valve leaks at night", "observation", trust="tool")
    matches = memory.recall("valve")
    assert matches[0].match_reasons == ["continuity"] and "## State" in matches[0].record.content
    relayed = [m for m in matches if "leaks" in m.record.content]
    assert relayed and "[tool: recorded from tool output" in relayed[0].record.content
    kinds = ["recorded from tool output" in m.record.content for m in matches[1:]]
    assert kinds == sorted(kinds), "relayed items come last"


def test_recall_leaves_out_the_tasks_own_request(mem_store: Store) -> None:
    memory = _memory(mem_store)
    memory.session.record_user_input("Plan the valve replacement")
    memory.session.record_decision("The valve replacement is planned for May")
    contents = [m.record.content for m in memory.recall("Plan the valve replacement")]
    assert any("planned for May" in c for c in contents)
    assert not any(c.endswith("Plan the valve replacement") for c in contents)


def test_async_variants(mem_store: Store) -> None:
    memory = _memory(mem_store)

    async def scenario() -> list:
        await memory.aremember("Basil likes sun", scope="herbs")
        await memory.aremember_many(["Mint spreads fast"], scope="herbs")
        return await memory.arecall("basil sun")

    matches = asyncio.run(scenario())
    assert any("Basil" in m.record.content for m in matches)
    assert len(memory.list_records(scope="/herbs")) == 2


def test_read_only_memory_does_not_record(mem_store: Store) -> None:
    memory = _memory(mem_store, read_only=True)
    assert memory.remember("nothing") is None
    assert mem_store.recall(limit=10).episodes == []


def test_wrap_defaults_to_the_memory_llm(mem_store: Store) -> None:
    llm = scripted_llm()
    memory = AnnealCrewMemory(mem_store, llm=llm)  # wrap_on_end defaults to False
    run_crew(memory, llm, "Decide to mulch the beds")
    assert mem_store.load_continuity() is None
    assert memory.wrap().status == "saved"
    assert any(is_wrap_prompt(text) for text in llm.inputs)


def test_failed_wrap_keeps_episodes(mem_store: Store) -> None:
    def broken(prompt: str) -> str:
        raise RuntimeError("compressor offline")

    llm = scripted_llm()
    memory = AnnealCrewMemory(mem_store, llm=llm, compress=broken, wrap_on_end=True)
    output = run_crew(memory, llm, "Decide to fertilise in spring")
    assert output.raw == "Done: noted."
    assert mem_store.load_continuity() is None
    assert any("fertilise" in e.content for e in mem_store.recall(limit=100).episodes)
    assert memory.wrap(scripted_compress).status == "saved"


def test_listener_records_tool_and_task_then_unregisters(mem_store: Store) -> None:
    llm = scripted_llm(call_tool=True)
    memory = AnnealCrewMemory(mem_store, llm=llm)
    listener = AnnealEventListener(memory.session)
    run_crew(memory, llm, "Check the pump pressure")
    listener.close()
    episodes = mem_store.recall(limit=100).episodes
    assert any(e.trust == "tool" and "toolresult" in e.content for e in episodes)
    assert any(e.type.value == "context" and e.content == "Check the pump pressure"
               for e in episodes)
    run_crew(AnnealCrewMemory(mem_store, llm=llm, read_only=True), llm, "Another request here")
    after = mem_store.recall(limit=100).episodes
    assert not any(e.content == "Another request here" for e in after), "listener still active"


def test_configuration_errors_raise_at_construction(mem_store: Store) -> None:
    with pytest.raises(ValidationError):
        AnnealEventListener(mem_store)  # type: ignore[arg-type]


def test_store_path_opens_a_store_the_memory_owns(tmp_path) -> None:
    memory = AnnealCrewMemory(str(tmp_path / "owned.db"), llm=scripted_llm())
    memory.remember("Keep the seed order list", scope="garden")
    assert memory.session.owns_store
    assert [r.content for r in memory.list_records()] == ["Keep the seed order list"]
    memory.session.close()
