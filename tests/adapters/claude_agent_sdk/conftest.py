"""Claude Agent SDK tests: the SDK's real query loop over a scripted CLI transport.

No CLI process is ever started: every run passes ``transport=ScriptedCLI(...)``, which
plays the CLI's side of the control protocol (hooks, SDK MCP calls, transcript mirror).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from anneal_memory import Store

os.environ.setdefault("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def mem_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", project_name="ClaudeAgentSDKTest")
    yield s
    s.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The working directory the SDK sessions run in."""
    p = tmp_path / "garden-project"
    p.mkdir()
    return p
