"""``embed_model=``: a LlamaIndex ``BaseEmbedding`` makes the memory's recall by meaning too
(through the store's embedder seam), for the memory block, the retriever and the tool."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from li_scripted import Script, make_agent
from llama_index.core.embeddings import BaseEmbedding, MockEmbedding

from anneal_memory import Store
from anneal_memory.adapters.llamaindex import AnnealMemory, AnnealRetriever, memory_tool
from anneal_memory.errors import EmbedderError
from anneal_memory.session import MemorySession
from anneal_memory.testing import HashingEmbedder

NURSE = "I started as a nurse at the county hospital"
QUERY = "what does she do for a living"  # shares no word with NURSE


class ParaphraseEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model (deterministic, offline) that maps "living" and "nurse"
    to one word, so the query above and NURSE are near in meaning."""

    def _vec(self, text: str) -> list[float]:
        return HashingEmbedder(aliases={"living": "job", "nurse": "job"})([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vec(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vec(text)


def _fill(store: Store) -> None:
    store.scoped({"user": "alice"}).record(NURSE, "observation")
    store.scoped({"user": "alice"}).record("We went hiking in the mountains", "observation")
    store.scoped({"user": "bob"}).record("bob is a nurse too", "observation")


def test_a_mock_embedding_is_the_stores_embedder(tmp_path: Path) -> None:
    memory = AnnealMemory.from_store(tmp_path / "m.db", session_id="alice",
                                     embed_model=MockEmbedding(embed_dim=8))
    store = memory.scope().store
    assert store.embedder is not None and "MockEmbedding" in store.embedder.model
    memory.scope().record_observation("The pump runs at 3 bar")
    res = store.recall(keyword="pump pressure")
    assert res.semantic.used and res.semantic.dims == 8
    memory.close()


def test_the_block_recalls_by_meaning(tmp_path: Path) -> None:
    memory = AnnealMemory.from_store(tmp_path / "m.db", session_id="alice",
                                     embed_model=ParaphraseEmbedding())
    _fill(memory.scope().store.parent)  # alice's view: its parent is the Store
    script = Script("A nurse.")
    asyncio.run(memory.arun(make_agent(script), QUERY))
    system = script.inputs[0].split(QUERY)[0]
    assert "county hospital" in system
    assert "bob is a nurse" not in system  # another user's memory is never recalled
    memory.close()


def test_without_embed_model_the_same_query_finds_nothing(store_path: Path) -> None:
    memory = AnnealMemory.from_store(store_path, session_id="alice")
    _fill(memory.scope().store.parent)
    script = Script("I do not know.")
    asyncio.run(memory.arun(make_agent(script), QUERY))
    assert "county hospital" not in script.inputs[0]
    memory.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def test_retriever_and_tool_take_embed_model(tmp_path: Path) -> None:
    embed = ParaphraseEmbedding()
    retriever = AnnealRetriever(tmp_path / "m.db", namespace={"user": "alice"},
                                embed_model=embed)
    _fill(retriever.session.store.parent)
    nodes = retriever.retrieve(QUERY)
    assert nodes[0].node.get_content().endswith(NURSE)
    assert all("bob" not in n.node.get_content() for n in nodes)
    with Store(tmp_path / "own.db", embedder=embed) as store:
        _fill(store)
        tool = memory_tool(store, namespace={"user": "alice"}, embed_model=embed)
        assert NURSE in str(tool.call(query=QUERY).content)
        memory = AnnealMemory.from_store(store, session_id="alice", embed_model=embed)
        assert AnnealRetriever(memory, embed_model=embed).retrieve(QUERY)[0].node.get_content(
            ).endswith(NURSE)
        assert NURSE in str(asyncio.run(memory_tool(memory).acall(query=QUERY)).content)


def test_an_open_store_must_already_embed_with_it(tmp_path: Path) -> None:
    embed = ParaphraseEmbedding()
    with Store(tmp_path / "plain.db") as plain:
        with pytest.raises(EmbedderError, match="has no embedder"):
            AnnealMemory.from_store(plain, embed_model=embed)
        with pytest.raises(EmbedderError, match="has no embedder"):
            AnnealRetriever(plain, embed_model=embed)
        with pytest.raises(EmbedderError, match="has no embedder"):
            AnnealRetriever(AnnealMemory.from_store(plain), embed_model=embed)
    with Store(tmp_path / "own.db", embedder=embed) as own:
        with pytest.raises(EmbedderError, match="embeds with"):
            AnnealMemory.from_store(MemorySession(own), embed_model=MockEmbedding(embed_dim=8))
        assert AnnealMemory.from_store(MemorySession(own), embed_model=embed).scope().store is own
