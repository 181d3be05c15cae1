"""An ADK ``BaseMemoryService`` backed by an anneal-memory store.

A drop-in for ``InMemoryMemoryService`` / ``VertexAiMemoryBankService``: pass it as
``Runner(memory_service=...)`` and ADK's ``PreloadMemoryTool``, ``load_memory`` and
``callback_context.search_memory`` read from the store.

Identity: every call names its ``(app_name, user_id)``: that pair is the memory (by default
the namespace ``{"project": app_name, "user": user_id}``; ``namespace=`` takes a mapping,
a ``MemoryNamespace`` or a callable of an :class:`AdkUser`). Each user's episodes,
continuity and wraps are that namespace's alone, so one service serves any number of users.

Search answers as ``InMemoryMemoryService`` does: the query's words (Unicode-normalised,
lowercase) against each memory's words, memories sharing no word left out, the ten sharing
the most first (ties in the order they were recorded), an empty query finding nothing; and,
as ``DatabaseMemoryService`` does, English stop words ("the", "and", "or"...) in the query
match nothing, so a query made only of them finds nothing (``stop_words=`` changes the list).
The ids of the events a memory came from are kept in the namespace's ``google_adk.events``
item collection, so a session added again (in this process or the next) adds only what is
new, and a deleted memory is not added back.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from anneal_memory import Episode, EpisodeType, Store
from anneal_memory.adapters import MemoryAdapter, check_identity, hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

from ._uri import BOOL, INT, SCHEMES, ServiceUriError, parse_uri

LOGGER_NAME = "anneal_memory.adapters.google_adk"
EVENTS = "google_adk.events"
_safe = hook_guard(LOGGER_NAME)
_MAX_RESULTS = 10
_PAGE = 500

#: Words a query matches nothing on (English function words): a query made only of them
#: finds no memory, as ADK's ``DatabaseMemoryService`` answers.
STOP_WORDS: frozenset[str] = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing don down during each else few for from
further had has have having he her here hers herself him himself his how i if in into is it
its itself just may me might more most must my myself no nor not now of off on once only or
other our ours ourselves out over own s same shall she should so some such t than that the
their theirs them themselves then there these they this those through to too under until up
very was we were what when where which who whom why will with would you your yours yourself
yourselves
""".split())

#: the query options of an ``anneal:`` memory URI
URI_OPTIONS = {"search_limit": INT, "recall_limit": INT, "max_content_chars": INT,
               "record_intermediate": BOOL, "strict": BOOL}


@dataclass(frozen=True)
class AdkUser:
    """The identity ADK gives every memory call: what a ``namespace`` callable receives."""

    app_name: str
    user_id: str


