"""Anneal memory through the Microsoft Agent Framework's context provider pipeline.

The framework's memory seam is ``Agent(context_providers=[...])``: every provider's
``before_run`` runs before the model is called (front to back) and its ``after_run`` after
the run (back to front), once per ``agent.run()``. Two providers translate it:

- :class:`AnnealContextProvider` (the memory): ``before_run`` resolves the run's memory
  (``namespace=``, else the run's ``options["user"]``, the end-user id of the framework's
  ``ChatOptions``; an empty or invisible id stops the run with
  :class:`~anneal_memory.errors.IdentityError` before any model call), records the
  user's request and adds the continuity and the recall for it as one labelled message of
  data (``context.extend_messages``: a ``user`` message by default, as the framework's
  Mem0 provider adds its memories). ``after_run`` records the run's tool results
  (``trust="tool"``) and its answer (``outcome``), then wraps with ``wrap_on_end``.
- :class:`AnnealHistoryProvider` (the transcript): a framework ``HistoryProvider`` whose
  messages live in the store's ``agent_framework.history`` item collection, one
  conversation per ``AgentSession.session_id`` in the run's namespace: sessions and
  memory share one database. Items are framework state: never recalled or wrapped.

The framework's providers are async only; the store's work runs off the event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import os
import secrets
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agent_framework import ContextProvider, HistoryProvider, Message

from anneal_memory import Store
from anneal_memory.adapters import (
    Compress,
    MemoryAdapter,
    check_identity,
    from_item_value,
    hook_guard,
    identity,
    item_value,
    label_memory,
    options_except,
)
from anneal_memory.errors import IdentityError, ValidationError
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.agent_framework"
_log = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)

#: the item collection the history provider keeps transcripts in
COLLECTION = "agent_framework.history"

#: where a run's identity is read from (named by refusals)
USER_SOURCE = "the run's options['user']"
SESSION_SOURCE = "the AgentSession's session_id"


@dataclasses.dataclass
class RunContext:
    """What a ``namespace=`` callable receives for one run: the agent, its
    ``AgentSession``, the framework's ``SessionContext`` and the ``run(options=...)``
    dict. Build one to name a run's memory outside it:
    ``memory.wrap(context=RunContext(options={"user": "alice"}))``."""

    agent: Any = None
    session: Any = None
    context: Any = None
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def session_id(self) -> str | None:
        """The run's ``AgentSession.session_id`` (None outside a run)."""
        return getattr(self.session, "session_id", None)

    @property
    def user(self) -> Any:
        """The run's ``options["user"]`` (None when not given)."""
        return self.options.get("user") if isinstance(self.options, Mapping) else None


def model_compressor(client: Any) -> Compress:
    """A compressor that sends the wrap prompt to a framework chat client as one plain
    request (``client.get_response``, outside any agent: no provider sees it as a turn)."""

    async def compress(prompt: str) -> str:
        response = await client.get_response([Message(role="user", contents=[prompt])])
        return str(response.text or "")

    return compress


def _run_context(agent: Any, session: Any, context: Any) -> RunContext:
    # a copy: the agent pops the chat options (``user`` among them) out of this dict
    # while it prepares the model call, so after_run would see them gone
    options = getattr(context, "options", None)
    return RunContext(agent=agent, session=session, context=context,
                      options=dict(options) if isinstance(options, Mapping) else {})


#: the history provider and the memory of the run whose framework hook is running: what
#: the hook's own ``get_messages`` / ``save_messages`` calls (session id only) read and write
_RUN_MEMORY: contextvars.ContextVar[tuple[Any, MemorySession] | None] = contextvars.ContextVar(
    "anneal_memory_agent_framework_history", default=None)


#: AgentSession -> {id of the root store: the memory its current run resolved}: what a
#: history provider driven per model call (``require_per_service_call_history_persistence``,
#: whose contexts carry no options) falls back on
_SESSION_MEMORY: weakref.WeakKeyDictionary[Any, dict[int, MemorySession]] = (
    weakref.WeakKeyDictionary())


def _root_id(owner: MemoryAdapter) -> int:
    store = owner.base_session.store
    return id(getattr(store, "parent", store))


def _remember(owner: MemoryAdapter, session: Any, memory: MemorySession) -> None:
    try:
        _SESSION_MEMORY.setdefault(session, {})[_root_id(owner)] = memory
    except TypeError:  # not weak-referenceable: nothing to fall back on
        pass


def _message_of(value: Any, key: str) -> Message:
    """The ``Message`` an item keeps: its ``to_dict()``, or (holding NaN or an infinity)
    that dict's JSON text as the framework's file history provider writes it (``NaN``,
    ``Infinity``); a value that is no message is refused with a ``ValidationError``."""
    data = from_item_value(value, f"history item {key!r}")
    if not isinstance(data, Mapping):
        raise ValidationError(f"history item {key!r} is not a stored message (not a mapping)")
    try:
        return Message.from_dict(dict(data))
    except (TypeError, ValueError, KeyError) as exc:
        raise ValidationError(f"history item {key!r} is not a valid Message: {exc}") from None


