"""The SDK's ``SessionStore`` protocol on the core item collections.

Session transcripts then live in the same SQLite or PostgreSQL database as the memory, so
every host of a deployment can resume any session. Items of one collection (default
``claude_agent_sdk.sessions``, optionally inside a namespace):

- ``e/<project>/<session>/<subpath>/<time>-<rand>``: one appended batch, ``{"entries": [...]}``
  (keys sort in append order; the main transcript's subpath part is empty);
- ``u/<project>/<session>/<subpath>/<uuid>``: an entry uuid already stored (idempotency);
- ``s/<project>/<session>``: the session's ``mtime`` and its summary sidecar
  (``fold_session_summary``), for ``list_sessions`` / ``list_session_summaries``;
- ``k/<project>/<session>/<subpath>``: a subagent transcript exists (``list_subkeys``).

Each key part is percent-encoded (``p...``, or ``h`` + a digest when long), so ``/``
inside a project key, session id or subpath can never make one key a prefix of another's,
and keys stay short; the items' values keep the real names.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import anyio
from claude_agent_sdk import fold_session_summary

from anneal_memory import Store
from anneal_memory.adapters import from_item_value, item_value
from anneal_memory.clock import utcnow
from anneal_memory.errors import ValidationError

DEFAULT_COLLECTION = "claude_agent_sdk.sessions"


def _part(value: Any, what: str) -> str:
    """One key part: ``p`` + the percent-encoded value, or ``h`` + a digest of a long one
    (keys stay short whatever the SDK sends; the values keep the names)."""
    if not isinstance(value, str) or not value:
        raise ValidationError(f"SessionKey {what} must be a non-empty string, not {value!r}")
    plain = quote(value, safe="")
    if len(plain) <= 96:
        return "p" + plain
    return "h" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:40]


class AnnealSessionStore:
    """A ``claude_agent_sdk`` ``SessionStore`` kept in an anneal-memory store.

    Pass it as ``ClaudeAgentOptions(session_store=AnnealSessionStore(store))``. All five
    methods of the protocol are implemented (``append``, ``load`` and the optional
    ``list_sessions``, ``list_session_summaries``, ``delete``, ``list_subkeys``); entries are
    kept verbatim (deep-equal on load) and de-duplicated by their ``uuid``. ``namespace``
    keeps one tenant's transcripts apart from another's in a shared database, on top of the
    SDK's own ``project_key``.
    """

    def __init__(self, store: Store, *, namespace: Any = None,
                 collection: str = DEFAULT_COLLECTION) -> None:
        if not isinstance(store, Store):
            raise ValidationError("AnnealSessionStore needs an anneal_memory.Store")
        if not isinstance(collection, str) or not collection.strip():
            raise ValidationError("collection must be a non-empty string")
        self.store = store
        view = store.scoped(namespace) if namespace is not None else store
        self.items = view.items(collection)
        self._lock = threading.Lock()  # one read-fold-write of a summary at a time
        self._last_ms = 0

    # ------------------------------------------------------------------ keys
    @staticmethod
    def _names(key: Mapping[str, Any]) -> tuple[str, str, str]:
        if not isinstance(key, Mapping):
            raise ValidationError("a SessionKey is a mapping with project_key and session_id")
        sub = key.get("subpath")
        if sub is not None and (not isinstance(sub, str) or not sub):
            raise ValidationError("SessionKey subpath must be a non-empty string or absent")
        return (_part(key.get("project_key"), "project_key"),
                _part(key.get("session_id"), "session_id"),
                _part(sub, "subpath") if sub else "")

    def _now_ms(self) -> int:
        now = int(utcnow().timestamp() * 1000)
        self._last_ms = max(now, self._last_ms + 1)
        return self._last_ms

    # ------------------------------------------------------------------ protocol
    async def append(self, key: Any, entries: list[Any]) -> None:
        """Keep a batch of transcript entries (idempotent per entry ``uuid``)."""
        names = self._names(key)
        if not isinstance(entries, list):
            raise ValidationError("entries must be a list of transcript entries")
        if entries:
            await anyio.to_thread.run_sync(self._append, names, key, entries)

    def _append(self, names: tuple[str, str, str], key: Mapping[str, Any],
                entries: list[Any]) -> None:
        pk, sid, sub = names
        with self._lock:
            fresh, seen = [], set()
            for entry in entries:
                uid = entry.get("uuid") if isinstance(entry, Mapping) else None
                if isinstance(uid, str) and uid:
                    marker = f"u/{pk}/{sid}/{sub}/{_part(uid, 'uuid')}"
                    if uid in seen or self.items.get(marker) is not None:
                        continue
                    seen.add(uid)
                fresh.append(entry)
            if not fresh:
                return
            stamp = f"{time.time_ns():020d}-{os.urandom(4).hex()}"
            # NaN / ±Infinity in an entry (a tool's result) kept as the SDK's
            # InMemorySessionStore keeps them
            self.items.put(f"e/{pk}/{sid}/{sub}/{stamp}", item_value({"entries": fresh}))
            for uid in seen:
                self.items.put(f"u/{pk}/{sid}/{sub}/{_part(uid, 'uuid')}", {})
            if sub:
                self.items.put(f"k/{pk}/{sid}/{sub}", {"subpath": key["subpath"]})
                return
            head = self.items.get(f"s/{pk}/{sid}")
            prev = head.value.get("summary") if head is not None else None
            summary = dict(fold_session_summary(prev, dict(key), fresh))  # type: ignore[arg-type]
            summary["mtime"] = mtime = self._now_ms()
            self.items.put(f"s/{pk}/{sid}", {"session_id": key["session_id"], "mtime": mtime,
                                             "summary": summary})

    async def load(self, key: Any) -> list[Any] | None:
        """Every entry of one transcript in append order; None if it was never written."""
        pk, sid, sub = self._names(key)

        def run() -> list[Any] | None:
            batches = self.items.list(prefix=f"e/{pk}/{sid}/{sub}/")
            if not batches:
                return None
            out: list[Any] = []
            for item in sorted(batches, key=lambda i: i.key):
                out.extend(from_item_value(item.value, f"transcript batch {item.key!r}")[
                    "entries"])
            return out
        return await anyio.to_thread.run_sync(run)

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        """The main transcripts of a project: session ids and mtimes (epoch ms)."""
        pk = _part(project_key, "project_key")

        def run() -> list[dict[str, Any]]:
            return [{"session_id": i.value["session_id"], "mtime": i.value["mtime"]}
                    for i in self.items.list(prefix=f"s/{pk}/")]
        return await anyio.to_thread.run_sync(run)

    async def list_session_summaries(self, project_key: str) -> list[dict[str, Any]]:
        """The summary sidecar of every main transcript of a project."""
        pk = _part(project_key, "project_key")

        def run() -> list[dict[str, Any]]:
            return [dict(i.value["summary"]) for i in self.items.list(prefix=f"s/{pk}/")]
        return await anyio.to_thread.run_sync(run)

    async def delete(self, key: Any) -> None:
        """Delete one transcript; a main transcript takes its subagent transcripts along."""
        pk, sid, sub = self._names(key)

        def run() -> None:
            with self._lock:
                if sub:
                    for kind in ("e", "u"):
                        self.items.delete_prefix(f"{kind}/{pk}/{sid}/{sub}/")
                    self.items.delete(f"k/{pk}/{sid}/{sub}")
                    return
                for kind in ("e", "u", "k"):
                    self.items.delete_prefix(f"{kind}/{pk}/{sid}/")
                self.items.delete(f"s/{pk}/{sid}")
        await anyio.to_thread.run_sync(run)

    async def list_subkeys(self, key: Any) -> list[str]:
        """The subpaths (subagent transcripts) of one session."""
        pk, sid, _ = self._names({"project_key": key.get("project_key"),
                                  "session_id": key.get("session_id")}
                                 if isinstance(key, Mapping) else key)

        def run() -> list[str]:
            return [i.value["subpath"] for i in self.items.list(prefix=f"k/{pk}/{sid}/")]
        return await anyio.to_thread.run_sync(run)
