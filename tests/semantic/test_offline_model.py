"""The offline default embedder (anneal-memory[semantic]: WordLlama) for real: it loads
with the network refused, and hybrid recall finds by meaning what keyword recall misses."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import Store
from anneal_memory.cli.main import main
from anneal_memory.embedding import offline_embedder

MEMORIES = ["I started as a nurse at the county hospital last spring.",
            "We adopted a little beagle puppy from the shelter.",
            "I finally passed my driving test this morning.",
            "Our flight to Tokyo got cancelled because of the typhoon.",
            "We planted tomatoes, basil and peppers in the backyard."]
FILLER = ["That sounds like a lot of fun, tell me more!", "I love that idea.",
          "The weather has been nice lately.", "Did you watch the game last night?",
          "I'm reading a mystery novel right now."]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> None:
        raise OSError("network access refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def embedder() -> Any:
    return offline_embedder()


def test_it_loads_offline_and_embeds_256_dims(embedder: Any) -> None:
    vecs = embedder.embed_documents(["hello world", "a second text"])
    assert len(vecs) == 2 and embedder.dims == 256
    assert embedder.model == "wordllama-l2_supercat-256"


@pytest.mark.parametrize("query, memory", [
    ("What does she do for a living?", 0), ("Did they get a new dog?", 1),
    ("What vegetables are growing in their garden?", 4),
])
def test_hybrid_finds_a_paraphrase_keyword_recall_misses(tmp_path: Path, embedder: Any,
                                                         query: str, memory: int) -> None:
    with Store(tmp_path / "m.db", embedder=embedder) as s:
        ids = [s.record(t, "observation").id for t in MEMORIES + FILLER]
        keyword = [e.id for e in s.recall(keyword=query, limit=3, mode="keyword").episodes]
        assert ids[memory] not in keyword
        hybrid = s.recall(keyword=query, limit=3)
        assert hybrid.vectors_used and ids[memory] in [e.id for e in hybrid.episodes]


def test_the_cli_names_it(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "m.db"
    with Store(db) as s:
        for t in MEMORIES:
            s.record(t, "observation")
    assert main(["--db", str(db), "embed", "--embedder", "wordllama", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == len(MEMORIES)
    assert main(["--db", str(db), "search", "Is he licensed to operate a car?", "--semantic",
                 "--embedder", "wordllama", "--limit", "1", "--json"]) == 0
    assert "driving test" in json.loads(capsys.readouterr().out)["episodes"][0]["content"]


def test_the_offline_default_fuses_with_its_own_measured_keyword_weight(embedder: Any) -> None:
    from anneal_memory.embedding import OFFLINE_KEYWORD_WEIGHT

    # no k=10 weight beat keyword recall held out (bench/semantic.py): keyword order first
    assert embedder.keyword_weight == OFFLINE_KEYWORD_WEIGHT == float("inf")
    assert offline_embedder(keyword_weight=3.0).keyword_weight == 3.0
