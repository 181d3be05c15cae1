"""``AnnealCrewMemory`` and ``AnnealStorage``: CrewAI's Memory interface, answered by the store."""

from __future__ import annotations

import asyncio
import math

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


def test_listener_records_tools_then_unregisters(mem_store: Store) -> None:
    llm = scripted_llm(call_tool=True)
    memory = AnnealCrewMemory(mem_store, llm=llm)
    listener = AnnealEventListener(memory)
    run_crew(memory, llm, "Check the pump pressure")
    listener.close()
    episodes = mem_store.recall(limit=100).episodes
    assert any(e.trust == "tool" and "toolresult" in e.content for e in episodes)
    assert [e.content for e in episodes if e.type.value == "context"] == [
        "Check the pump pressure"]  # the memory recorded it, once
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
    memory.close()


# ---------------------------------------------------------------------- the defects
def _memories_section(prompt: str) -> str:
    """The part of a task prompt CrewAI filled from memory."""
    if "Relevant memories:" not in prompt:
        return ""
    return prompt.split("Relevant memories:", 1)[1].split("IMPORTANT", 1)[0]


def test_a_task_is_never_recalled_into_its_own_prompt(mem_store: Store) -> None:
    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    listener = AnnealEventListener(memory, record_tasks=False)
    try:
        for request in ("Check the compost heap temperature", "Check the compost bin lid",
                        "Check the compost moisture"):
            llm = scripted_llm()
            run_crew(memory, llm, request)
            assert request not in _memories_section(llm.inputs[0]), llm.inputs[0]
    finally:
        listener.close()
    # ...and each earlier request is memory for the later ones
    assert "compost heap temperature" in _memories_section(llm.inputs[0])


def test_each_task_result_is_stored_once(mem_store: Store) -> None:
    llm = scripted_llm(call_tool=True)
    memory = AnnealCrewMemory(mem_store, llm=llm, wrap_on_end=False)
    listener = AnnealEventListener(memory)
    try:
        run_crew(memory, llm, "Look up the pump pressure")
    finally:
        listener.close()
    episodes = mem_store.recall(limit=100).episodes
    outcomes = [e for e in episodes if e.type.value == "outcome"]
    assert [e.content for e in outcomes] == ["Done: noted."]
    assert len([e for e in episodes if e.type.value == "context"]) == 1
    assert [r.content for r in memory.list_records()] == ["Done: noted."]


def test_scope_views_are_separate_memories(mem_store: Store) -> None:
    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    alice, bob = memory.scope("/user/alice"), memory.scope("/user/bob")
    alice.remember("alice's locker code is 1234")
    bob.remember("bob's locker code is 9999")
    assert [m.record.content for m in bob.recall("locker code")][-1].endswith(
        "bob's locker code is 9999")
    assert not any("1234" in m.record.content for m in bob.recall("locker code"))
    assert [r.content for r in bob.list_records()] == ["bob's locker code is 9999"]
    assert memory.info("/user").child_scopes == ["/user/alice", "/user/bob"]
    # each user's episodes are their namespace's
    assert [e.content for e in mem_store.scoped({"user": "bob"}).recall().episodes] == [
        "bob's locker code is 9999"]
    # the whole tree (the root) still sees both, as CrewAI's scope "/" does
    assert len([m for m in memory.recall("locker code") if "code is" in m.record.content]) == 2
    # "/user/bob" holds "/user/bob/notes", never "/user/bobby"
    memory.remember("bobby's locker code is 5555", scope="/user/bobby")
    memory.remember("bob's notes say 42", scope="/user/bob/notes")
    assert {r.content for r in bob.list_records()} == {"bob's locker code is 9999",
                                                      "bob's notes say 42"}


def test_recall_honours_categories_source_and_private(mem_store: Store) -> None:
    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    memory.remember("the hose leaks (ops)", scope="/team", categories=["ops"])
    memory.remember("the hose is green (look)", scope="/team", categories=["looks"])
    memory.remember("the hose key is 777", scope="/team", private=True, source="keeper")
    texts = lambda **kw: [m.record.content for m in memory.recall("hose", **kw)]  # noqa: E731
    assert [t for t in texts(categories=["ops"]) if "hose" in t][-1].endswith("(ops)")
    assert not any("777" in t for t in texts())
    assert not any("777" in t for t in texts(source="someone-else"))
    assert any("777" in t for t in texts(source="keeper"))
    assert any("777" in t for t in texts(include_private=True))
    assert len([t for t in texts(categories=[]) if "hose" in t]) == 2  # [] is no filter


def test_storage_normalises_scope_prefixes_as_crewai_does(mem_store: Store) -> None:
    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    memory.remember("app fact", scope="app")
    memory.remember("tenant fact", scope="tenant1/notes/")
    storage = memory._storage
    assert [r.content for r in storage.list_records("app")] == ["app fact"]
    assert [r.content for r in storage.list_records("tenant1/")] == ["tenant fact"]
    assert storage.count("/tenant1") == 1 and storage.count("") == 2
    assert storage.list_scopes("tenant1") == ["/tenant1/notes"]
    assert [r.content for r, _ in storage.search([0.1], scope_prefix="app", categories=[],
                                                 metadata_filter={})] == ["app fact"]
    assert storage.delete(scope_prefix="tenant1/", categories=[]) == 1


def test_storage_reads_only_the_scopes_items(mem_store: Store, monkeypatch) -> None:
    from anneal_memory.items import ItemCollection

    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    for n in range(30):
        memory.remember(f"note {n}", scope=f"/user/u{n}")
    calls: list[dict] = []
    real = ItemCollection.list

    def spy(self, **kwargs):
        rows = real(self, **kwargs)
        calls.append({"prefix": kwargs.get("prefix"), "rows": len(rows)})
        return rows

    monkeypatch.setattr(ItemCollection, "list", spy)
    assert [r.content for r in memory.list_records(scope="/user/u7")] == ["note 7"]
    assert memory.info("/user/u7").record_count == 1
    assert calls and all(c["prefix"] == "/user/u7/" and c["rows"] <= 1 for c in calls)


def test_the_anonymous_policy_reaches_the_adapter(tmp_path) -> None:
    from anneal_memory import Store
    from anneal_memory.adapters.crewai import AnnealCrewMemory as _Memory
    from anneal_memory.errors import ValidationError as _Invalid

    with Store(tmp_path / "anon.db") as s:
        assert _Memory(s, anonymous="refuse").anonymous == "refuse"
        assert _Memory(s).anonymous == "shared"
        with pytest.raises(_Invalid, match="anonymous"):
            _Memory(s, anonymous="everyone")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
def test_record_metadata_keeps_non_finite_values_as_crewais_lancedb_storage(
        mem_store: Store, tmp_path, value: float) -> None:
    """A record whose metadata holds NaN / an infinity (a tool's reading) is kept and read
    back as CrewAI's own LanceDB storage keeps it (ours wrote it as null: pydantic's JSON
    mode)."""
    from crewai.memory.storage.lancedb_storage import LanceDBStorage

    record = MemoryRecord(content="The pump reading was taken", metadata={"reading": value},
                          embedding=[0.1, 0.2, 0.3])
    for storage in (AnnealStorage(mem_store), LanceDBStorage(path=str(tmp_path / "lance"))):
        storage.save([record])
        got = storage.get_record(record.id)
        assert got is not None and got.content == record.content
        restored = got.metadata["reading"]
        assert isinstance(restored, float), (storage, restored)
        assert math.isnan(restored) if math.isnan(value) else restored == value
