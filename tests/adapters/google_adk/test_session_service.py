"""ADK's session-service contract, run against AnnealSessionService and ADK's own services.

The cases are those of ADK's shared session-service suite (google/adk-python,
tests/unittests/sessions/test_session_service.py and its _conformance.py backend list, Apache
2.0) that exercise the public ``BaseSessionService`` contract; each test here is named after
the ADK test it restates (written anew for this suite; ADK's tests that poke at one
backend's internals, SQLAlchemy engines, rollback spies or mocks are left out). Every case
runs on ``anneal`` (SQLite; also ``anneal_pg`` when ``ANNEAL_TEST_PG_DSN`` names a PostgreSQL
server) and on ADK's reference services installed with it (``adk_in_memory``,
``adk_sqlite``), so the expectations are the reference's own; where a behaviour is newer
than the installed ADK, or one reference does not define it, that reference is not among the
case's backends (``on``) and ours is still held to the latest behaviour.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types

from anneal_memory import Store
from anneal_memory.adapters.google_adk import AnnealSessionService
from anneal_memory.errors import ValidationError

try:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
except ImportError:  # pragma: no cover - every google-adk >= 1.21 has it
    SqliteSessionService = None  # type: ignore[assignment, misc]

#: the PostgreSQL server the backends suite uses, when one is given (``nox -s postgres``
#: sets it; the google_adk sessions have none, so there the anneal backend is SQLite only)
PG_DSN = os.environ.get("ANNEAL_TEST_PG_DSN", "")
OURS = ["anneal"] + (["anneal_pg"] if PG_DSN else [])
BACKENDS = [*OURS, "adk_in_memory"] + (["adk_sqlite"] if SqliteSessionService else [])
#: ADK >= 2: temp: state is applied to the running session object (base _apply_temp_state)
TEMP_ON_SESSION = hasattr(BaseSessionService, "_apply_temp_state")
HAS_USER_STATE = hasattr(BaseSessionService, "get_user_state")


def on(*, temp_on_session: bool = False, user_state: bool = False, stale: bool = False,
       newer: bool = False) -> Callable[[Any], Any]:
    """Run a case on ours and on each reference whose installed release defines it:
    ``temp_on_session``/``user_state``/``newer`` (ADK >= 2 behaviour), ``stale`` (only the
    persistent reference refuses a stale session or an unknown one)."""
    refs = [b for b in BACKENDS[len(OURS):]
            if not (temp_on_session and not TEMP_ON_SESSION)
            and not (user_state and not HAS_USER_STATE)
            and not (newer and not TEMP_ON_SESSION)
            and not (stale and b != "adk_sqlite")]
    mark = pytest.mark.parametrize("session_service", [*OURS, *refs], indirect=True)
    return lambda case: mark(sync(case))


def sync(case: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async case in its own event loop (the suite needs no pytest plugin)."""
    @functools.wraps(case)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(case(*args, **kwargs))
    return run


@pytest.fixture
def session_service(request: pytest.FixtureRequest,
                    tmp_path: Path) -> Iterator[BaseSessionService]:
    if request.param == "anneal":
        service: Any = AnnealSessionService(tmp_path / "memory.db")
    elif request.param == "anneal_pg":
        yield from _pg_service(tmp_path)
        return
    elif request.param == "adk_sqlite":
        service = SqliteSessionService(str(tmp_path / "adk.db"))
    else:
        service = InMemorySessionService()
    yield service
    close = getattr(service, "close", None)
    if close is not None:
        result = close()
        if asyncio.iscoroutine(result):
            asyncio.run(result)


