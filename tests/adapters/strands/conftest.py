"""Strands Agents tests: a scripted Strands Model, telemetry off, no network, no key."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from anneal_memory import Store

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("STRANDS_OTEL_ENABLE_CONSOLE_EXPORT", "false")


@pytest.fixture
def mem_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", project_name="StrandsTest")
    yield s
    s.close()
