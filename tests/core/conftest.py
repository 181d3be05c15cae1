from __future__ import annotations

from pathlib import Path

import pytest

from anneal_memory import Store


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(db: Path):
    s = Store(db, project_name="Test")
    yield s
    s.close()