def _pg_service(tmp_path: Path) -> Iterator[AnnealSessionService]:
    """An AnnealSessionService on a fresh database of the PostgreSQL server."""
    import psycopg

    name = f"adk_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base = PG_DSN.rsplit("/", 1)[0]
    os.environ.setdefault("ANNEAL_MEMORY_SIDECAR_DIR", str(tmp_path / "sidecar"))
    service = AnnealSessionService(uri=f"anneal+{base}/{name}")
    try:
        yield service
    finally:
        service.close()
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _event(**kwargs: Any) -> Event:
    kwargs.setdefault("author", "user")
    kwargs.setdefault("invocation_id", "inv")
    return Event(**kwargs)


def _delta(**delta: Any) -> EventActions:
    return EventActions(state_delta=dict(delta))


@on()
async def test_get_empty_session(session_service: Any) -> None:
    assert await session_service.get_session(app_name="my_app", user_id="u", session_id="123") is None


@on()
async def test_create_get_session(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u",
                                                   state={"key": "value"})
    assert (session.app_name, session.user_id, session.state) == ("my_app", "u", {"key": "value"})
    assert session.id
    assert session.last_update_time <= datetime.now(timezone.utc).timestamp()
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got == session
    await session_service.delete_session(app_name="my_app", user_id="u", session_id=session.id)
    assert await session_service.get_session(app_name="my_app", user_id="u",
                                             session_id=session.id) is None


@on()
async def test_create_and_list_sessions(session_service: Any) -> None:
    ids = [f"session{i}" for i in range(5)]
    for sid in ids:
        await session_service.create_session(app_name="my_app", user_id="u", session_id=sid,
                                             state={"key": "value" + sid})
    sessions = (await session_service.list_sessions(app_name="my_app", user_id="u")).sessions
    assert {s.id for s in sessions} == set(ids)
    assert all(s.state == {"key": "value" + s.id} for s in sessions)
    assert all(s.events == [] for s in sessions)


@on()
async def test_list_sessions_all_users(session_service: Any) -> None:
    for user, sid in (("user1", "session1a"), ("user1", "session1b"), ("user2", "session2a")):
        await session_service.create_session(app_name="my_app", user_id=user, session_id=sid,
                                             state={"key": "value" + sid[-2:]})
    one = (await session_service.list_sessions(app_name="my_app", user_id="user1")).sessions
    assert {s.id: s.state for s in one} == {"session1a": {"key": "value1a"},
                                            "session1b": {"key": "value1b"}}
    two = (await session_service.list_sessions(app_name="my_app", user_id="user2")).sessions
    assert [(s.id, s.user_id) for s in two] == [("session2a", "user2")]
    every = (await session_service.list_sessions(app_name="my_app", user_id=None)).sessions
    assert {(s.user_id, s.id) for s in every} == {("user1", "session1a"), ("user1", "session1b"),
                                                  ("user2", "session2a")}
    assert (await session_service.list_sessions(app_name="other_app", user_id=None)).sessions == []


@on(newer=True)
async def test_list_sessions_ordered_by_last_update_time(session_service: Any) -> None:
    first = await session_service.create_session(app_name="my_app", user_id="u", session_id="a")
    await session_service.create_session(app_name="my_app", user_id="u", session_id="b")
    await session_service.append_event(first, _event(timestamp=time.time() + 10))
    sessions = (await session_service.list_sessions(app_name="my_app", user_id="u")).sessions
    assert [s.id for s in sessions] == ["b", "a"]  # oldest update first, the latest last


@on()
async def test_app_state_is_shared_by_all_users_of_app(session_service: Any) -> None:
    s1 = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1",
                                              state={"app:k1": "v1"})
    await session_service.append_event(s1, _event(actions=_delta(**{"app:k2": "v2"})))
    s2 = await session_service.create_session(app_name="my_app", user_id="u2", session_id="s2")
    assert s2.state == {"app:k1": "v1", "app:k2": "v2"}
    again = await session_service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert (again.state["app:k1"], again.state["app:k2"]) == ("v1", "v2")
    other = await session_service.create_session(app_name="other_app", user_id="u1")
    assert other.state == {}