def _role(message: Any) -> str:
    role = getattr(message, "role", "")
    return str(getattr(role, "value", role))


def _input_text(messages: Sequence[Any] | None) -> str:
    """The text of the run's new user messages."""
    return "\n".join(m.text.strip() for m in messages or ()
                     if _role(m) == "user" and (m.text or "").strip())


def _check_session_id(session: Any) -> str | None:
    sid = getattr(session, "session_id", None)
    return None if sid is None else check_identity(sid, SESSION_SOURCE, "session")


def _namespace_of(owner: MemoryAdapter, run: RunContext) -> MemorySession:
    """The run's memory: the session id checked first, then ``namespace=`` / the run's
    ``options["user"]`` (an identity refusal reads and writes nothing)."""
    _check_session_id(run.session)
    return owner.session_for(run)


def _user_namespace(owner: MemoryAdapter, context: Any) -> Any:
    return identity(owner.identity_source, user=getattr(context, "user", None))


def _client_of(agent: Any) -> Any:
    client = getattr(agent, "client", None)
    return client if callable(getattr(client, "get_response", None)) else None


@dataclasses.dataclass
class _Run:
    """One run's memory, from ``before_run`` to ``after_run``."""

    session: MemorySession | None
    run: RunContext


# ---------------------------------------------------------------------- the memory
class AnnealContextProvider(MemoryAdapter, ContextProvider):
    """Anneal memory for an Agent Framework agent: pass it in ``context_providers=``
    (first, so its memory comes before the history in the model's input).

    ``memory`` is a :class:`~anneal_memory.Store`, a store path (opened and owned:
    :meth:`close` closes it) or a ready :class:`~anneal_memory.session.MemorySession`.
    Whose memory a run uses: ``namespace=`` (a mapping such as ``{"user": "alice"}``, a
    ``MemoryNamespace``, or a callable of the run's :class:`RunContext`), else the run's
    ``options={"user": ...}`` (``{"user": id}``), else the store's own memory (one user).
    The ``AgentSession``'s id is checked by the same identity rule and recorded on each
    episode. ``wrap_on_end`` (default ``False``) wraps after every run (the framework has
    no session end); otherwise call :meth:`wrap` / :meth:`awrap` when a conversation
    ends. ``compress`` defaults to the agent's own chat client. ``memory_role`` is the
    role of the memory message (``"user"``, or ``"system"``).
    """

    framework = "agent-framework-core"
    extra = "agent-framework"
    logger_name = LOGGER_NAME
    identity_source = USER_SOURCE

    memory_options = options_except("project_name")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 source_id: str = "anneal_memory", record_user_input: bool = True,
                 record_tools: bool = True, record_outcome: bool = True,
                 options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        if not isinstance(source_id, str) or not source_id.strip():
            raise ValidationError("source_id must be a non-empty string")
        ContextProvider.__init__(self, source_id)
        self._init_memory(memory, options, **keywords)
        self.record_user_input = bool(record_user_input)
        self.record_tools = bool(record_tools)
        self.record_outcome = bool(record_outcome)
        self._runs: weakref.WeakKeyDictionary[Any, _Run] = weakref.WeakKeyDictionary()
        self._client: Any = None

    def __repr__(self) -> str:
        return f"AnnealContextProvider({self.base_session.store!r})"

    # ------------------------------------------------------------------ identity
    def default_namespace(self, context: Any) -> Any:
        """``{"user": options["user"]}`` of the run (None when the run names no user)."""
        return _user_namespace(self, context)

    def framework_compressor(self, context: Any = None) -> Compress | None:
        client = _client_of(getattr(context, "agent", None)) or self._client
        return model_compressor(client) if client is not None else None

    def history_provider(self, **options: Any) -> AnnealHistoryProvider:
        """An :class:`AnnealHistoryProvider` over this memory (same store, same
        ``namespace=``): list it after this provider in ``context_providers``."""
        return AnnealHistoryProvider(self.base_session, namespace=self._anneal.namespace,
                                     **options)

    # ------------------------------------------------------------------ the hooks
    async def before_run(self, *, agent: Any, session: Any, context: Any,
                         state: dict[str, Any]) -> None:
        """The run's memory resolved, its request recorded, its memory added as one
        labelled message of data in front of the input."""
        run = _run_context(agent, session, context)
        self._client = _client_of(agent) or self._client
        memory = self.run_session(resolve=lambda: _namespace_of(self, run))
        self._runs[context] = _Run(session=memory, run=run)
        if memory is not None:
            _remember(self, session, memory)
            await self._recall(memory, run)

    def _meta(self, run: RunContext) -> dict[str, Any]:
        sid = run.session_id
        return {"maf_session_id": sid} if sid else {}

    @_safe
    async def _recall(self, memory: MemorySession, run: RunContext) -> None:
        context = run.context
        query = _input_text(getattr(context, "input_messages", None))
        if self.record_user_input and query:
            await memory.arecord_user_input(query, metadata=self._meta(run))
        block = await memory.amemory_block(query or None)
        if block:
            context.extend_messages(self, [Message(role=self.memory_role,
                                                   contents=[label_memory(block)])])

    @_safe
    async def after_run(self, *, agent: Any, session: Any, context: Any,
                        state: dict[str, Any]) -> None:
        """The run's tool results and answer recorded, then the wrap if asked."""
        current = self._runs.pop(context, None)
        if current is None or current.session is None:
            return
        memory, meta = current.session, self._meta(current.run)
        messages = list(getattr(getattr(context, "response", None), "messages", None) or ())
        if self.record_tools:
            calls: dict[str, Any] = {}
            for message in messages:
                for content in getattr(message, "contents", None) or ():
                    kind = getattr(content, "type", None)
                    if kind == "function_call" and content.call_id:
                        calls[str(content.call_id)] = content
                    elif kind == "function_result" and not getattr(content, "exception", None):
                        call = calls.get(str(content.call_id))
                        result = getattr(content, "result", None)
                        if result is None:
                            continue
                        await memory.arecord_tool_output(
                            getattr(call, "name", None) or "tool", result,
                            arguments=getattr(call, "arguments", None), metadata=meta)
        if self.record_outcome:
            answer = next((m.text for m in reversed(messages)
                           if _role(m) == "assistant" and (m.text or "").strip()), "")
            if answer:
                await memory.arecord_outcome(answer, metadata=meta)
        await self.aend_run(memory, current.run)


