"""Anneal memory through Strands Agents' own memory seam, the ``MemoryManager`` plugin.

:class:`AnnealMemory` *is* a ``strands.memory.MemoryManager`` (pass it as
``Agent(memory_manager=...)``) whose one store is this adapter's memory, plus the hooks the
memory seam does not see. Hook map:

- ``BeforeInvocationEvent``: the invocation's memory is resolved (``namespace=``, else the
  run's ``invocation_state["user_id"]``; an empty or invisible id stops the call with
  :class:`~anneal_memory.errors.IdentityError`), and the user's new input is recorded.
- the manager's injection (an ``InvokeModelStage.Input`` middleware, on every model call of
  the invocation by default): the store's ``search`` answers with the continuity and the
  episodes recalled for the invocation's input (one block, computed once per invocation),
  rendered as a labelled data section folded into the last user message *for that model call
  only* (never into ``agent.messages`` or a session file).
- ``search_memory`` (the manager's tool, on by default): the model searches this memory;
  each hit is a labelled line, relayed (tool) episodes marked.
- ``AfterToolCallEvent``: the tool's result, ``trust="tool"`` (not the memory's own tools).
- ``AfterInvocationEvent``: the answer as the outcome, and with ``wrap_on_end`` the wrap of
  the invocation's memory through the agent's own model.

A Strands ``MemoryStore`` receives no agent, user or session, so the invocation's memory is
carried in a context variable set by the ``BeforeInvocationEvent`` hook: each invocation
(a thread of its own for ``agent(...)``, a task for ``invoke_async``) sees only its own.

:class:`AnnealMemoryStore` is the same memory as a plain ``MemoryStore`` with one identity
per store instance (``namespace=``), for a ``MemoryManager`` you build yourself.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from strands.hooks import AfterInvocationEvent, AfterToolCallEvent, BeforeInvocationEvent
from strands.memory import InvocationTrigger, MemoryEntry, MemoryManager

from anneal_memory import Store
from anneal_memory.adapters import (
    Compress,
    MemoryAdapter,
    hook_guard,
    identity,
    label_memory,
    options_except,
)
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.strands"
_log = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)

# ---------------------------------------------------------------------- helpers
def _text_of(message: Mapping[str, Any] | None) -> str:
    """The text blocks of one Strands message (tool blocks, images... left out)."""
    if not message:
        return ""
    blocks = message.get("content") or []
    return "\n".join(str(b["text"]) for b in blocks if isinstance(b, Mapping) and "text" in b
                     ).strip()


def _is_tool_result(message: Mapping[str, Any]) -> bool:
    return any(isinstance(b, Mapping) and "toolResult" in b for b in message.get("content") or [])


def _latest_user_text(messages: Any) -> str:
    """The newest user message's text that is a request (not a tool result)."""
    for message in reversed(list(messages or [])):
        if message.get("role") == "user" and not _is_tool_result(message):
            return _text_of(message)
    return ""


def _tool_result_text(result: Any) -> str:
    """A Strands ``ToolResult``'s content as text (text blocks, then JSON blocks)."""
    if not isinstance(result, Mapping):
        return "" if result is None else str(result)
    parts: list[str] = []
    for block in result.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        if "text" in block:
            parts.append(str(block["text"]))
        elif "json" in block:
            parts.append(str(block["json"]))
    return "\n".join(parts)


def model_compressor(model: Any) -> Compress:
    """A compressor that sends the wrap prompt to a Strands ``Model`` as one plain request
    (``model.stream``, outside any agent: no hook or memory sees it as a turn)."""

    async def compress(prompt: str) -> str:
        chunks: list[str] = []
        async for event in model.stream([{"role": "user", "content": [{"text": prompt}]}]):
            delta = event.get("contentBlockDelta", {}).get("delta", {}) if isinstance(
                event, Mapping) else {}
            if "text" in delta:
                chunks.append(str(delta["text"]))
        return "".join(chunks)

    return compress