@on()
async def test_user_state_is_shared_only_by_user_sessions(session_service: Any) -> None:
    s1 = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1",
                                              state={"user:k1": "v1"})
    await session_service.append_event(s1, _event(actions=_delta(**{"user:k2": "v2"})))
    s1b = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1b")
    assert s1b.state == {"user:k1": "v1", "user:k2": "v2"}
    s2 = await session_service.create_session(app_name="my_app", user_id="u2", session_id="s2")
    assert s2.state == {}


@on()
async def test_session_state_is_not_shared(session_service: Any) -> None:
    s1 = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1",
                                              state={"sk1": "v1"})
    await session_service.append_event(s1, _event(actions=_delta(sk2="v2")))
    got = await session_service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert (got.state["sk1"], got.state["sk2"]) == ("v1", "v2")
    s1b = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1b")
    assert s1b.state == {}


@on()
async def test_temp_state_is_not_persisted_in_state_or_events(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u1",
                                                   session_id="s1")
    event = _event(actions=_delta(**{"temp:k1": "v1", "sk": "v2"}))
    await session_service.append_event(session, event)
    assert "temp:k1" not in event.actions.state_delta and event.actions.state_delta["sk"] == "v2"
    got = await session_service.get_session(app_name="my_app", user_id="u1", session_id="s1")
    assert "temp:k1" not in got.state and got.state["sk"] == "v2"
    assert all("temp:k1" not in (e.actions.state_delta or {}) for e in got.events)


