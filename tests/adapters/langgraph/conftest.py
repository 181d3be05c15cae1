from __future__ import annotations

import os
import sys

import pytest

from anneal_memory import Store

# The scripted chat model is shared with the LangChain adapter's tests (same model stack).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "langchain"))


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "memory.db", project_name="LangGraphTest")
    yield s
    s.close()
