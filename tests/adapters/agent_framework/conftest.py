"""Agent Framework tests: instrumentation off before agent_framework is imported, and no
network at all (a test that opens a socket fails)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

for key, value in {"ENABLE_INSTRUMENTATION": "false", "ENABLE_SENSITIVE_DATA": "false",
                   "OTEL_SDK_DISABLED": "true"}.items():
    os.environ.setdefault(key, value)

import pytest  # noqa: E402

from anneal_memory import Store  # noqa: E402


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an Agent Framework test tried to reach the network")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture
def mem_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", project_name="AgentFrameworkTest")
    yield s
    s.close()
