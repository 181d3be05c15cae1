"""OpenAI Agents SDK tests: the SDK's ScriptedModel, tracing off, no key."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from anneal_memory import Store

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


@pytest.fixture
def mem_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", project_name="OpenAIAgentsTest")
    yield s
    s.close()
