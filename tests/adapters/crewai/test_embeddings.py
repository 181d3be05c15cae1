"""``AnnealStorage`` with embeddings: CrewAI's records keep their vectors, and a query
embedding ranks by cosine, filters first, as CrewAI's own storage contract has it."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from crew_scripted import scripted_llm
from crewai.memory.storage.lancedb_storage import LanceDBStorage
from crewai.memory.types import MemoryRecord, compute_composite_score
from crewai.memory.unified_memory import Memory

from anneal_memory import Store
from anneal_memory.adapters.crewai import AnnealCrewMemory, AnnealStorage
from anneal_memory.testing import HashingEmbedder


def _rec(content: str, vec: list[float], **kw) -> MemoryRecord:
    return MemoryRecord(content=content, embedding=vec, **kw)


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.hypot(*a) * math.hypot(*b))


def test_the_records_embedding_comes_back(mem_store: Store) -> None:
    storage = AnnealStorage(mem_store)
    vec = [0.5, -0.25, 1.0, 0.125]
    record = _rec("Tomatoes need deep watering", vec, scope="/garden")
    storage.save([record])
    assert storage.get_record(record.id).embedding == vec
    assert storage.list_records("/garden")[0].embedding == vec
    assert storage.search([1.0, 0.0, 0.0, 0.0])[0][0].embedding == vec
    storage.save([MemoryRecord(content="no vector here")])
    assert storage.list_records()[0].embedding is None


def test_a_query_embedding_ranks_by_cosine(mem_store: Store) -> None:
    storage = AnnealStorage(mem_store)
    vecs = {"north": [1.0, 0.0, 0.0], "north-east": [1.0, 1.0, 0.0], "east": [0.0, 1.0, 0.0],
            "south": [-1.0, 0.0, 0.0]}
    storage.save([_rec(k, v) for k, v in vecs.items()])
    query = [1.0, 0.2, 0.0]
    got = storage.search(query)
    assert [r.content for r, _ in got] == ["north", "north-east", "east"]  # south: < 0
    for record, score in got:
        assert score == pytest.approx(_cos(query, vecs[record.content]), abs=1e-6)
    assert [r.content for r, _ in storage.search(query, min_score=0.5)] == ["north",
                                                                             "north-east"]
    assert [r.content for r, _ in storage.search(query, limit=1)] == ["north"]
    assert storage.search(query, min_score=-1.0)[-1][0].content == "south"


def test_cosine_without_numpy_gives_the_same_scores(mem_store: Store, monkeypatch) -> None:
    storage = AnnealStorage(mem_store)
    storage.save([_rec("a", [1.0, 2.0, 3.0]), _rec("b", [3.0, -1.0, 0.5])])
    with_numpy = storage.search([0.3, 0.1, 0.9])
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy fails
    without = storage.search([0.3, 0.1, 0.9])
    assert [r.content for r, _ in without] == [r.content for r, _ in with_numpy]
    assert [s for _, s in without] == pytest.approx([s for _, s in with_numpy])


def test_filters_apply_before_scoring_and_limit(mem_store: Store) -> None:
    storage = AnnealStorage(mem_store)
    # ten close records of another category, one far one of the asked category
    storage.save([_rec(f"close {i}", [1.0, 0.01 * i], categories=["other"],
                       metadata={"kind": "x"}) for i in range(10)])
    storage.save([_rec("far but asked for", [0.2, 1.0], categories=["asked"],
                       metadata={"kind": "y"})])
    assert [r.content for r, _ in storage.search([1.0, 0.0], categories=["asked"],
                                                 limit=1)] == ["far but asked for"]
    assert [r.content for r, _ in storage.search([1.0, 0.0], metadata_filter={"kind": "y"},
                                                 limit=1)] == ["far but asked for"]


def test_records_of_another_dimension_or_without_a_vector_score_zero(
        mem_store: Store) -> None:
    storage = AnnealStorage(mem_store)
    storage.save([MemoryRecord(content="no vector"), _rec("three dims", [1.0, 0.0, 0.0]),
                  _rec("two dims", [0.6, 0.8])])
    got = storage.search([1.0, 0.0])
    assert got[0][0].content == "two dims" and got[0][1] == pytest.approx(0.6)
    assert sorted((r.content, s) for r, s in got[1:]) == [("no vector", 0.0),
                                                          ("three dims", 0.0)]
    assert [r.content for r, _ in storage.search([1.0, 0.0], min_score=0.01)] == ["two dims"]
    # no vector given: the word ranking (or the listing) as before
    assert [r.content for r, _ in storage.search("vector")] == ["no vector"]
    assert len(storage.search([])) == 3


def test_one_users_vectors_never_rank_for_another(mem_store: Store) -> None:
    storage = AnnealStorage(mem_store)
    secret = [0.0, 0.0, 1.0]
    storage.save([_rec("alice's secret", secret, scope="/user/alice"),
                  _rec("bobby's note", secret, scope="/user/bobby"),
                  _rec("bob's note", [0.0, 1.0, 1.0], scope="/user/bob/notes")])
    storage.save([MemoryRecord(content="alice's unembedded note", scope="/user/alice")])
    got = storage.search(secret, scope_prefix="/user/bob", min_score=-1.0, limit=50)
    assert [r.content for r, _ in got] == ["bob's note"]
    assert {r.content for r, _ in storage.search(secret, scope_prefix="/user/alice")} == {
        "alice's secret", "alice's unembedded note"}
    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    bob = memory.scope("/user/bob")
    assert [r.content for r, _ in memory._storage.search(
        secret, scope_prefix=bob._root)] == ["bob's note"]


def _normalized(embedder: HashingEmbedder):
    def embed(texts: list[str]) -> list[list[float]]:
        out = []
        for vec in embedder(texts):
            norm = math.sqrt(sum(x * x for x in vec))
            out.append([x / norm for x in vec])
        return out
    return embed


FACTS = ["The pump in the greenhouse leaks at the valve",
         "Tomatoes need deep watering every morning",
         "The greenhouse valve was replaced in March",
         "Roses are pruned in early spring"]


def _crew_memory(storage, embedder) -> Memory:
    return Memory(storage=storage, embedder=embedder, llm=scripted_llm())


def test_crewai_memory_ranks_as_with_its_default_storage(mem_store: Store,
                                                           tmp_path: Path) -> None:
    """CrewAI's own Memory over AnnealStorage: remember embeds with CrewAI's embedder, the
    shallow recall's composite score (semantic + recency + importance) ranks the same
    records as over its default LanceDB storage."""
    embed = _normalized(HashingEmbedder(64))
    ours = _crew_memory(AnnealStorage(mem_store), embed)
    lance = _crew_memory(LanceDBStorage(path=tmp_path / "lance"), embed)
    for memory in (ours, lance):
        for i, fact in enumerate(FACTS):
            memory.remember(fact, scope="/garden", categories=["garden"],
                            importance=0.9 if i == 2 else 0.5)
    stored = ours.list_records()
    assert len(stored) == len(FACTS) and all(r.embedding for r in stored)
    query = "greenhouse valve"
    mine = ours.recall(query, scope="/garden", depth="shallow", limit=2)
    theirs = lance.recall(query, scope="/garden", depth="shallow", limit=2)
    assert [m.record.content for m in mine] == [m.record.content for m in theirs]
    assert mine[0].record.content == "The greenhouse valve was replaced in March"
    # CrewAI's deep recall flow (a short query: embedded as it is, no LLM analysis)
    deep = ours.recall(query, limit=2)
    assert [m.record.content for m in deep] == [m.record.content for m in lance.recall(
        query, limit=2)] == [m.record.content for m in mine]
    qvec = embed([query])[0]
    for match in mine:
        expected, reasons = compute_composite_score(
            match.record, _cos(qvec, match.record.embedding), ours._config)
        assert match.score == pytest.approx(expected, abs=1e-5)
        assert "semantic" in match.match_reasons


def test_importance_weighs_in_crewais_composite_score(mem_store: Store) -> None:
    embed = _normalized(HashingEmbedder(64))
    memory = _crew_memory(AnnealStorage(mem_store), embed)
    memory.remember("valve notes one", scope="/g", categories=[], importance=0.1)
    memory.remember("valve notes two", scope="/g", categories=[], importance=1.0)
    got = memory.recall("valve notes", scope="/g", depth="shallow")
    assert [m.record.content for m in got][0] == "valve notes two"


def test_update_with_new_content_drops_the_stale_vector(mem_store: Store) -> None:
    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    record = memory._storage.remember(_rec("old text", [1.0, 0.0], scope="/user/al/x"),
                                      episode_type="outcome", session=memory.session_for(
                                          "/user/al/x"))
    assert memory._storage.get_record(record.id).embedding == [1.0, 0.0]
    memory.update(record.id, importance=0.9)
    assert memory._storage.get_record(record.id).embedding == [1.0, 0.0]
    memory.update(record.id, content="new text")
    assert memory._storage.get_record(record.id).embedding is None
    assert memory._storage.count() == 1
    assert [(e.content, str(e.type)) for e in mem_store.scoped({"user": "al"}).recall(
        keyword="new text").episodes] == [("new text", "outcome")]


def test_a_field_only_update_keeps_the_record_and_its_episode(mem_store: Store) -> None:
    memory = AnnealCrewMemory(mem_store, llm=scripted_llm())
    record = memory.remember("Tomatoes need deep watering", scope="/user/al/garden")
    memory.update(record.id, importance=0.9, categories=["watering"])
    kept = memory._storage.get_record(record.id)
    assert kept is not None and kept.importance == 0.9 and kept.categories == ["watering"]
    found = [m.record for m in memory.recall("tomatoes watering", scope="/user/al",
                                             categories=["watering"])
             if "anneal recall" in m.match_reasons]
    assert [r.id for r in found] == [record.id]
    assert found[0].content.endswith("Tomatoes need deep watering")


def test_the_memorys_embedder_is_the_stores(tmp_path: Path) -> None:
    """AnnealCrewMemory(path, embedder=...): anneal's recall finds by meaning, per user."""
    embedder = HashingEmbedder(aliases={"living": "job", "nurse": "job"})
    memory = AnnealCrewMemory(tmp_path / "m.db", embedder=embedder, llm=scripted_llm())
    assert memory.session_for("/").store.embedder is not None
    memory.remember("I started as a nurse at the county hospital", scope="/user/bob")
    memory.remember("alice is a nurse as well", scope="/user/alice")
    found = [m.record.content for m in memory.recall("what does he do for a living",
                                                     scope="/user/bob")]
    assert len(found) == 1 and found[0].endswith("I started as a nurse at the county hospital")
    memory.close()


def test_a_crewai_provider_config_embedder_is_built(tmp_path: Path) -> None:
    from crewai.rag.embeddings.providers.custom.embedding_callable import (
        CustomEmbeddingFunction,
    )

    class Hashing(CustomEmbeddingFunction):
        def __call__(self, input):
            return HashingEmbedder(aliases={"living": "job", "nurse": "job"})(list(input))

    memory = AnnealCrewMemory(tmp_path / "m.db", llm=scripted_llm(), embedder={
        "provider": "custom", "config": {"embedding_callable": Hashing}})
    memory.remember("I started as a nurse at the county hospital", scope="/user/bob")
    assert memory.recall("what does he do for a living", scope="/user/bob")
    memory.close()


def test_an_embedder_for_a_store_without_one_is_refused(mem_store: Store) -> None:
    from anneal_memory.errors import EmbedderError

    with pytest.raises(EmbedderError, match="has no embedder"):
        AnnealCrewMemory(mem_store, embedder=HashingEmbedder(), llm=scripted_llm())
    AnnealCrewMemory(mem_store, llm=scripted_llm())  # without one: keyword recall, as before
