"""AnnealMemoryStore behaves as Strands' reference store (``TestMemoryStore``, shipped in
the wheel since strands-agents 1.5x) on what both define: add then search finds the text,
the limit, an empty query, a limit below 1, the manager's attribution. On a release without
the reference store the same cases run on ours alone."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from strands.memory import MemoryManager

from anneal_memory import Store
from anneal_memory.adapters.strands import AnnealMemoryStore

_REFERENCE = importlib.util.find_spec("strands.vended_memory_stores.test_memory_store")


def _ours(tmp_path: Path) -> Any:
    return AnnealMemoryStore(Store(tmp_path / "memory.db"), name="mem", extraction=False)


def _reference(tmp_path: Path) -> Any:
    from strands.vended_memory_stores.test_memory_store import TestMemoryStore

    return TestMemoryStore(name="mem", persist=False)


STORES: list[Callable[[Path], Any]] = [_ours] + ([_reference] if _REFERENCE else [])


@pytest.fixture(params=STORES, ids=lambda make: make.__name__.strip("_"))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made = request.param(tmp_path)
    yield made
    if isinstance(made, AnnealMemoryStore):
        made.session.store.close()


def test_the_reference_is_there_on_recent_releases() -> None:
    from importlib.metadata import version

    major, minor = (int(x) for x in version("strands-agents").split(".")[:2])
    assert bool(_REFERENCE) == ((major, minor) >= (1, 50)), "reference store moved"


def test_add_then_search_finds_it_and_respects_the_limit(store: Any) -> None:
    async def use() -> tuple[list, list, list]:
        for text in ("The irrigation pump runs at 42 psi", "The irrigation valve is brass",
                     "The greenhouse heater is a Zephyrion"):
            await store.add(text)
        one = await store.search("irrigation pump psi", {"max_search_results": 1})
        two = await store.search("irrigation", {"max_search_results": 2})
        none = await store.search("   ")
        return one, two, none

    one, two, none = asyncio.run(use())
    assert len(one) == 1 and "42 psi" in one[0].content
    assert len(two) == 2 and all("irrigation" in e.content for e in two)
    assert none == []


def test_a_limit_below_one_is_refused(store: Any) -> None:
    with pytest.raises(ValueError, match="max_search_results"):
        asyncio.run(store.search("pump", {"max_search_results": 0}))


def test_the_manager_attributes_entries_to_the_store(store: Any) -> None:
    manager = MemoryManager(stores=[store])

    async def use() -> list:
        await store.add("The compost bin is behind the shed")
        return await manager.search("compost bin")

    found = asyncio.run(use())
    assert found and found[0].store_name == "mem" and "behind the shed" in found[0].content
