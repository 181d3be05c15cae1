from __future__ import annotations

import pytest

from anneal_memory import Store


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "memory.db", project_name="LangChainTest")
    yield s
    s.close()



def pytest_configure(config: pytest.Config) -> None:
    # langchain-tests' standard suites are written for pytest-asyncio's auto mode (as
    # LangChain's own repositories run them); pytest-asyncio comes with langchain-tests
    if hasattr(config.option, "asyncio_mode"):
        config.option.asyncio_mode = "auto"