@dataclasses.dataclass
class RunContext:
    """What a ``namespace=`` callable receives for one invocation: the agent and the
    ``invocation_state`` of ``agent(..., invocation_state=...)``, and the new input's
    messages. Build one yourself to name a run's memory outside it:
    ``memory.wrap(context=RunContext(invocation_state={"user_id": "alice"}))``."""

    agent: Any = None
    invocation_state: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    messages: Any = None


@dataclasses.dataclass
class _Run:
    """One invocation's memory (kept in a context variable, per adapter)."""

    session: MemorySession | None
    context: RunContext
    query: str
    block: str | None = None
    injecting: bool = False


_RUNS: contextvars.ContextVar[Mapping[int, _Run] | None] = contextvars.ContextVar(
    "anneal_memory_strands_runs", default=None)


def _current(owner: object) -> _Run | None:
    return (_RUNS.get() or {}).get(id(owner))


def _set_current(owner: object, run: _Run | None) -> None:
    runs = dict(_RUNS.get() or {})
    if run is None:
        runs.pop(id(owner), None)
    else:
        runs[id(owner)] = run
    _RUNS.set(runs)


async def _recall_entries(session: MemorySession, query: str, limit: int | None,
                          store_name: str) -> list[MemoryEntry]:
    """Recall as Strands entries, one labelled line each (as Strands' reference store: a
    limit below 1 is a ValueError, an empty query finds nothing)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"max_search_results must be at least 1, not {limit!r}")
    if not isinstance(query, str) or not query.strip():
        return []
    items = await session.arecall_items(query, limit=limit)
    return [MemoryEntry(content=item, store_name=store_name) for item in items]


# ---------------------------------------------------------------------- the manager
class _RunStore:
    """The ``MemoryStore`` inside :class:`AnnealMemory`: the current invocation's memory.
    Read-only for the manager: recording is done by the adapter's hooks."""

    writable = False
    extraction = None

    def __init__(self, owner: AnnealMemory, name: str, description: str,
                 max_search_results: int | None) -> None:
        self.owner = owner
        self.name = name
        self.description = description
        self.max_search_results = max_search_results

    async def search(self, query: str, options: Mapping[str, Any] | None = None
                     ) -> list[MemoryEntry]:
        owner = self.owner
        run = _current(owner)
        if run is None:  # outside an invocation: the adapter's own memory
            limit = (options or {}).get("max_search_results")
            return await _recall_entries(owner.session, query, limit, self.name)
        if run.session is None:
            return []
        if run.injecting:  # the manager's injection for a model call of this invocation
            run.injecting = False
            if run.block is None:
                run.block = await run.session.amemory_block(run.query or None) or ""
            if not run.block:
                return []
            return [MemoryEntry(content=run.block, store_name=self.name)]
        limit = (options or {}).get("max_search_results")
        return await _recall_entries(run.session, query, limit, self.name)


