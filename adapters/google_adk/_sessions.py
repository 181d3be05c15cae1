"""An ADK ``BaseSessionService`` on the core's item collections: ADK sessions (the
conversation events and state) in the same SQLite or PostgreSQL store as the memory.

Where things are kept (each ``(app_name, user_id)`` is the namespace
``{"project": app_name, "user": user_id}``, as the memory service's default; app-wide state
is the namespace ``{"project": app_name}``'s):

- ``google_adk.sessions`` (user's): one item per session id: its own state (keys without a
  prefix), ``create_time``, ``update_time``, the number of events;
- ``google_adk.session_events`` (user's): one item per event, key ``<session>/<n>``, the
  event as ADK's JSON;
- ``google_adk.user_state`` (user's) and ``google_adk.app_state`` (app's): the ``user:`` and
  ``app:`` state, stored without their prefix as ADK's own services do;
- ``google_adk.session_index`` (app's): which users have which sessions, for
  ``list_sessions(user_id=None)``.

``temp:`` state lives only on the session object of the running invocation and is never
stored. A session object older than the stored one (another writer appended since) is
refused on ``append_event`` (ADK's ``StaleSessionError``, a ``ValueError``, as its SQLite and
database services do). Each call's writes are one transaction.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import threading
import uuid
from typing import Any
from urllib.parse import quote

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from anneal_memory import Store
from anneal_memory.adapters import from_item_value, item_value
from anneal_memory.clock import utcnow
from anneal_memory.errors import ValidationError

try:  # google-adk >= 2.x names them; earlier releases raise a plain ValueError
    from google.adk.errors._stale_session_error import StaleSessionError
except ImportError:  # pragma: no cover - exercised on the floor
    class StaleSessionError(ValueError):  # type: ignore[no-redef]
        """The session object is older than the stored session."""
try:
    from google.adk.errors.session_not_found_error import SessionNotFoundError
except ImportError:  # pragma: no cover - exercised on the floor
    class SessionNotFoundError(ValueError):  # type: ignore[no-redef]
        """No stored session has this id."""

SESSIONS = "google_adk.sessions"
SESSION_EVENTS = "google_adk.session_events"
USER_STATE = "google_adk.user_state"
APP_STATE = "google_adk.app_state"
SESSION_INDEX = "google_adk.session_index"
_STATE_KEY = "state"


def _key(value: str) -> str:
    """One part of an item key: percent-encoded, so no id is a prefix of another's."""
    return quote(value, safe="")


def _jsonable(value: Any) -> Any:
    """State values as ADK's own database services store them (datetimes, models...)."""
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=repr)


def _value(item: Any) -> Any:
    """A stored state or session record: NaN / ±Infinity in its state come back as ADK's
    own services give them (in memory: as they were; SQLite: Python's JSON)."""
    return from_item_value(item.value, f"session item {item.key!r}")