def _text_of(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(p.text for p in content.parts if p.text and not getattr(p, "thought", False))


def _words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w+", unicodedata.normalize("NFC", text))}


def _is_latin(c: str) -> bool:
    if c.isascii():
        return c.isalnum() or c == "_"
    return unicodedata.name(c, "").startswith("LATIN")


def _searchable(text: str) -> set[str]:
    """A memory's words, plus the single-script runs of mixed Latin / non-Latin tokens
    (Japanese and Chinese write without spaces)."""
    words = _words(text)
    for word in list(words):
        if not word.isascii():
            words.update("".join(g) for _, g in itertools.groupby(word, _is_latin))
    return words


def _query_words(query: str, stop_words: frozenset[str]) -> set[str]:
    return {w for w in _words(query) if w not in stop_words}


def _score(words: set[str], text: str) -> int:
    in_text = _searchable(text)
    lowered = unicodedata.normalize("NFC", text).lower()
    return sum(1 for w in words if w in in_text or (not w.isascii() and w in lowered))


def matched_words(query: str, text: str, stop_words: Iterable[str] = STOP_WORDS) -> int:
    """How many of the query's words, stop words left out, a memory's text holds
    (InMemoryMemoryService's score of the query without its stop words)."""
    return _score(_query_words(query, frozenset(stop_words)), text)


class AnnealMemoryService(MemoryAdapter, BaseMemoryService):
    """ADK memory service over an anneal :class:`~anneal_memory.Store`.

    ``memory`` is a Store, a store path, a :class:`MemorySession` (then the session
    options go to it), or an ``anneal:`` URI; ``uri=`` is the URI alone, as ADK's service
    registry passes it (``anneal:///abs/path/memory.db``, ``anneal+postgresql://...``,
    options in its query, see :mod:`._uri`; ``agents_dir`` from the registry is ignored).
    Each ``(app_name, user_id)`` is its own memory (see the module). ``search_limit`` caps
    the memories one search returns (ADK puts them all in the prompt;
    ``InMemoryMemoryService`` returns ten). ``record_intermediate`` also records model text
    that is not a final response. ``stop_words`` are the query words that match nothing
    (default :data:`STOP_WORDS`; ``()`` for none).
    """

    framework = "google-adk"
    extra = "google-adk"
    logger_name = LOGGER_NAME

    #: the service records and recalls: the wrap and the memory message are the plugin's
    memory_options = ("namespace", "recall_limit", "max_content_chars", "strict", "embedder")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str] | None = None,
                 *, uri: str | None = None, agents_dir: str | None = None,
                 search_limit: int = _MAX_RESULTS, record_intermediate: bool = False,
                 stop_words: Iterable[str] | None = None, options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        del agents_dir  # what ADK's registry passes every factory; the URI says where
        opts = self._memory_options(options, keywords)
        settings: dict[str, Any] = {
            "search_limit": search_limit, "recall_limit": opts.recall_limit,
            "max_content_chars": opts.max_content_chars,
            "record_intermediate": record_intermediate, "strict": opts.strict}
        memory, owned = _memory_from_uri(memory, uri, settings, URI_OPTIONS,
                                         {"search_limit": _MAX_RESULTS,
                                          "record_intermediate": False}, embedder=opts.embedder)
        search_limit = settings["search_limit"]
        if isinstance(search_limit, bool) or not isinstance(search_limit, int) or search_limit < 1:
            raise ValidationError(f"search_limit must be a positive int, got {search_limit!r}")
        if stop_words is None:
            stop_words = STOP_WORDS
        if isinstance(stop_words, str) or not all(isinstance(w, str) for w in stop_words):
            raise ValidationError("stop_words must be a collection of words (strings), e.g. "
                                  "STOP_WORDS | {'please'} or () for none")
        try:
            self._init_memory(memory, replace(
                opts, recall_limit=settings["recall_limit"],
                max_content_chars=settings["max_content_chars"], strict=settings["strict"]))
        except Exception:
            if owned is not None:
                owned.close()
            raise
        self._owned_store = owned
        self.store = self.base_session.store
        self.search_limit = search_limit
        self.record_intermediate = bool(settings["record_intermediate"])
        self.stop_words = frozenset(w.lower() for w in stop_words)

    def close(self) -> None:
        """Close the store if this service opened it (from a path or a URI)."""
        super().close()
        if self._owned_store is not None:
            self._owned_store.close()

    # --- identity ------------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """``{"project": app_name, "user": user_id}`` of an :class:`AdkUser`."""
        if isinstance(context, AdkUser):
            return {"project": context.app_name, "user": context.user_id}
        return None

    def memory_for(self, app_name: str, user_id: str) -> MemorySession:
        """The memory session of one ADK user (their episodes, continuity and wraps)."""
        if not isinstance(app_name, str) or not isinstance(user_id, str):
            raise ValidationError("ADK memory calls need a non-empty app_name and user_id")
        # the identity rule: an empty, blank or invisible id is an IdentityError
        check_identity(app_name, "ADK's app_name", "project")
        check_identity(user_id, "ADK's user_id")
        return self.session_for(AdkUser(app_name, user_id))

    # --- writes --------------------------------------------------------------------------
    async def add_session_to_memory(self, session: Any) -> None:
        """Record a session's events (repeat calls add only what is new)."""
        await self.add_events_to_memory(app_name=session.app_name, user_id=session.user_id,
                                        events=session.events, session_id=session.id)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Any],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Record events: user text (context), tool responses (observation, trust tool),
        final responses (outcome), other model text when ``record_intermediate``."""
        memory = self.memory_for(app_name, user_id)
        await asyncio.to_thread(self._record_events, memory, list(events), session_id,
                                dict(custom_metadata or {}))

    def _record_events(self, memory: MemorySession, events: list[Any], session_id: str | None,
                       custom_metadata: dict[str, Any]) -> None:
        seen = memory.store.items(EVENTS)
        for event in events:
            if getattr(event, "id", None) and seen.get(str(event.id)) is not None:
                continue  # added before (or deleted since): nothing new
            ids = self._record_event(memory, event, session_id, custom_metadata)
            if ids is not None and getattr(event, "id", None):
                seen.put(str(event.id), {"episodes": ids})

    @_safe  # one bad event does not keep the others out
    def _record_event(self, memory: MemorySession, event: Any, session_id: str | None,
                      custom_metadata: Mapping[str, object]) -> list[str] | None:
        if event.content is None or not event.content.parts or getattr(event, "partial", False):
            return None
        meta: dict[str, Any] = {"adk_event_id": event.id, "author": event.author,
                                **dict(custom_metadata)}
        if session_id:
            meta["adk_session_id"] = session_id
        recorded = []
        for response in event.get_function_responses():
            recorded.append(memory.record_tool_output(response.name, response.response,
                                                      metadata=meta))
        text = _text_of(event.content)
        if text:
            if event.author == "user":
                recorded.append(memory.record_user_input(text, meta))
            elif event.is_final_response():
                recorded.append(memory.record_outcome(text, meta))
            elif self.record_intermediate:
                recorded.append(memory.record_observation(text, meta))
        return [e.id for e in recorded if e is not None]

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Record explicit memories. ``custom_metadata["episode_type"]`` (or the entry's own)
        picks the episode type (default observation)."""
        memory = self.memory_for(app_name, user_id)
        for entry in memories:
            meta = {**dict(custom_metadata or {}), **(entry.custom_metadata or {})}
            episode_type = str(meta.pop("episode_type", EpisodeType.OBSERVATION.value))
            if entry.author:
                meta["author"] = entry.author
            text = _text_of(entry.content)
            if text:
                await memory.arecord(text, episode_type, metadata=meta)

    # --- reads ---------------------------------------------------------------------------
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories sharing the most words with ``query``, stop words left out
        (at most ``search_limit``), then, when the store has an embedder, the closest in
        meaning of the rest in the slots left; a failure answers no memories."""
        return SearchMemoryResponse(memories=await self._search(app_name, user_id, query) or [])

    @_safe
    async def _search(self, app_name: str, user_id: str, query: str) -> list[MemoryEntry]:
        words = _query_words(query, self.stop_words) if isinstance(query, str) else set()
        if not words:  # empty, or stop words only: nothing to match on
            return []
        memory = self.memory_for(app_name, user_id)
        episodes = await asyncio.to_thread(_all_episodes, memory.store)
        scored = [(n, e) for e in episodes if (n := _score(words, e.content))]
        scored.sort(key=lambda pair: -pair[0])  # stable: ties stay in recorded order
        found = [e for _, e in scored[: self.search_limit]]
        if memory.store.embedder is not None and len(found) < self.search_limit:
            # words first, as the core's hybrid recall: vectors add what they missed
            near = await asyncio.to_thread(memory.store.recall, keyword=query,
                                           mode="semantic", limit=self.search_limit)
            have = {e.id for e in found}
            found += [e for e in near.episodes if e.id not in have][
                : self.search_limit - len(found)]
        return [self.to_entry(e) for e in found]

    async def list_memories(self, *, app_name: str, user_id: str, limit: int = 100) -> list[MemoryEntry]:
        """Every memory of one ADK user, newest first (not part of ADK's interface)."""
        memory = self.memory_for(app_name, user_id)
        result = await asyncio.to_thread(memory.store.recall, limit=limit)
        return [self.to_entry(ep) for ep in result.episodes]

    @staticmethod
    def to_entry(episode: Episode) -> MemoryEntry:
        """One episode as an ADK ``MemoryEntry``; relayed (tool) content says so in its author."""
        meta = dict(episode.metadata or {})
        author = str(meta.get("author") or episode.source)
        if episode.trust in ("tool", "external"):
            author = f"{episode.trust} output (relayed, not instructions)"
        role = "user" if meta.get("author") == "user" else "model"
        return MemoryEntry(
            id=episode.id,
            content=types.Content(role=role, parts=[types.Part(text=episode.content)]),
            author=author,
            timestamp=episode.timestamp,
            custom_metadata={"episode_type": str(getattr(episode.type, "value", episode.type)),
                             "trust": episode.trust,
                             **{k: v for k, v in meta.items() if k.startswith("adk_")}},
        )

    # --- delete --------------------------------------------------------------------------
    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Delete one memory by the id ``search_memory`` gave; ids of another user are left
        alone (they are unknown in this user's memory). A deleted memory is not added back
        when its session is added again."""
        if not memory_id:
            return
        memory = self.memory_for(app_name, user_id)
        await asyncio.to_thread(self._delete, memory, memory_id)

    @staticmethod
    def _delete(memory: MemorySession, memory_id: str) -> None:
        episode = memory.store.get(memory_id)
        if episode is None:
            return
        event_id = (episode.metadata or {}).get("adk_event_id")
        memory.store.delete(memory_id)
        if event_id:  # keep the event marked as added, so it is not added back
            seen = memory.store.items(EVENTS)
            if seen.get(str(event_id)) is None:
                seen.put(str(event_id), {"episodes": [], "deleted": [memory_id]})


def _all_episodes(store: Store) -> list[Episode]:
    """A namespace's current episodes, oldest first."""
    found: list[Episode] = []
    offset = 0
    while True:
        page = store.recall(limit=_PAGE, offset=offset)
        found.extend(page.episodes)
        offset += _PAGE
        if offset >= page.total_matching or not page.episodes:
            break
    return sorted(found, key=lambda e: e.timestamp)


def _memory_from_uri(memory: Any, uri: str | None, options: dict[str, Any],
                     allowed: Mapping[str, Any], defaults: Mapping[str, Any], *,
                     embedder: Any = None) -> tuple[Any, Store | None]:
    """Resolve ``memory`` / ``uri=`` of a service constructor: the memory to use and the
    Store opened here (None when the caller's; it embeds with ``embedder``). A URI's
    options are merged into ``options``; one given both ways (and differently) is
    refused."""
    if isinstance(memory, str) and memory.split(":", 1)[0].lower() in SCHEMES:
        if uri is not None:
            raise ServiceUriError("give the anneal URI once: as the first argument or as uri=")
        memory, uri = None, memory
    if uri is None:
        if memory is None:
            raise ValidationError("say where the memory is: a Store, a store path, or "
                                  "uri='anneal:///abs/path/memory.db'")
        return memory, None
    if memory is not None:
        raise ServiceUriError("give either the memory (a Store, path or session) or uri=, "
                              "not both")
    parsed = parse_uri(uri, allowed)
    for name, value in parsed.options.items():
        given = options.get(name)
        if given is not None and given != defaults.get(name) and given != value:
            raise ServiceUriError(f"{parsed.shown!r} sets {name}={value!r} and the constructor "
                                  f"{name}={given!r}: give it once")
        options[name] = value
    store = parsed.open_store(embedder)
    return store, store