# ---------------------------------------------------------------------- the history
class AnnealHistoryProvider(MemoryAdapter, HistoryProvider):
    """The conversation history of each ``AgentSession`` in the store's database (a
    framework ``HistoryProvider``: with it, the agent adds no in-memory history).

    Messages are kept exactly (``Message.to_dict()``) in the ``agent_framework.history``
    item collection of the run's namespace (``namespace=``, else the run's
    ``options["user"]``, else the store's own), one conversation per
    ``session.session_id``, in order; so one user's sessions are never listed or loaded
    by another. The flags (``load_messages``, ``store_inputs``, ``store_outputs``,
    ``store_context_messages``, ``store_context_from``) are the framework's.
    ``max_messages`` keeps only the newest that many messages per session (as the
    framework's Redis history provider does); ``skip_excluded`` leaves out of what is
    loaded the messages marked ``additional_properties["_excluded"]`` (as the framework's
    in-memory and file providers do). A message holding NaN or an infinity is kept and
    loaded back with it, as the framework's file provider keeps it. Outside a run,
    :meth:`get_messages`, :meth:`save_messages` and :meth:`clear` take ``namespace=``
    (else this provider's fixed namespace).
    """

    framework = "agent-framework-core"
    extra = "agent-framework"
    logger_name = LOGGER_NAME
    identity_source = USER_SOURCE

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 source_id: str = "anneal_history", namespace: Any = None,
                 load_messages: bool = True, store_inputs: bool = True,
                 store_context_messages: bool = False,
                 store_context_from: set[str] | None = None, store_outputs: bool = True,
                 skip_excluded: bool = False, max_messages: int | None = None) -> None:
        if not isinstance(source_id, str) or not source_id.strip():
            raise ValidationError("source_id must be a non-empty string")
        if max_messages is not None and (isinstance(max_messages, bool) or not isinstance(
                max_messages, int) or max_messages < 1):
            raise ValidationError("max_messages must be a whole number >= 1 (or None)")
        HistoryProvider.__init__(self, source_id, load_messages=load_messages,
                                 store_inputs=store_inputs,
                                 store_context_messages=store_context_messages,
                                 store_context_from=store_context_from,
                                 store_outputs=store_outputs)
        self._init_memory(memory, namespace=namespace)
        self.skip_excluded = bool(skip_excluded)
        self.max_messages = max_messages
        self._runs: weakref.WeakKeyDictionary[Any, MemorySession] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"AnnealHistoryProvider({self.base_session.store!r})"

    def default_namespace(self, context: Any) -> Any:
        """``{"user": options["user"]}`` of the run (None when the run names no user)."""
        return _user_namespace(self, context)

    # ------------------------------------------------------------------ storage
    @staticmethod
    def _prefix(session_id: str | None) -> str:
        sid = "default" if session_id is None else check_identity(session_id, SESSION_SOURCE,
                                                                  "session")
        return quote(sid, safe="") + "/"

    def _load(self, memory: MemorySession, session_id: str | None) -> list[Message]:
        items = memory.store.items(COLLECTION).list(prefix=self._prefix(session_id))
        messages = [_message_of(item.value, item.key) for item in items]
        if self.skip_excluded:
            messages = [m for m in messages
                        if not (m.additional_properties or {}).get("_excluded", False)]
        return messages

    def _save(self, memory: MemorySession, session_id: str | None,
              messages: Sequence[Message]) -> None:
        if not messages:
            return
        prefix = self._prefix(session_id)
        values = [(item_value(m.to_dict()), _role(m)) for m in messages]
        # one transaction under the store's lock: a save lands whole or not at all, and
        # two saves to one session at once never interleave their messages
        with memory.store.batch():
            collection = memory.store.items(COLLECTION)
            for value, role in values:
                collection.put(f"{prefix}{time.time_ns():020d}-{secrets.token_hex(4)}", value,
                               metadata={"session_id": session_id or "default", "role": role})
            if self.max_messages is not None:
                for item in collection.list(prefix=prefix, order="desc",
                                            offset=self.max_messages):
                    collection.delete(item.key)

    def _memory_of(self, namespace: Any) -> MemorySession:
        if namespace is None:
            current = _RUN_MEMORY.get()
            if current is not None and current[0] is self:
                return current[1]
        return self.session_for(None, namespace=namespace)

    # ------------------------------------------------------------------ the framework's API
    async def get_messages(self, session_id: str | None, *, state: dict[str, Any] | None = None,
                           namespace: Any = None, **kwargs: Any) -> list[Message]:
        """The messages of ``session_id``, oldest first."""
        memory = self._memory_of(namespace)
        return await asyncio.to_thread(self._load, memory, session_id)

    async def save_messages(self, session_id: str | None, messages: Sequence[Message], *,
                            state: dict[str, Any] | None = None, namespace: Any = None,
                            **kwargs: Any) -> None:
        """Append ``messages`` to the history of ``session_id``."""
        memory = self._memory_of(namespace)
        await asyncio.to_thread(self._save, memory, session_id, list(messages))

    async def clear(self, session_id: str | None, *, namespace: Any = None) -> int:
        """Remove the history of ``session_id``; how many messages went."""
        memory = self._memory_of(namespace)
        return await asyncio.to_thread(memory.store.items(COLLECTION).delete_prefix,
                                       self._prefix(session_id))

    # ------------------------------------------------------------------ the hooks
    def _run_memory(self, agent: Any, session: Any, context: Any) -> MemorySession:
        """The memory of this run: the one resolved at its ``before_run``, else (a
        per-model-call context, without the run's options) the one the run's
        context provider resolved for this session, else resolved now."""
        found = self._runs.get(context)
        if found is not None:
            return found
        if not getattr(context, "options", None) and session is not None:
            try:
                known = _SESSION_MEMORY.get(session, {}).get(_root_id(self))
            except TypeError:
                known = None
            if known is not None:
                return known
        memory = _namespace_of(self, _run_context(agent, session, context))
        self._runs[context] = memory
        return memory

    async def before_run(self, *, agent: Any, session: Any, context: Any,
                         state: dict[str, Any]) -> None:
        """The session's history, in front of the new input, loaded by the framework's
        own ``HistoryProvider.before_run`` from this run's memory (identity refused:
        raised; any other failure to resolve the run's memory loads nothing, logged)."""
        try:
            memory = self._run_memory(agent, session, context)
        except IdentityError:
            raise
        except Exception as exc:
            if self.base_session.strict:
                raise
            _log.warning("anneal-memory: no history for this run: %s", exc)
            return
        if session is not None:
            _remember(self, session, memory)
        await self._as_framework(memory, HistoryProvider.before_run, agent=agent,
                                 session=session, context=context, state=state)

    @_safe
    async def after_run(self, *, agent: Any, session: Any, context: Any,
                        state: dict[str, Any]) -> None:
        """The run's input and response appended, as the framework's own
        ``HistoryProvider.after_run`` and its flags choose them."""
        memory = self._run_memory(agent, session, context)
        self._runs.pop(context, None)
        await self._as_framework(memory, HistoryProvider.after_run, agent=agent,
                                 session=session, context=context, state=state)

    @_safe
    async def _as_framework(self, memory: MemorySession, hook: Any, **arguments: Any) -> None:
        """Run the framework's base ``hook`` with this run's memory behind
        :meth:`get_messages` / :meth:`save_messages` (its calls carry only the session id)."""
        token = _RUN_MEMORY.set((self, memory))
        try:
            await hook(self, **arguments)
        finally:
            _RUN_MEMORY.reset(token)
