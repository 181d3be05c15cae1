"""ADK's memory-service cases, run against AnnealMemoryService and ADK's InMemoryMemoryService.

The cases are those of ADK's DatabaseMemoryService suite (google/adk-python,
tests/unittests/memory/test_database_memory_service.py, Apache 2.0) that exercise the public
``BaseMemoryService`` contract, restated here and named after the ADK tests; that service is
newer than the google-adk releases tested (2.13.0, 1.21.0), so each case runs on ours and on
the installed ``InMemoryMemoryService`` (and on ``DatabaseMemoryService`` when the installed
release has it). The stop-word cases are DatabaseMemoryService's alone (InMemoryMemoryService
counts every word): they run on ours, and on it where installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions.session import Session
from google.genai import types

from anneal_memory.adapters.google_adk import AnnealMemoryService

APP, USER, OTHER = "test-app", "test-user", "another-user"
HAS_DATABASE = importlib.util.find_spec("google.adk.memory.database_memory_service") is not None


def _event(eid: str, author: str, ts: float, text: str | None) -> Event:
    content = types.Content(parts=[types.Part(text=text)]) if text is not None else None
    return Event(id=eid, invocation_id=f"inv-{eid}", author=author, timestamp=ts, content=content)


SESSION_1 = Session(app_name=APP, user_id=USER, id="session-1", last_update_time=1000, events=[
    _event("event-1a", "user", 12345, "The ADK is a great toolkit."),
    _event("event-1b", "user", 12346, None),
    _event("event-1c", "model", 12347, "I agree. The Agent Development Kit (ADK) rocks!")])
SESSION_2 = Session(app_name=APP, user_id=USER, id="session-2", last_update_time=2000, events=[
    _event("event-2a", "user", 54321, "I like to code in Python.")])
OTHER_USERS = Session(app_name=APP, user_id=OTHER, id="session-3", last_update_time=3000,
                      events=[_event("event-3a", "user", 60000, "This is a secret.")])
NO_EVENTS = Session(app_name=APP, user_id=USER, id="session-4", last_update_time=4000)


def on(*, stop_words: bool = False, events: bool = False) -> Callable[[Any], Any]:
    """Run a case on ours and the installed references that define it (``events``:
    ``add_events_to_memory``, absent from InMemoryMemoryService before google-adk 1.2x)."""
    in_memory = not stop_words and (not events or hasattr(InMemoryMemoryService,
                                                           "add_events_to_memory"))
    refs = (["adk_database"] if HAS_DATABASE else []) + (["adk_in_memory"] if in_memory else [])
    mark = pytest.mark.parametrize("memory_service", ["anneal", *refs], indirect=True)

    def decorate(case: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
        def run(memory_service: Any) -> None:
            asyncio.run(case(memory_service))
        run.__name__ = case.__name__
        run.__doc__ = case.__doc__
        return mark(run)
    return decorate


@pytest.fixture
def memory_service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "anneal":
        service: Any = AnnealMemoryService(tmp_path / "memory.db")
        yield service
        service.close()
    elif request.param == "adk_database":  # pragma: no cover - newer google-adk only
        from google.adk.memory.database_memory_service import DatabaseMemoryService

        yield DatabaseMemoryService(f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
    else:
        yield InMemoryMemoryService()


async def _search(service: Any, query: str, user: str = USER) -> list[Any]:
    return (await service.search_memory(app_name=APP, user_id=user, query=query)).memories


def _text(memory: Any) -> str:
    return " ".join(p.text for p in memory.content.parts if p.text)


@on()
async def test_add_session_to_memory(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    assert await _search(memory_service, "ADK toolkit")


@on()
async def test_add_session_with_no_events(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(NO_EVENTS)
    assert not await _search(memory_service, "anything")


@on()
async def test_add_session_to_memory_filters_no_content_events(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    found = await _search(memory_service, "ADK")
    assert len(found) == 2 and {m.author for m in found} == {"user", "model"}


@on()
async def test_search_memory_empty_query(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    assert not await _search(memory_service, "")


@on(stop_words=True)
async def test_search_memory_only_stop_words(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    assert not await _search(memory_service, "the and or")


@on()
async def test_search_memory_simple_match(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    await memory_service.add_session_to_memory(SESSION_2)
    (found,) = await _search(memory_service, "Python")
    assert _text(found) == "I like to code in Python." and found.author == "user"


@on()
async def test_search_memory_case_insensitive(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    (found,) = await _search(memory_service, "development")
    assert _text(found) == "I agree. The Agent Development Kit (ADK) rocks!"


@on()
async def test_search_memory_multiple_matches(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    assert {_text(m) for m in await _search(memory_service, "ADK")} == {
        "The ADK is a great toolkit.", "I agree. The Agent Development Kit (ADK) rocks!"}


@on()
async def test_search_memory_no_match(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    assert not await _search(memory_service, "nonexistent")


@on()
async def test_search_memory_scoped_by_user(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    await memory_service.add_session_to_memory(OTHER_USERS)
    assert not await _search(memory_service, "secret")
    (found,) = await _search(memory_service, "secret", user=OTHER)
    assert _text(found) == "This is a secret."


@on()
async def test_search_memory_deduplication(memory_service: Any) -> None:
    await memory_service.add_session_to_memory(SESSION_1)
    await memory_service.add_session_to_memory(SESSION_1)
    assert len(await _search(memory_service, "ADK")) == 2


@on(events=True)
async def test_add_events_to_memory(memory_service: Any) -> None:
    await memory_service.add_events_to_memory(app_name=APP, user_id=USER, session_id="session-1",
                                              events=[SESSION_1.events[0]])
    (found,) = await _search(memory_service, "ADK toolkit")
    assert found.author == "user"
    await memory_service.add_events_to_memory(app_name=APP, user_id=USER,  # no session id
                                              events=[SESSION_2.events[0]])
    assert len(await _search(memory_service, "Python")) == 1


@on(events=True)
async def test_add_events_to_memory_skips_empty(memory_service: Any) -> None:
    await memory_service.add_events_to_memory(app_name=APP, user_id=USER,
                                              events=[_event("e-empty", "user", 12345, None)])
    assert not await _search(memory_service, "anything")


def test_file_based_store_survives_a_new_service(tmp_path: Path) -> None:
    async def go() -> tuple[int, int]:
        first = AnnealMemoryService(tmp_path / "memory.db")
        await first.add_session_to_memory(SESSION_1)
        before = len(await _search(first, "ADK"))
        first.close()
        second = AnnealMemoryService(uri=f"anneal://{tmp_path}/memory.db")
        after = len(await _search(second, "ADK"))
        second.close()
        return before, after

    assert asyncio.run(go()) == (2, 2)
