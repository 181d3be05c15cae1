"""CrewAI tests: telemetry off, HOME in a temp dir, the global event bus scoped per test."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Before crewai is imported: no telemetry, no tracing prompt, nothing written to the real HOME.
_home = tempfile.mkdtemp(prefix="crewai-home-")
for key, value in {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_DISABLE_TRACKING": "true",
                   "OTEL_SDK_DISABLED": "true", "CREWAI_TRACING_ENABLED": "false",
                   "CREWAI_TESTING": "true", "CI": "true", "HOME": _home,
                   "CREWAI_STORAGE_DIR": _home}.items():
    os.environ.setdefault(key, value)

import pytest  # noqa: E402
from crewai.events import crewai_event_bus  # noqa: E402

from anneal_memory import Store  # noqa: E402


@pytest.fixture(autouse=True)
def _scoped_bus() -> Iterator[None]:
    with crewai_event_bus.scoped_handlers():
        yield
        crewai_event_bus.flush(timeout=30.0)


@pytest.fixture
def mem_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", project_name="CrewAITest")
    yield s
    s.close()
