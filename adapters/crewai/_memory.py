"""``AnnealCrewMemory``: a CrewAI ``Memory`` whose recall and remember are anneal's.

CrewAI's agent loop calls ``recall(task.description)`` before each task (the matches are
appended to the task prompt as "Relevant memories") and ``extract_memories`` +
``remember_many`` after it. Both go to the core session of the scope's memory here,
without CrewAI's LLM analysis, its embedder or LanceDB.

- Scopes: ``recall`` honours ``scope`` (and the memory's ``root_scope``), ``categories``,
  ``source`` and ``include_private`` as CrewAI's own recall does; ``memory.scope("/user/bob")``
  is bob's memory (see :mod:`._scope` for which scopes name a user).
- The agent loop's task summary (``Task: ... Result: ...``) is remembered as two episodes,
  once, in the same thread right after the task: the request (``context``) and the result
  (the CrewAI record, ``outcome``). The request is recorded after its recall ran, so a task
  is never recalled back into its own prompt.
- :class:`AnnealStorage` answers list, forget, update, reset and the scope views through
  the core item API.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from crewai.memory.memory_scope import MemoryScope
from crewai.memory.types import MemoryMatch, MemoryRecord
from crewai.memory.unified_memory import Memory
from pydantic import PrivateAttr

from anneal_memory import ScoredEpisode, Store
from anneal_memory.adapters import (
    MemoryAdapter,
    MemoryOptions,
    hook_guard,
    open_session,
    options_except,
)
from anneal_memory.session import MemorySession, WrapOutcome, render_item

from . import _scope
from ._storage import META_KEY, AnnealStorage

LOGGER_NAME = "anneal_memory.adapters.crewai"
logger = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)

Compress = Callable[[str], "str | Awaitable[str]"]

#: CrewAI's task summary (crewai.agents.agent_builder.base_agent_executor._save_to_memory)
_SUMMARY = re.compile(r"\ATask: (?P<task>.*?)\nAgent: .*?\nExpected result: .*?\nResult: "
                      r"(?P<result>.*)\Z", re.S)


def model_compressor(llm: Any) -> Compress:
    """A compressor that sends the wrap prompt to a CrewAI LLM as one user message."""

    def compress(prompt: str) -> str:
        return str(llm.call([{"role": "user", "content": prompt}]))

    return compress


class AnnealMemoryScope(MemoryScope):
    """``memory.scope(path)``: CrewAI's scoped view, which can also end a kickoff of its
    own memory (``Crew(memory=view, after_kickoff_callbacks=[view.after_kickoff])``)."""

    def _anneal_memory(self) -> AnnealCrewMemory:
        memory = getattr(self, "_memory", None)  # crewai < 1.14 has no _require_memory()
        if not isinstance(memory, AnnealCrewMemory):
            raise RuntimeError("this scope is not bound to an AnnealCrewMemory")
        return memory

    def after_kickoff(self, output: Any) -> Any:
        self._anneal_memory()._end_kickoff(self._root or "/")
        return output

    def list_records(self, scope: str | None = None, limit: int = 200,
                     offset: int = 0) -> list[MemoryRecord]:
        """The records of this scope (or of ``scope`` under it), newest first."""
        return self._anneal_memory().list_records(scope=self._scope_path(scope), limit=limit,
                                                  offset=offset)

    @property
    def session(self) -> MemorySession:
        """The core session of this scope's memory."""
        return self._anneal_memory().session_for(self._root or "/")