class AnnealMemory(MemoryAdapter, MemoryManager):
    """Anneal memory for a Strands agent, as its memory manager.

    ``memory`` is a :class:`~anneal_memory.Store`, a store path (opened and owned:
    :meth:`close` closes it) or a ready :class:`~anneal_memory.session.MemorySession`.
    Whose memory an invocation uses: ``namespace=`` (a mapping such as
    ``{"user": "alice"}``, a ``MemoryNamespace``, or a callable of the invocation's
    :class:`RunContext`), else the invocation's ``invocation_state["user_id"]`` (the
    ``user`` of the namespace), else the store's own memory (one user). ``wrap_on_end``
    (default ``False``) wraps after every invocation; otherwise call :meth:`wrap` /
    :meth:`awrap` at the conversation's end. ``compress`` defaults to the agent's model.
    ``inject`` is the manager's injection trigger: ``"everyTurn"`` (default: every model
    call of the invocation, tool-result turns too) or ``"userTurn"`` (Strands' default).
    ``search_tool`` keeps the manager's ``search_memory`` tool (``True``), renames it (a
    ``MemoryToolConfig``) or drops it (``False``).
    """

    framework = "strands-agents"
    extra = "strands"
    logger_name = LOGGER_NAME
    identity_source = "invocation_state['user_id']"
    name = "anneal-memory"

    memory_options = options_except("memory_role", "project_name")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 record_user_input: bool = True, record_tools: bool = True,
                 record_outcome: bool = True, inject: Any = "everyTurn",
                 search_tool: Any = True, store_name: str = "anneal",
                 options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        opts = self._memory_options(options, keywords)
        if inject not in ("everyTurn", "userTurn") and not callable(inject):
            raise ValidationError("inject must be 'everyTurn', 'userTurn' or a predicate of "
                                  f"Strands' InjectionContext, not {inject!r}")
        if not isinstance(store_name, str) or not store_name.strip():
            raise ValidationError("store_name must be a non-empty string")
        self._init_memory(memory, opts)
        self.record_user_input = bool(record_user_input)
        self.record_tools = bool(record_tools)
        self.record_outcome = bool(record_outcome)
        self._model: Any = None
        store = _RunStore(self, store_name, "Long-term memory of this user from earlier "
                          "sessions (anneal-memory)", opts.recall_limit)
        MemoryManager.__init__(self, stores=[store], search_tool_config=search_tool,
                               add_tool_config=False,
                               injection={"trigger": inject, "query": self._injection_query,
                                          "format": self._injection_format})
        self._own_tools = {getattr(t, "tool_name", None) for t in self.tools}

    # ------------------------------------------------------------------ identity
    def default_namespace(self, context: Any) -> Any:
        """The invocation's ``invocation_state["user_id"]`` as the namespace's user."""
        state = getattr(context, "invocation_state", None)
        if not isinstance(state, Mapping):
            return None
        return identity(f"the run's {self.identity_source}", user=state.get("user_id"))

    def framework_compressor(self, context: Any = None) -> Compress | None:
        model = getattr(getattr(context, "agent", None), "model", None) or self._model
        return model_compressor(model) if model is not None else None

    # ------------------------------------------------------------------ wiring
    async def init_agent(self, agent: Any) -> None:
        """The manager's own wiring (store, injection, tools), then this adapter's hooks."""
        wired = MemoryManager.init_agent(self, agent)
        if inspect.isawaitable(wired):  # async since strands-agents 1.5x, sync before
            await wired
        self._model = getattr(agent, "model", None)
        agent.add_hook(self._before_invocation, BeforeInvocationEvent)
        agent.add_hook(self._after_tool, AfterToolCallEvent)
        agent.add_hook(self._after_invocation, AfterInvocationEvent)

    # ------------------------------------------------------------------ hooks
    async def _before_invocation(self, event: BeforeInvocationEvent) -> None:
        messages = getattr(event, "messages", None)
        context = RunContext(agent=event.agent,
                             invocation_state=getattr(event, "invocation_state", None) or {},
                             messages=messages)
        query = _latest_user_text(messages) or _latest_user_text(
            getattr(event.agent, "messages", None))
        _set_current(self, None)
        session = self.run_session(context)
        run = _Run(session=session, context=context, query=query)
        _set_current(self, run)
        if session is not None and self.record_user_input and query:
            await self._record_input(session, query)

    @_safe
    async def _record_input(self, session: MemorySession, query: str) -> None:
        await session.arecord_user_input(query)

    @_safe
    async def _after_tool(self, event: AfterToolCallEvent) -> None:
        run = _current(self)
        if run is None or run.session is None or not self.record_tools:
            return
        use = event.tool_use or {}
        name = str(use.get("name") or "tool")
        if name in self._own_tools:
            return  # the memory's own search: recording it would feed memory to itself
        output = _tool_result_text(event.result)
        if output:
            await run.session.arecord_tool_output(name, output, arguments=use.get("input"))

    @_safe
    async def _after_invocation(self, event: AfterInvocationEvent) -> None:
        run = _current(self)
        _set_current(self, None)
        if run is None or run.session is None:
            return
        result = getattr(event, "result", None)
        if self.record_outcome and result is not None:
            text = _text_of(getattr(result, "message", None))
            if text:
                await run.session.arecord_outcome(text)
        await self.aend_run(run.session, run.context)

    # ------------------------------------------------------------------ injection
    def _injection_query(self, context: Any) -> str | None:
        run = _current(self)
        if run is None:
            return _latest_user_text(getattr(context, "messages", None)) or None
        if run.session is None:
            return None
        run.injecting = True  # the next search of this invocation is the injection's
        return run.query or " ".join(_latest_user_text(context.messages).split()) or "memory"

    def _injection_format(self, context: Any) -> str:
        # one entry: the invocation's block (continuity + recall), opened by the data label
        return label_memory("\n\n".join(e.content for e in context.entries if e.content))


