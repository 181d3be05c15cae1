"""AnnealStore(index=...) beyond LangGraph's own tests: LangChain's DeterministicFakeEmbedding,
async embedders, vectors kept in the database and removed with their item, one memory
namespace never ranking another's items, filters before ranking."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.memory import InMemoryStore

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealStore
from anneal_memory.errors import ValidationError

DOCS = [("a", {"text": "the quarterly report is due friday", "team": "red"}),
        ("b", {"text": "lunch menu for the offsite", "team": "red"}),
        ("c", {"text": "quarterly report draft", "team": "blue"}),
        ("d", {"text": "parking lot is closed", "team": "blue"})]


def both(tmp_path: Any, **index: Any) -> tuple[InMemoryStore, AnnealStore, Store]:
    store = Store(tmp_path / "m.db")
    return InMemoryStore(index=index), AnnealStore(store, index=index), store


def test_deterministic_fake_embedding_ranks_as_in_memory_store(tmp_path: Any) -> None:
    emb = DeterministicFakeEmbedding(size=64)
    ref, ours, store = both(tmp_path, dims=64, embed=emb, fields=["text"])
    for s in (ref, ours):
        for key, value in DOCS:
            s.put(("docs",), key, value)
    for query, flt in (("quarterly report draft", None), ("lunch menu for the offsite",
                                                          {"team": "red"})):
        want = [(r.key, r.score) for r in ref.search(("docs",), query=query, filter=flt)]
        got = [(r.key, r.score) for r in ours.search(("docs",), query=query, filter=flt)]
        assert [k for k, _ in got] == [k for k, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
        assert got[0][1] == pytest.approx(1.0, abs=1e-5)  # the exact text: cosine 1
    store.close()


def test_an_async_embed_function_and_abatch(tmp_path: Any) -> None:
    emb = DeterministicFakeEmbedding(size=32)

    async def aembed(texts: list[str]) -> list[list[float]]:
        return emb.embed_documents(texts)

    with Store(tmp_path / "m.db") as store:
        lg = AnnealStore(store, index={"dims": 32, "embed": aembed, "fields": ["text"]})

        async def main() -> list[Any]:
            for key, value in DOCS:
                await lg.aput(("docs",), key, value)
            return await lg.asearch(("docs",), query="parking lot is closed", limit=1)

        hits = asyncio.run(main())
        assert [h.key for h in hits] == ["d"] and hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_vectors_live_in_the_database_and_go_with_their_item(tmp_path: Any) -> None:
    emb = DeterministicFakeEmbedding(size=16)
    with Store(tmp_path / "m.db") as store:
        lg = AnnealStore(store, index={"dims": 16, "embed": emb})
        lg.put(("docs",), "a", {"text": "hello"})
        lg.put(("docs",), "b", {"text": "world"}, index=False)
        assert [i.key for i in store.items("langgraph.store.vectors").list()] == [
            "docs.\x1fa"]
    with Store(tmp_path / "m.db") as store:  # a new process: nothing to embed again
        lg = AnnealStore(store, index={"dims": 16, "embed": emb})
        res = lg.search(("docs",), query="hello")
        assert [(r.key, r.score is not None) for r in res] == [("a", True), ("b", False)]
        lg.put(("docs",), "a", {"text": "hello"}, index=False)  # not indexed now: no vector
        assert store.items("langgraph.store.vectors").list() == []
        lg.put(("docs",), "a", {"text": "hello"})
        lg.delete(("docs",), "a")
        assert store.items("langgraph.store.vectors").list() == []


def test_one_memory_namespace_never_ranks_anothers_items(tmp_path: Any) -> None:
    emb = DeterministicFakeEmbedding(size=16)
    with Store(tmp_path / "m.db") as store:
        index = {"dims": 16, "embed": emb, "fields": ["text"]}
        alice = AnnealStore(store, namespace={"user": "alice"}, index=index)
        bob = AnnealStore(store, namespace={"user": "bob"}, index=index)
        alice.put(("notes",), "1", {"text": "the locker code is 4411"})
        bob.put(("notes",), "2", {"text": "the locker code is 4411"})
        assert [r.key for r in alice.search(("notes",), query="the locker code is 4411")] == ["1"]
        assert [r.key for r in bob.search(("notes",), query="the locker code is 4411")] == ["2"]


def test_filters_apply_before_ranking_and_paging(tmp_path: Any) -> None:
    emb = DeterministicFakeEmbedding(size=16)
    with Store(tmp_path / "m.db") as store:
        lg = AnnealStore(store, index={"dims": 16, "embed": emb, "fields": ["text"]})
        for i in range(450):  # past one SQL page of the filtered listing
            lg.put(("docs",), f"k{i}", {"text": f"note {i}", "team": "red" if i % 3 else "blue"})
        res = lg.search(("docs",), query="note 300", filter={"team": "blue"}, limit=5)
        assert res[0].key == "k300" and all(r.value["team"] == "blue" for r in res)
        page2 = lg.search(("docs",), query="note 300", filter={"team": "blue"}, limit=5,
                          offset=5)
        assert not {r.key for r in res} & {r.key for r in page2} and len(page2) == 5


def test_an_index_without_an_embedder_is_refused(tmp_path: Any) -> None:
    with Store(tmp_path / "m.db") as store:
        with pytest.raises(ValidationError, match="index needs an 'embed'"):
            AnnealStore(store, index={"dims": 8})