def _split(state: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(app, user, session) parts of a state or delta, prefixes removed, ``temp:`` dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    own: dict[str, Any] = {}
    for key, value in (state or {}).items():
        if key.startswith(State.APP_PREFIX):
            app[key[len(State.APP_PREFIX):]] = value
        elif key.startswith(State.USER_PREFIX):
            user[key[len(State.USER_PREFIX):]] = value
        elif not key.startswith(State.TEMP_PREFIX):
            own[key] = value
    return _jsonable(app), _jsonable(user), _jsonable(own)


def _merged(app: dict[str, Any], user: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    state = copy.deepcopy(own)
    state.update({State.APP_PREFIX + k: v for k, v in app.items()})
    state.update({State.USER_PREFIX + k: v for k, v in user.items()})
    return state


class AnnealSessionService(BaseSessionService):
    """ADK sessions kept in an anneal-memory store (see the module for the layout).

    ``store`` is a Store, a store path or an ``anneal:`` URI; ``uri=`` is the URI alone, as
    ADK's service registry passes it (``agents_dir`` from the registry is ignored). Pass it
    as ``Runner(session_service=...)`` or, under ``adk web`` / ``adk api_server``, as
    ``--session_service_uri=anneal:///abs/path/memory.db`` after ``register_services()``.
    """

    def __init__(self, store: Store | str | os.PathLike[str] | None = None, *,
                 uri: str | None = None, agents_dir: str | None = None) -> None:
        del agents_dir  # what ADK's registry passes every factory; the URI says where
        from ._service import _memory_from_uri

        store, owned = _memory_from_uri(store, uri, {}, {}, {})
        if owned is None and not isinstance(store, Store):
            if not isinstance(store, (str, os.PathLike)):
                raise ValidationError(f"AnnealSessionService needs a Store, a store path or an "
                                      f"anneal: URI, not {type(store).__name__}")
            store = owned = Store(store)
        if getattr(store, "namespace", None) is not None:
            raise ValidationError("pass the parent Store, not a store.scoped(...) view: each "
                                  "(app_name, user_id) is its own namespace")
        self.store: Store = store
        self._owned = owned
        self._lock = threading.Lock()  # one check-and-write of a session at a time

    def close(self) -> None:
        """Close the store if this service opened it (from a path or a URI)."""
        if self._owned is not None:
            self._owned.close()

    # --- where things are ------------------------------------------------------------------
    @staticmethod
    def _check(app_name: Any, user_id: Any, *, every_user: bool = False) -> None:
        """A non-empty app name and user id (None only for ``every_user``); the core
        refuses invisible-only or mixed ids when the namespace is opened."""
        if not isinstance(app_name, str) or not app_name.strip():
            raise ValidationError(f"ADK sessions need a non-empty app_name, not {app_name!r}")
        if (user_id is not None or not every_user) and (not isinstance(user_id, str)
                                                         or not user_id.strip()):
            raise ValidationError(f"ADK sessions need a non-empty user_id, not {user_id!r}")

    def _user(self, app_name: str, user_id: str) -> Store:
        return self.store.scoped({"project": app_name, "user": user_id})

    def _app(self, app_name: str) -> Store:
        return self.store.scoped({"project": app_name})

    @staticmethod
    def _state_of(view: Store, collection: str) -> dict[str, Any]:
        item = view.items(collection).get(_STATE_KEY)
        return dict(_value(item)) if item is not None else {}

    @classmethod
    def _merge_into(cls, view: Store, collection: str, delta: dict[str, Any]) -> None:
        if delta:
            state = cls._state_of(view, collection)
            state.update(delta)
            view.items(collection).put(_STATE_KEY, item_value(state))

    def _find(self, user: Store, session_id: str) -> tuple[str, Any] | None:
        """The stored id and record of a session: the id as given, else without its
        surrounding whitespace (as ADK's in-memory and SQLite services read it)."""
        sessions = user.items(SESSIONS)
        for candidate in dict.fromkeys([session_id, session_id.strip()]):
            if candidate:
                item = sessions.get(candidate)
                if item is not None:
                    return candidate, _value(item)
        return None

    # --- the interface ---------------------------------------------------------------------
    async def create_session(self, *, app_name: str, user_id: str,
                             state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        """A new session; ``app:`` / ``user:`` keys of ``state`` go to the app's and the
        user's state. An id already taken raises ADK's ``AlreadyExistsError``."""
        self._check(app_name, user_id)
        return await asyncio.to_thread(self._create, app_name, user_id, state, session_id)

    def _create(self, app_name: str, user_id: str, state: dict[str, Any] | None,
                session_id: str | None) -> Session:
        sid = session_id.strip() if isinstance(session_id, str) else None
        sid = sid or str(uuid.uuid4())
        app_delta, user_delta, own = _split(state)
        user, app = self._user(app_name, user_id), self._app(app_name)
        now = utcnow().timestamp()  # ADK's sessions keep POSIX seconds
        with self._lock, self.store.batch():
            if user.items(SESSIONS).get(sid) is not None:
                raise AlreadyExistsError(f"Session with id {sid} already exists.")
            self._merge_into(app, APP_STATE, app_delta)
            self._merge_into(user, USER_STATE, user_delta)
            user.items(SESSIONS).put(sid, item_value({"id": sid, "state": own,
                                                      "create_time": now, "update_time": now,
                                                      "events": 0}))
            app.items(SESSION_INDEX).put(f"{_key(user_id)}/{_key(sid)}",
                                         {"user_id": user_id, "session_id": sid},
                                         metadata={"user_id": user_id})
            merged = _merged(self._state_of(app, APP_STATE), self._state_of(user, USER_STATE),
                             own)
        return Session(app_name=app_name, user_id=user_id, id=sid, state=merged, events=[],
                       last_update_time=now)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        """The session with its events (``config``: only the ``num_recent_events`` last,
        only those at or after ``after_timestamp``) and its merged state; None if none."""
        self._check(app_name, user_id)
        if not isinstance(session_id, str) or not session_id:
            return None
        return await asyncio.to_thread(self._get, app_name, user_id, session_id, config)

    def _get(self, app_name: str, user_id: str, session_id: str,
             config: GetSessionConfig | None) -> Session | None:
        user, app = self._user(app_name, user_id), self._app(app_name)
        found = self._find(user, session_id)
        if found is None:
            return None
        sid, record = found
        recent = config.num_recent_events if config is not None else None
        after = config.after_timestamp if config is not None else None
        events: list[Event] = []
        if recent != 0:
            prefix = f"{_key(sid)}/"
            if recent is not None:
                items = list(reversed(user.items(SESSION_EVENTS).list(
                    prefix=prefix, order="desc", limit=recent)))
            else:
                items = user.items(SESSION_EVENTS).list(prefix=prefix)
            events = [Event.model_validate_json(json.dumps(i.value)) for i in items]
            if after is not None:
                events = [e for e in events if e.timestamp >= after]
        state = _merged(self._state_of(app, APP_STATE), self._state_of(user, USER_STATE),
                        record["state"])
        return Session(app_name=app_name, user_id=user_id, id=sid, state=state, events=events,
                       last_update_time=record["update_time"])

    async def list_sessions(self, *, app_name: str,
                            user_id: str | None = None) -> ListSessionsResponse:
        """The sessions of one user (``user_id=None``: of every user of the app), without
        their events, with their merged state, oldest update first."""
        self._check(app_name, user_id, every_user=True)
        return await asyncio.to_thread(self._list, app_name, user_id)

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        app = self._app(app_name)
        app_state = self._state_of(app, APP_STATE)
        if user_id is not None:
            users = [user_id]
        else:
            users = list(dict.fromkeys(i.value["user_id"]
                                       for i in app.items(SESSION_INDEX).list()))
        sessions: list[Session] = []
        for uid in users:
            user = self._user(app_name, uid)
            user_state = self._state_of(user, USER_STATE)
            for item in user.items(SESSIONS).list():
                record = _value(item)
                sessions.append(Session(
                    app_name=app_name, user_id=uid, id=record["id"], events=[],
                    state=_merged(app_state, user_state, record["state"]),
                    last_update_time=record["update_time"]))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Remove the session and its events (the app's and user's state stay)."""
        self._check(app_name, user_id)
        if isinstance(session_id, str) and session_id:
            await asyncio.to_thread(self._delete, app_name, user_id, session_id)

    def _delete(self, app_name: str, user_id: str, session_id: str) -> None:
        user, app = self._user(app_name, user_id), self._app(app_name)
        with self._lock, self.store.batch():
            found = self._find(user, session_id)
            if found is None:
                return
            sid = found[0]
            user.items(SESSIONS).delete(sid)
            user.items(SESSION_EVENTS).delete_prefix(f"{_key(sid)}/")
            app.items(SESSION_INDEX).delete(f"{_key(user_id)}/{_key(sid)}")

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state, keys without the prefix (empty when none)."""
        self._check(app_name, user_id)
        return await asyncio.to_thread(self._state_of, self._user(app_name, user_id), USER_STATE)

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store the event and apply its state delta (``temp:`` keys only on ``session``);
        a partial event is not stored. Raises ``StaleSessionError`` when another writer
        appended to the stored session since ``session`` was read, ``SessionNotFoundError``
        when it is not stored."""
        if event.partial:
            return event
        delta = dict(event.actions.state_delta) if event.actions and \
            event.actions.state_delta else {}
        for key, value in delta.items():  # visible to the rest of this invocation only
            if key.startswith(State.TEMP_PREFIX):
                session.state[key] = value
        if event.actions and event.actions.state_delta:
            event.actions.state_delta = {k: v for k, v in delta.items()
                                         if not k.startswith(State.TEMP_PREFIX)}
        self._check(session.app_name, session.user_id)
        await asyncio.to_thread(self._append, session, event)
        session.last_update_time = event.timestamp
        for key, value in (event.actions.state_delta or {}).items():
            session.state[key] = value
        session.events.append(event)
        return event

    def _append(self, session: Session, event: Event) -> None:
        user, app = self._user(session.app_name, session.user_id), self._app(session.app_name)
        app_delta, user_delta, own = _split(event.actions.state_delta if event.actions else None)
        data = json.loads(event.model_dump_json(exclude_none=True))
        with self._lock, self.store.batch():
            item = user.items(SESSIONS).get(session.id)
            if item is None:
                raise SessionNotFoundError(f"Session {session.id} not found.")
            record = dict(_value(item))
            if record["update_time"] > session.last_update_time:
                raise StaleSessionError(
                    f"Session {session.id} was modified in storage after this copy was read "
                    "(a stale session): get_session again and append to that.")
            self._merge_into(app, APP_STATE, app_delta)
            self._merge_into(user, USER_STATE, user_delta)
            record["state"] = {**record["state"], **own}
            record["update_time"] = event.timestamp
            record["events"] = int(record["events"]) + 1
            user.items(SESSION_EVENTS).put(f"{_key(session.id)}/{record['events']:012d}", data)
            user.items(SESSIONS).put(session.id, item_value(record))
