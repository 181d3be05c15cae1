"""LangChain's own standard tests (langchain-tests) for the retriever."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain_tests.integration_tests import RetrieversIntegrationTests

from anneal_memory import Store
from anneal_memory.adapters.langchain import AnnealRetriever


def _memory_with_notes() -> str:
    path = Path(tempfile.mkdtemp()) / "memory.db"
    with Store(path) as store:
        for n in range(5):
            store.record(f"the greenhouse vent note {n}", "observation")
    return str(path)


class TestAnnealRetrieverStandard(RetrieversIntegrationTests):
    _path = _memory_with_notes()

    @property
    def retriever_constructor(self) -> type[AnnealRetriever]:
        return AnnealRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self._path}

    @property
    def retriever_query_example(self) -> str:
        return "greenhouse vent"