@on(temp_on_session=True)
async def test_temp_state_visible_across_sequential_events(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u1")
    event = _event(author="agent1", actions=_delta(**{"temp:output": "from agent 1"}))
    await session_service.append_event(session, event)
    assert session.state["temp:output"] == "from agent 1"  # the same invocation reads it
    assert "temp:output" not in event.actions.state_delta


@on()
async def test_get_session_respects_user_id(session_service: Any) -> None:
    s1 = await session_service.create_session(app_name="my_app", user_id="u1", session_id="s1")
    await session_service.append_event(s1, _event())
    await session_service.create_session(app_name="my_app", user_id="u2", session_id="s1")
    got = await session_service.get_session(app_name="my_app", user_id="u2", session_id="s1")
    assert got.user_id == "u2" and got.events == []


@on()
async def test_create_session_with_existing_id_raises_error(session_service: Any) -> None:
    await session_service.create_session(app_name="my_app", user_id="u", session_id="existing")
    with pytest.raises(AlreadyExistsError):
        await session_service.create_session(app_name="my_app", user_id="u",
                                             session_id="existing")


@on(newer=True)
async def test_padded_session_id_reads_and_deletes(session_service: Any) -> None:
    created = await session_service.create_session(app_name="my_app", user_id="u",
                                                   session_id="  padded  ")
    assert created.id == "padded"
    got = await session_service.get_session(app_name="my_app", user_id="u",
                                            session_id=" padded ")
    assert got is not None and got.id == "padded"
    await session_service.delete_session(app_name="my_app", user_id="u", session_id="padded ")
    assert await session_service.get_session(app_name="my_app", user_id="u",
                                             session_id="padded") is None


@on()
async def test_append_event_bytes(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u")
    content = types.Content(role="user", parts=[
        types.Part.from_bytes(data=b"test_image_data", mime_type="image/png")])
    grounding = types.GroundingMetadata(
        search_entry_point=types.SearchEntryPoint(sdk_blob=b"test_sdk_blob"))
    await session_service.append_event(session, _event(content=content,
                                                       grounding_metadata=grounding))
    assert session.events[0].content == content
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert len(got.events) == 1
    assert got.events[0].content == content and got.events[0].grounding_metadata == grounding


@on()
async def test_append_event_complete(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u")
    event = _event(
        content=types.Content(role="user", parts=[types.Part(text="test_text")]),
        turn_complete=True, partial=False,
        actions=EventActions(artifact_delta={"file": 0}, transfer_to_agent="agent",
                             escalate=True),
        long_running_tool_ids={"tool1"}, error_code="error_code",
        error_message="error_message", interrupted=True,
        grounding_metadata=types.GroundingMetadata(web_search_queries=["query1"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"custom_key": "custom_value"},
        timestamp=session.last_update_time + 1,
    )
    await session_service.append_event(session, event)
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got == session


def _same_float(got: Any, value: float) -> bool:
    return isinstance(got, float) and (math.isnan(got) if math.isnan(value) else got == value)


@pytest.mark.parametrize("session_service", [*OURS, "adk_in_memory"], indirect=True)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")],
                         ids=["nan", "inf", "-inf"])
@sync
async def test_state_with_non_finite_values_round_trips(session_service: Any,
                                                        value: float) -> None:
    """Session, user and app state holding NaN / an infinity (a tool's reading kept in
    state) are stored and read back as ADK's default InMemorySessionService keeps them
    (ours refused them: the store's strict JSON). ADK's SqliteSessionService is no
    reference here: SQLite's JSON functions refuse such state ("malformed JSON")."""
    session = await session_service.create_session(
        app_name="my_app", user_id="u", state={"reading": value, "user:best": value})
    await session_service.append_event(session, _event(
        actions=_delta(score=value, **{"app:limit": value}),
        timestamp=session.last_update_time + 1))
    got = await session_service.get_session(app_name="my_app", user_id="u",
                                            session_id=session.id)
    assert got is not None and len(got.events) == 1
    for key in ("reading", "user:best", "score", "app:limit"):
        assert _same_float(got.state[key], value), (key, got.state)
    listed = (await session_service.list_sessions(app_name="my_app", user_id="u")).sessions
    assert _same_float(listed[0].state["reading"], value)


@on()
async def test_session_last_update_time_updates_on_event(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u")
    before = session.last_update_time
    await session_service.append_event(session, _event(timestamp=before + 10))
    assert session.last_update_time == pytest.approx(before + 10, abs=1e-6)
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got.last_update_time == pytest.approx(before + 10, abs=1e-6)


@on(stale=True)
async def test_append_event_to_stale_session(session_service: Any) -> None:
    now = time.time()
    original = await session_service.create_session(app_name="my_app", user_id="u")
    await session_service.append_event(original, _event(invocation_id="inv1", timestamp=now + 1,
                                                        actions=_delta(sk1="v1")))
    updated = await session_service.get_session(app_name="my_app", user_id="u",
                                                session_id=original.id)
    await session_service.append_event(updated, _event(invocation_id="inv2", timestamp=now + 2,
                                                       actions=_delta(sk2="v2")))
    with pytest.raises(ValueError, match="stale"):
        await session_service.append_event(original, _event(
            invocation_id="inv3", timestamp=now + 3, actions=_delta(sk3="v3")))
    final = await session_service.get_session(app_name="my_app", user_id="u",
                                              session_id=original.id)
    assert [e.invocation_id for e in final.events] == ["inv1", "inv2"]
    assert "sk3" not in final.state and final.state["sk2"] == "v2"


@on()
async def test_get_session_with_config(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u")
    for i in range(1, 6):
        await session_service.append_event(session, _event(timestamp=i))

    async def events(**config: Any) -> list[float]:
        got = await session_service.get_session(
            app_name="my_app", user_id="u", session_id=session.id,
            config=GetSessionConfig(**config) if config else None)
        return [e.timestamp for e in got.events]

    assert await events() == [1, 2, 3, 4, 5]
    assert await events(num_recent_events=3) == [3, 4, 5]
    assert await events(after_timestamp=4.0) == [4, 5]
    assert await events(after_timestamp=50) == []
    assert await events(after_timestamp=4.0, num_recent_events=3) == [4, 5]


@on(newer=True)  # google-adk 1.x read num_recent_events=0 as "no limit"
async def test_get_session_with_zero_recent_events(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u")
    await session_service.append_event(session, _event(timestamp=1))
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id,
                                            config=GetSessionConfig(num_recent_events=0))
    assert got.events == []


@on()
async def test_partial_events_are_not_persisted(session_service: Any) -> None:
    session = await session_service.create_session(app_name="my_app", user_id="u")
    await session_service.append_event(session, _event(partial=True))
    assert session.events == []
    got = await session_service.get_session(app_name="my_app", user_id="u", session_id=session.id)
    assert got.events == []


@on(user_state=True)
async def test_get_user_state(session_service: Any) -> None:
    # ADK's test_get_user_state_* cases: empty when none, the latest write, no prefix,
    # not across users or apps, no session key
    assert not await session_service.get_user_state(app_name="my_app", user_id="u1")
    session = await session_service.create_session(app_name="my_app", user_id="u1")
    await session_service.append_event(session, _event(author="system", actions=_delta(
        **{"user:profile": {"name": "Alice"}, "user:counter": 1, "session_key": 1})))
    await session_service.append_event(session, _event(author="system",
                                                       actions=_delta(**{"user:counter": 2})))
    assert await session_service.get_user_state(app_name="my_app", user_id="u1") == \
        {"profile": {"name": "Alice"}, "counter": 2}
    assert not await session_service.get_user_state(app_name="my_app", user_id="u2")
    assert not await session_service.get_user_state(app_name="other_app", user_id="u1")


@on(stale=True)
async def test_append_to_a_session_never_stored_raises(session_service: Any) -> None:
    # _conformance.py notes this as a Redis divergence: the others raise
    stray = (await session_service.create_session(app_name="my_app", user_id="u")).model_copy(
        update={"id": "never-stored"})
    with pytest.raises(ValueError, match="not found"):
        await session_service.append_event(stray, _event())


# --- ours only: the store it lives in -----------------------------------------------------

@sync
async def test_sessions_survive_a_new_service_on_the_same_store(tmp_path: Path) -> None:
    first = AnnealSessionService(tmp_path / "memory.db")
    session = await first.create_session(app_name="garden", user_id="alice",
                                         state={"app:season": "spring", "user:name": "Alice"})
    await first.append_event(session, _event(
        content=types.Content(role="user", parts=[types.Part(text="Plant the leeks")]),
        actions=_delta(step=1)))
    first.close()
    second = AnnealSessionService(uri=f"anneal://{tmp_path}/memory.db")
    got = await second.get_session(app_name="garden", user_id="alice", session_id=session.id)
    assert got == session
    assert (await second.list_sessions(app_name="garden")).sessions[0].id == session.id
    second.close()
    with Store(tmp_path / "memory.db") as store:  # in the user's namespace, beside the memory
        alice = store.scoped({"project": "garden", "user": "alice"})
        assert alice.items("google_adk.sessions").count() == 1
        assert alice.items("google_adk.session_events").count() == 1
        assert store.scoped({"project": "garden", "user": "bob"}).items(
            "google_adk.sessions").count() == 0


@sync
async def test_bad_identities_and_arguments_are_refused(tmp_path: Path) -> None:
    service = AnnealSessionService(tmp_path / "memory.db")
    for app, user in (("", "u"), ("my_app", ""), ("my_app", None), ("my_app", "   "), ("my_app", "\u200b"),
                      ("my_app", "a\u200b")):
        with pytest.raises(ValidationError):
            await service.create_session(app_name=app, user_id=user)
    assert (await service.list_sessions(app_name="my_app")).sessions == []  # nothing written
    with pytest.raises(ValidationError):
        await service.list_sessions(app_name="")
    with Store(tmp_path / "other.db") as store:
        with pytest.raises(ValidationError, match="parent Store"):
            AnnealSessionService(store.scoped({"user": "u"}))
    with pytest.raises(ValidationError):
        AnnealSessionService(42)  # type: ignore[arg-type]
    service.close()
