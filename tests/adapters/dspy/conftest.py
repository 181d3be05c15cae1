from __future__ import annotations

import pytest

from anneal_memory import Store


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "memory.db", project_name="DSPyTest")
    yield s
    s.close()