class AnnealCrewMemory(MemoryAdapter, Memory):
    """Anneal memory for a crew: ``Crew(memory=AnnealCrewMemory(store, llm=my_llm))``.

    ``llm`` (CrewAI's own memory-LLM field) is the default compressor of the wrap;
    ``compress`` overrides it. ``wrap_on_end`` (default ``False``) makes
    :meth:`after_kickoff` (add it to ``Crew(after_kickoff_callbacks=[...])``) wrap the
    kickoff's memory; otherwise call :meth:`wrap`. ``episode_type`` is the type given to
    what is remembered directly. ``memory`` is a Store, a store path (opened and owned:
    :meth:`close` closes it) or a MemorySession (then the session options go to it).
    ``namespace`` overrides the scope tree's identity: a mapping or ``MemoryNamespace``,
    or a callable of the scope path. ``embedder`` (CrewAI's own field: a callable or a
    provider config dict, built with CrewAI's ``build_embedder``) is the Store's embedder,
    so recall is by meaning too: with a store path the Store opened embeds with it; a
    Store or session given must already have it (else ``EmbedderError``). A scope naming an empty or invisible user or tenant
    (``/user/``, ``/user//x``, ``/user/\u200b``) is refused (``IdentityError``).
    """

    framework: ClassVar[str] = "crewai"
    extra: ClassVar[str] = "crewai"
    logger_name: ClassVar[str] = LOGGER_NAME

    _anneal: Any = PrivateAttr(default=None)
    _episode_type: str = PrivateAttr(default="observation")
    _last_scope: str = PrivateAttr(default="/")

    #: the shared options this constructor takes as keywords (``embedder`` is CrewAI's
    #: own field; the other keywords are CrewAI's ``Memory`` fields)
    memory_options: ClassVar[tuple[str, ...]] = options_except(
        "memory_role", "project_name", "embedder")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 episode_type: str = "observation", options: MemoryOptions | None = None,
                 **fields: Any) -> None:
        opts = self._memory_options(
            options, {k: fields.pop(k) for k in self.memory_options if k in fields})
        session_options = opts.session_options()
        session_options["embedder"] = _store_embedder(fields.get("embedder", opts.embedder))
        session = open_session(memory, LOGGER_NAME, **session_options)
        try:
            # A storage object keeps CrewAI from building its default LanceDB store.
            fields.setdefault("storage", AnnealStorage(
                session.store, episode_type=episode_type,
                memory_of=lambda scope: self.session_for(scope)))
            super().__init__(**fields)
            self._init_memory(session, MemoryOptions(
                namespace=opts.namespace, compress=opts.compress, wrap_on_end=opts.wrap_on_end,
                anonymous=opts.anonymous))
        except Exception:
            session.close()
            raise
        self._episode_type = episode_type
        # CrewAI's root scope recalls its whole scope tree (its sub-scopes are the
        # namespaces of /user/... paths): that one session reads every namespace
        session.reads_all_namespaces = True

    # --- identity -------------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """The tenant / user the scope path names (``/user/bob/...``)."""
        return _scope.identity_of(context) if isinstance(context, str) else None

    def _effective(self, scope: str | None, root: str | None = None) -> str:
        base = root if root is not None else self.root_scope
        _scope.check_owner_ids(scope)
        _scope.check_owner_ids(base)
        return _scope.join(base, scope) if scope is not None else _scope.normalize(base)

    def scope(self, path: str) -> AnnealMemoryScope:
        """CrewAI's scoped view of this memory (the memory of ``path``). A path naming an
        empty or invisible owner (``/user/``) is an IdentityError, now."""
        _scope.check_owner_ids(path)
        return AnnealMemoryScope(memory=self, root_path=path)

    # --- what the agent loop calls ----------------------------------------------------
    def recall(self, query: str, scope: str | None = None, categories: list[str] | None = None,
               limit: int = 10, depth: str = "deep", source: str | None = None,
               include_private: bool = False) -> list[MemoryMatch]:
        """The continuity first, then anneal's recall for ``query`` within the scope, as
        labelled items (relayed tool/external ones marked), scored by rank."""
        path = self._effective(scope)
        self._last_scope = path
        return self._recall(query, path, categories or None, limit, source, include_private) or []

    @_safe
    def _recall(self, query: str, path: str, categories: list[str] | None, limit: int,
                source: str | None, include_private: bool) -> list[MemoryMatch]:
        session = self.session_for(path)
        matches: list[MemoryMatch] = []
        continuity = session.start()
        if continuity:
            matches.append(MemoryMatch(record=MemoryRecord(content=continuity, scope=path),
                                       score=1.0, match_reasons=["continuity"]))
        found: list[tuple[ScoredEpisode, dict[str, Any]]] = []
        for hit in session.recall(query, limit=max(limit * 5, 25)):
            full = session.store.get(hit.id)  # the scope and record fields live in metadata
            meta = dict(full.metadata or {}) if full is not None else {}
            if _visible(meta, path, categories, source, include_private):
                found.append((hit, meta))
            if len(found) == limit:
                break
        ordered = [f for f in found if f[0].trust not in ("tool", "external")] + \
            [f for f in found if f[0].trust in ("tool", "external")]
        for rank, (episode, full_meta) in enumerate(ordered):
            meta = dict(full_meta.get(META_KEY) or {})
            record = MemoryRecord(content=render_item(episode).removeprefix("- "),
                                  id=str(meta.get("id") or episode.id),
                                  scope=str(meta.get("scope") or path),
                                  categories=list(meta.get("categories") or []),
                                  source=meta.get("source"), private=bool(meta.get("private")))
            matches.append(MemoryMatch(record=record, score=1.0 - rank / len(ordered),
                                       match_reasons=["anneal recall"]))
        return matches

    def extract_memories(self, content: str) -> list[str]:
        """No LLM extraction: the content is remembered as it is (a task summary is split
        into its request and result when it is remembered)."""
        return [content] if content and content.strip() else []

    def remember(self, content: str, scope: str | None = None,
                 categories: list[str] | None = None, metadata: dict[str, Any] | None = None,
                 importance: float | None = None, source: str | None = None,
                 private: bool = False, agent_role: str | None = None,
                 root_scope: str | None = None) -> MemoryRecord | None:
        """Keep ``content`` as a CrewAI record of its scope and remember it as an episode
        of that scope's memory (a task summary: its request, then its result)."""
        if self.read_only or not content or not content.strip():
            return None
        path = self._effective(scope, root_scope)
        self._last_scope = path
        session = self.session_for(path)
        episode_type = self._episode_type
        summary = _SUMMARY.match(content.strip())
        if summary:
            session.record_user_input(summary.group("task").strip(), {"crewai_scope": path})
            result = summary.group("result")
            if "Final Answer:" in result:  # the ReAct text of the loop's last step
                result = result.rsplit("Final Answer:", 1)[1]
            content, episode_type = result.strip(), "outcome"
        record = MemoryRecord(
            content=content, scope=path, categories=categories or [],
            metadata={**(metadata or {}), **({"agent_role": agent_role} if agent_role else {})},
            importance=self.default_importance if importance is None else importance,
            source=source, private=private)
        storage = self._storage
        assert isinstance(storage, AnnealStorage)
        return storage.remember(record, episode_type=episode_type, session=session)

    def remember_many(self, contents: list[str], scope: str | None = None,
                      categories: list[str] | None = None, metadata: dict[str, Any] | None = None,
                      importance: float | None = None, source: str | None = None,
                      private: bool = False, agent_role: str | None = None,
                      root_scope: str | None = None) -> list[MemoryRecord]:
        records = [self.remember(c, scope, categories, metadata, importance, source, private,
                                 agent_role, root_scope) for c in contents]
        return [r for r in records if r is not None]

    def update(self, record_id: str, content: str | None = None, scope: str | None = None,
               categories: list[str] | None = None, metadata: dict[str, Any] | None = None,
               importance: float | None = None) -> MemoryRecord:
        """Replace a record's fields. A record whose content changes loses its embedding
        (it was the old text's; this memory does not run CrewAI's embedder)."""
        existing = self._storage.get_record(record_id)
        if existing is None:
            raise ValueError(f"no memory record with id {record_id!r}: list_records() shows them")
        if self.read_only:
            return existing
        changes = {k: v for k, v in {"content": content, "scope": scope, "categories": categories,
                                     "metadata": metadata, "importance": importance}.items()
                   if v is not None}
        if content is not None and content != existing.content:
            changes["embedding"] = None
        updated = existing.model_copy(update=changes)
        self._storage.update(updated)
        return updated

    def drain_writes(self) -> None:
        """Writes are synchronous here: nothing is pending."""

    # --- the wrap --------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Compress | None:
        """This memory's ``llm`` (CrewAI's own model), when one can be made."""
        try:
            return model_compressor(self._llm)
        except Exception as exc:  # e.g. no API key for CrewAI's default memory LLM
            if self.base_session.strict:
                raise
            logger.warning("anneal-memory: no model for the wrap: %s", exc)
            return None

    def wrap(self, compress: Compress | None = None, *, scope: str | None = None,  # type: ignore[override]
             context: Any = None, namespace: Any = None) -> WrapOutcome:
        """Compress one scope's memory into its continuity (default: the scope this
        memory last worked in). A failed wrap loses nothing."""
        if context is None and namespace is None:
            context = _scope.normalize(scope) if scope is not None else self._last_scope
        return super().wrap(compress, context=context, namespace=namespace)

    def after_kickoff(self, output: Any) -> Any:
        """A ``Crew(after_kickoff_callbacks=[...])`` callback: with ``wrap_on_end``, wrap
        the memory the kickoff worked in. Returns ``output`` unchanged (the result is
        already remembered, once, by the agent loop)."""
        self._end_kickoff(self._last_scope)
        return output

    @_safe
    def _end_kickoff(self, path: str) -> None:
        # resolved even without a wrap: CrewAI swallows a recall's or a save's error, so a
        # refused identity (IdentityError) surfaces here, at the kickoff's end
        session = self.session_for(path)
        if self._anneal.wrap_on_end:
            from crewai.events import crewai_event_bus

            crewai_event_bus.flush(timeout=30.0)  # pending tool records join this wrap
            self.end_run(session)

    def close(self) -> None:
        """Close the store if this memory opened it (from a path)."""
        MemoryAdapter.close(self)


def _store_embedder(embedder: Any) -> Any:
    """CrewAI's ``embedder`` field as the Store takes it (a provider config dict is built
    with CrewAI's own factory, as its Memory does)."""
    if isinstance(embedder, dict):
        from crewai.rag.embeddings.factory import build_embedder

        return build_embedder(embedder)  # type: ignore[arg-type]
    return embedder


def _visible(meta: dict[str, Any], path: str, categories: list[str] | None,
             source: str | None, include_private: bool) -> bool:
    """CrewAI's recall filters on one episode's metadata: scope, categories, privacy."""
    record = meta.get(META_KEY) or {}
    where = record.get("scope") or meta.get("crewai_scope") or "/"
    if not _scope.within(where, path):
        return False
    if categories and not set(categories) & set(record.get("categories") or []):
        return False
    if record.get("private") and not include_private:
        return source is not None and record.get("source") == source
    return True

