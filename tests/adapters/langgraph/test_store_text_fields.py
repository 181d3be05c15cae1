"""``index`` keys as the store a user comes from reads them: ``text_fields``
(``SqliteStore``) and ``fields`` (``InMemoryStore``). Each case puts the same documents
into the reference and into ``AnnealStore`` with the same ``index=`` and compares the
texts each embeds.

``SqliteStore``'s vector tables need the sqlite-vec extension, which this Python's
``sqlite3`` cannot load (built without ``enable_load_extension``): the reference's texts
are the embedding requests its own ``batch`` plans for the puts
(``_prepare_batch_PUT_queries``, the code that reads ``text_fields``), not run.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealStore
from anneal_memory.errors import ValidationError

DOCS = [
    ("d1", {"text": "lentil soup", "title": "lunch", "meta": {"tags": ["veg", "warm"]}}),
    ("d2", {"text": "hiking boots", "title": "gear", "meta": {"tags": ["outdoor"]}}),
    ("d3", {"title": "no text field", "other": "something else"}),
]


class Recording(Embeddings):
    """A real LangChain ``Embeddings`` that keeps every text it is asked to embed."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return [[float(len(t)), 1.0, 0.5] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text)), 1.0, 0.5]


def embedded(store_kind: str, tmp_path: Path, keys: dict[str, Any]) -> list[str]:
    """The texts a store embeds for DOCS, given these index keys."""
    rec = Recording()
    index = {"dims": 3, "embed": rec, **keys}
    if store_kind == "SqliteStore":
        ref = SqliteStore(sqlite3.connect(":memory:"), index=index)  # type: ignore[arg-type]
        _queries, request = ref._prepare_batch_PUT_queries(
            [(i, PutOp(("docs",), key, value)) for i, (key, value) in enumerate(DOCS)])
        ref.conn.close()
        return sorted(text for _ns, _key, _path, text in (request[1] if request else []))
    elif store_kind == "InMemoryStore":
        mem = InMemoryStore(index=index)  # type: ignore[arg-type]
        for key, value in DOCS:
            mem.put(("docs",), key, value)
    else:
        with Store(tmp_path / "anneal.db") as store:
            ours = AnnealStore(store, index=index)
            for key, value in DOCS:
                ours.put(("docs",), key, value)
            assert len(ours.search(("docs",), query="soup")) == 3
    return sorted(rec.texts)


@pytest.mark.parametrize("keys", [
    {"text_fields": ["text"]},
    {"text_fields": ["text", "meta.tags[*]"]},
    {"text_fields": "title"},                            # one path, as SqliteStore takes it
    {"text_fields": ["text"], "fields": ["other"]},      # both: text_fields decides
    {},                                                  # neither: the whole value
], ids=["list", "wildcard", "string", "both", "neither"])
def test_text_fields_embeds_what_sqlite_store_embeds(tmp_path: Path, keys: dict[str, Any]) -> None:
    expected = embedded("SqliteStore", tmp_path, keys)
    assert expected  # the reference embedded something to compare with
    assert embedded("AnnealStore", tmp_path, keys) == expected


@pytest.mark.parametrize("keys", [{"fields": ["text"]}, {"fields": ["title", "meta.tags[0]"]}],
                         ids=["text", "two"])
def test_fields_embeds_what_in_memory_store_embeds(tmp_path: Path, keys: dict[str, Any]) -> None:
    expected = embedded("InMemoryStore", tmp_path, keys)
    assert expected
    assert embedded("AnnealStore", tmp_path, keys) == expected


@pytest.mark.parametrize("keys", [{"text_fields": 5}, {"fields": [""]},
                                  {"text_fields": ["text", None]}])
def test_bad_field_lists_are_refused(tmp_path: Path, keys: dict[str, Any]) -> None:
    with Store(tmp_path / "anneal.db") as store:
        with pytest.raises(ValidationError, match="field paths"):
            AnnealStore(store, index={"dims": 3, "embed": Recording(), **keys})