# ---------------------------------------------------------------------- a plain store
class AnnealMemoryStore(MemoryAdapter):
    """This memory as a Strands ``MemoryStore`` for a ``MemoryManager`` of your own.

    A store receives no agent, user or session, so its identity is the instance's:
    ``namespace=`` a mapping or ``MemoryNamespace`` (one store per user), or none (the
    store's own memory). ``search`` is recall (labelled lines, relayed episodes marked);
    ``add`` records an observation (the manager's ``add_memory`` tool, or your code);
    ``add_messages`` records a batch of the conversation (user requests as input,
    assistant text as the outcome, tool results with ``trust="tool"`` when the manager's
    filter keeps them). With ``writable`` (default) the store asks the manager for
    extraction after every invocation (``InvocationTrigger``) unless ``extraction`` says
    otherwise.
    """

    framework = "strands-agents"
    extra = "strands"
    logger_name = LOGGER_NAME

    memory_options = options_except("wrap_on_end", "memory_role", "project_name", "embedder")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 name: str = "anneal",
                 description: str | None = "Long-term memory from earlier sessions "
                                           "(anneal-memory)",
                 max_search_results: int | None = None, writable: bool = True,
                 extraction: Any = None, options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        opts = self._memory_options(options, keywords)
        if callable(opts.namespace):
            raise ValidationError(
                "AnnealMemoryStore's namespace is fixed per store (a Strands MemoryStore "
                "receives no run context): pass a mapping or MemoryNamespace, or use "
                "AnnealMemory for an identity per invocation")
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name must be a non-empty string")
        self._init_memory(memory, opts)
        self.name = name
        self.description = description
        self.max_search_results = max_search_results
        self.writable = bool(writable)
        if extraction is None:
            extraction = {"trigger": InvocationTrigger()} if self.writable else False
        self.extraction = extraction

    async def search(self, query: str, options: Mapping[str, Any] | None = None
                     ) -> list[MemoryEntry]:
        """Recall for ``query``: each hit one labelled line (Strands' ``search``)."""
        limit = (options or {}).get("max_search_results")
        if limit is None:
            limit = self.max_search_results
        return await _recall_entries(self.session, query, limit, self.name)

    async def add(self, content: str, metadata: Mapping[str, Any] | None = None) -> Any:
        """Record ``content`` as an observation; the episode's id (None: a duplicate)."""
        episode = await self.session.arecord_observation(content, metadata=metadata)
        return None if episode is None else episode.id

    async def add_messages(self, messages: list[Any], context: Any = None) -> int:
        """Record a batch of messages; how many episodes were written."""
        session = self.session
        written = 0
        tools: dict[str, str] = {}  # toolUseId -> the tool's name, from the toolUse blocks
        for message in messages or []:
            role = message.get("role")
            for block in message.get("content") or []:
                if not isinstance(block, Mapping):
                    continue
                episode = None
                if "toolUse" in block:
                    use = block["toolUse"]
                    tools[str(use.get("toolUseId"))] = str(use.get("name") or "tool")
                elif "toolResult" in block:
                    result = block["toolResult"]
                    episode = await session.arecord_tool_output(
                        tools.get(str(result.get("toolUseId")), "tool"),
                        _tool_result_text(result))
                elif "text" in block and role == "user":
                    episode = await session.arecord_user_input(str(block["text"]))
                elif "text" in block and role == "assistant":
                    episode = await session.arecord_outcome(str(block["text"]))
                written += episode is not None
        return written
