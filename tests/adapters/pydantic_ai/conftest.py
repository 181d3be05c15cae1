"""Pydantic AI tests: real agent runs on FunctionModel/TestModel, real model requests forbidden."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai import models

from anneal_memory import Store

models.ALLOW_MODEL_REQUESTS = False


@pytest.fixture
def mem_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", project_name="PydanticAITest")
    yield s
    s.close()
