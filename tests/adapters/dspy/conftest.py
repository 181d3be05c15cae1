from __future__ import annotations

import os

# litellm (imported by DSPy) fetches a model cost map from the network unless told not to;
# set before any test imports dspy, and inherited by the guide's subprocesses
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest

from anneal_memory import Store


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "memory.db", project_name="DSPyTest")
    yield s
    s.close()
