"""Anneal memory as an Agno ``MemoryManager``, with a pre-run and a post-run hook.

Agno's memory seam is the agent's ``memory_manager``: the agent reads the user's memories
once per run (``get_user_memories(user_id)``, while it builds the system prompt) and hands
the user's message to ``create_user_memories`` after. Neither call carries the run's
input or its session, so two hooks complete the translation:

- ``pre_hook`` (``apre_hook`` under ``arun``, whose store work runs off the event loop):
  resolves the run's memory from Agno's ``run_context`` (``user_id``, ``session_id``),
  refuses an empty or invisible id (:class:`AgnoIdentityError`, an input check error, the
  one error Agno lets stop a run from a hook), records the user's request and recalls
  for it: the continuity and the recalled episodes, as one labelled memory.
- ``get_user_memories`` inside that run answers that memory (Agno lists it in the system
  prompt under ``<memories_from_previous_interactions>``); outside a run it lists the
  user's stored memories, as Agno's own database-backed manager does.
- ``post_hook`` / ``apost_hook``: the run's tool results (``trust="tool"``) and its answer
  (``outcome``), then the wrap when ``wrap_on_end``.

The run's state lives in a context variable: concurrent runs (threads under ``run``,
tasks under ``arun``) of one agent never share a memory, a block or a wrap.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agno.exceptions import CheckTrigger, InputCheckError
from agno.memory import MemoryManager, UserMemory
from agno.memory.strategies import MemoryOptimizationStrategy
from agno.memory.strategies.types import (
    MemoryOptimizationStrategyFactory,
    MemoryOptimizationStrategyType,
)
from agno.models.base import Model
from agno.models.message import Message
from agno.run import RunContext

from anneal_memory import Store
from anneal_memory.adapters import (
    Compress,
    MemoryAdapter,
    check_identity,
    hook_guard,
    identity,
    label_memory,
    options_except,
)
from anneal_memory.errors import IdentityError, ValidationError
from anneal_memory.session import MemorySession

from ._db import AGNO_DEFAULT_USER, AnnealMemoryDb, to_user_memory

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.agno"
_log = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)

#: The id of the one UserMemory that carries a run's recalled memory.
BLOCK_MEMORY_ID = "anneal-memory"


class AgnoIdentityError(IdentityError, InputCheckError):
    """An identity refused inside an Agno run. Agno logs and swallows what a hook raises,
    except an input check error: this one stops the run before any model call (Agno
    returns its ``RunOutput`` with ``status=error`` and this message as its content)."""

    def __init__(self, message: str) -> None:
        IdentityError.__init__(self, message)
        InputCheckError.__init__(self, message, CheckTrigger.INPUT_NOT_ALLOWED)


def model_compressor(model: Model) -> Compress:
    """A compressor that sends the wrap prompt to ``model`` as one plain request (no
    agent run, so no hook of this adapter sees the wrap as a user turn)."""

    def compress(prompt: str) -> str:
        response = model.response(messages=[Message(role="user", content=prompt)])
        return str(response.content or "")

    return compress


@dataclass
class _Run:
    """One run's memory, set by the pre-hook."""

    session: MemorySession | None
    user_id: str | None
    session_id: str | None
    run_id: str | None
    block: str = ""


def _same_user(a: str | None, b: str | None) -> bool:
    return (a or AGNO_DEFAULT_USER) == (b or AGNO_DEFAULT_USER)


class AnnealMemory(MemoryAdapter, MemoryManager):
    """Anneal memory for Agno agents: pass it as ``memory_manager=`` and its hooks as
    ``pre_hooks=[memory.pre_hook]``, ``post_hooks=[memory.post_hook]`` (or
    ``apre_hook`` / ``apost_hook`` for an agent you only ``arun``).

    ``memory`` is a :class:`~anneal_memory.Store`, a store path (opened and owned:
    :meth:`close` closes it) or a ready :class:`~anneal_memory.session.MemorySession`.
    Whose memory a run uses: ``namespace=`` when given (a mapping, a ``MemoryNamespace``
    or a callable of Agno's ``RunContext``), else Agno's own ``user_id`` of the run
    (``{"user": user_id}``; the run's ``user_id`` falls back to ``Agent(user_id=)``).
    A run without one (None, ``""``, which Agno turns into None before any hook, or
    Agno's ``"default"`` user) gets what ``anonymous=`` says: the store's shared memory
    (``"shared"``, the default, for a one-user app), a refusal before the model runs
    (``"refuse"``, for a multi-user app: :class:`AgnoIdentityError`) or no memory
    (``"none"``). Agno's ``session_id`` is checked by the same identity rule and recorded
    on each episode. ``wrap_on_end`` (default ``False``) wraps after every run; otherwise
    call :meth:`wrap` / :meth:`awrap` when a conversation ends. ``compress`` defaults to
    the agent's model. ``model`` (else the agent's, which Agno hands its memory manager)
    is the one :meth:`optimize_memories` asks. ``db`` (and ``memory_db``) is an
    :class:`~anneal_memory.adapters.agno.AnnealMemoryDb` over the same memory.
    """

    framework = "agno"
    extra = "agno"
    logger_name = LOGGER_NAME
    identity_source = "Agno's user_id"
    #: Agno's seam puts memories in the system prompt; the block is labelled as data
    default_memory_role = "system"

    memory_options = options_except("memory_role", "project_name")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 model: Model | str | None = None, record_user_input: bool = True,
                 record_tools: bool = True, record_outcome: bool = True,
                 options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        MemoryManager.__init__(self, model=model, id="anneal-memory", name="anneal-memory")
        self._init_memory(memory, options, **keywords)
        #: Agno's memory database over the store: Agno's own paths through ``self.db``
        #: (its memory tools, an app's db calls) use the same memories
        self.memory_db = AnnealMemoryDb(self._memory_or_none)
        self.db = self.memory_db
        self.record_user_input = bool(record_user_input)
        self.record_tools = bool(record_tools)
        self.record_outcome = bool(record_outcome)
        self._run_var: contextvars.ContextVar[_Run | None] = contextvars.ContextVar(
            f"anneal_agno_run_{id(self)}", default=None)
        self._last_model: Model | None = None

    # dataclass equality would compare the stores; two managers are the same one only
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"AnnealMemory({self.base_session.store!r})"

    # ------------------------------------------------------------------ identity
    def default_namespace(self, context: Any) -> Any:
        """``{"user": user_id}`` of Agno's run context; None for no user id or Agno's
        ``"default"`` user (the store's own memory)."""
        user = getattr(context, "user_id", None)
        if user is None or user == AGNO_DEFAULT_USER:
            return None
        return identity(self.identity_source, user=user)

    def _user_context(self, user_id: str | None) -> RunContext:
        """The run context an out-of-run call (the app's own ``get_user_memories``...)
        stands for: Agno's user id, no run, no session."""
        return RunContext(run_id="", session_id="", user_id=user_id)

    def _memory_or_none(self, user_id: str | None) -> MemorySession | None:
        """The memory a memory-manager call for ``user_id`` works on: the current run's
        when it is that user's, else that user's (as the run of that id would use); for
        no user (None or Agno's ``"default"``) the ``anonymous=`` policy's (None: no
        memory; ``"refuse"``: an IdentityError)."""
        state = self._run_var.get()
        if state is not None and _same_user(state.user_id, user_id):
            return state.session
        return self.resolve_session(self._user_context(user_id))

    # ------------------------------------------------------------------ the run hooks
    def _begin(self, run_context: RunContext | None, agent: Any) -> _Run:
        """The run's memory (identity checked first: a refusal reads and writes nothing)."""
        context = run_context or RunContext(run_id="", session_id="")
        model = getattr(agent, "model", None)
        if isinstance(model, Model):
            self._last_model = model
        def resolve() -> MemorySession | None:
            if context.session_id is not None:
                check_identity(context.session_id, "Agno's session_id", "session")
            return self.resolve_session(context)

        try:
            session = self.run_session(resolve=resolve)
        except IdentityError as exc:
            raise AgnoIdentityError(str(exc)) from exc
        state = _Run(session=session, user_id=context.user_id,
                     session_id=context.session_id, run_id=context.run_id)
        self._run_var.set(state)
        return state

    def _meta(self, state: _Run) -> dict[str, Any]:
        return {key: value for key, value in (("agno_session_id", state.session_id),
                                              ("agno_run_id", state.run_id)) if value}

    def pre_hook(self, run_input: Any, run_context: RunContext | None = None,
                 agent: Any = None, team: Any = None) -> None:
        """Agno pre-hook (of an ``Agent`` or a ``Team``): this run's memory, its request
        recorded, its recall made."""
        state = self._begin(run_context, agent or team)
        self._recall(state, _input_text(run_input))

    @_safe
    def _recall(self, state: _Run, text: str) -> None:
        if state.session is None:
            return
        if self.record_user_input and text:
            state.session.record_user_input(text, metadata=self._meta(state))
        state.block = state.session.memory_block(text or None)

    async def apre_hook(self, run_input: Any, run_context: RunContext | None = None,
                        agent: Any = None, team: Any = None) -> None:
        """Async :meth:`pre_hook` (for ``arun``): the store's work runs off the loop."""
        state = self._begin(run_context, agent or team)
        await self._arecall(state, _input_text(run_input))

    @_safe
    async def _arecall(self, state: _Run, text: str) -> None:
        if state.session is None:
            return
        if self.record_user_input and text:
            await state.session.arecord_user_input(text, metadata=self._meta(state))
        state.block = await state.session.amemory_block(text or None)

    def post_hook(self, run_output: Any, agent: Any = None, team: Any = None) -> None:
        """Agno post-hook: the run's tool results and answer, then the wrap if asked."""
        state = self._run_var.get()
        self._run_var.set(None)
        if state is not None and state.session is not None:
            self._end(state, run_output, agent or team)

    @_safe
    def _end(self, state: _Run, run_output: Any, agent: Any) -> None:
        session = state.session
        assert session is not None
        meta = self._meta(state)
        if self.record_tools:
            for tool in getattr(run_output, "tools", None) or ():
                if tool.result is not None and not tool.tool_call_error:
                    session.record_tool_output(tool.tool_name or "tool", tool.result,
                                               arguments=tool.tool_args, metadata=meta)
        answer = _answer(run_output)
        if self.record_outcome and answer:
            session.record_outcome(answer, metadata=meta)
        self.end_run(session, agent)

    async def apost_hook(self, run_output: Any, agent: Any = None, team: Any = None) -> None:
        """Async :meth:`post_hook` (for ``arun``)."""
        state = self._run_var.get()
        self._run_var.set(None)
        if state is not None and state.session is not None:
            await self._aend(state, run_output, agent or team)

    @_safe
    async def _aend(self, state: _Run, run_output: Any, agent: Any) -> None:
        session = state.session
        assert session is not None
        meta = self._meta(state)
        if self.record_tools:
            for tool in getattr(run_output, "tools", None) or ():
                if tool.result is not None and not tool.tool_call_error:
                    await session.arecord_tool_output(tool.tool_name or "tool", tool.result,
                                                      arguments=tool.tool_args, metadata=meta)
        answer = _answer(run_output)
        if self.record_outcome and answer:
            await session.arecord_outcome(answer, metadata=meta)
        await self.aend_run(session, agent)

    def framework_compressor(self, context: Any = None) -> Compress | None:
        model = getattr(context, "model", None)
        if not isinstance(model, Model):
            model = self._last_model or (self.model if isinstance(self.model, Model) else None)
        return model_compressor(model) if model is not None else None

    # ------------------------------------------------------------------ recall (Agno's read)
    def get_user_memories(self, user_id: str | None = None) -> list[UserMemory]:
        """In a run (after :meth:`pre_hook`): the run's memory as one labelled
        ``UserMemory`` (none when there is nothing to recall). Outside a run: every
        memory of ``user_id`` (oldest first), as Agno's own manager answers."""
        state = self._run_var.get()
        if state is not None and _same_user(state.user_id, user_id):
            if not state.block:
                return []
            return [UserMemory(memory=label_memory(state.block), memory_id=BLOCK_MEMORY_ID,
                               user_id=user_id or AGNO_DEFAULT_USER)]
        return self.memory_db.memories(user_id)

    async def aget_user_memories(self, user_id: str | None = None) -> list[UserMemory]:
        state = self._run_var.get()
        if state is not None and _same_user(state.user_id, user_id):
            return self.get_user_memories(user_id)
        return await asyncio.to_thread(self.memory_db.memories, user_id)

    def get_user_memory(self, memory_id: str, user_id: str | None = None) -> UserMemory | None:
        """One memory of ``user_id`` by id (None when it is not theirs)."""
        found = self.memory_db.find(memory_id, user_id)
        return to_user_memory(found, user_id) if found is not None else None

    def search_user_memories(self, query: str | None = None, limit: int | None = None,
                             retrieval_method: str | None = None,
                             user_id: str | None = None) -> list[UserMemory]:
        """Agno's search: ``"last_n"`` (default) the ``limit`` most recently updated,
        ``"first_n"`` the least, in order of ``updated_at`` as Agno returns them;
        ``"agentic"`` (a query required) the memories anneal's recall ranks for the
        query, best first (Agno asks its model)."""
        if retrieval_method == "agentic":
            if not query:
                raise ValueError("Query is required for agentic search")
            session = self._memory_or_none(user_id)
            if session is None:
                return []
            k = limit if limit is not None and limit > 0 else session.recall_limit
            ranked = [e.id for e in session.recall(query, k, context=False)]
            current = {e.id: e for e in self.memory_db.episodes(user_id)}
            return [to_user_memory(current[i], user_id) for i in ranked if i in current]
        memories = self.memory_db.memories(user_id)
        if retrieval_method == "first_n":
            memories.sort(key=lambda m: m.updated_at if m.updated_at is not None else 2**63)
            return memories[:limit] if limit is not None and limit > 0 else memories
        memories.sort(key=lambda m: m.updated_at if m.updated_at is not None else 0)
        return memories[-limit:] if limit is not None and limit > 0 else memories

    # ------------------------------------------------------------------ record (Agno's write)
    def create_user_memories(self, message: str | None = None,
                             messages: list[Message] | None = None, agent_id: str | None = None,
                             team_id: str | None = None, user_id: str | None = None,
                             run_metrics: Any = None) -> str:
        """Agno's write after a run's input (``update_memory_on_run=True``): the user's
        message as a ``context`` episode (its memory's ``input`` is the message), no model
        call: the wrap distils it later. With the pre-hook it has already been recorded,
        and the session records it once."""
        if not self.record_user_input:
            return "No memories recorded"
        texts = [message] if message else [
            m.get_content_string() for m in messages or () if m.role == "user"]
        session = self._write_session(user_id)
        if session is None:
            return "No memories recorded"
        recorded = [session.record_user_input(t) for t in texts if t and t.strip()]
        return "Memories recorded" if any(recorded) else "No memories recorded"

    async def acreate_user_memories(self, message: str | None = None,
                                    messages: list[Message] | None = None,
                                    agent_id: str | None = None, team_id: str | None = None,
                                    user_id: str | None = None, run_metrics: Any = None) -> str:
        return await asyncio.to_thread(self.create_user_memories, message, messages, agent_id,
                                       team_id, user_id, run_metrics)

    def _write_session(self, user_id: str | None) -> MemorySession | None:
        """The memory Agno's background write goes to. Under ``run`` it runs in Agno's
        worker thread, which does not see the run's state: with a namespace callable
        (which needs the run's context) the pre-hook's record stands alone."""
        state = self._run_var.get()
        if state is not None and _same_user(state.user_id, user_id):
            return state.session
        if callable(self._anneal.namespace):
            return None
        return self._memory_or_none(user_id)

    def add_user_memory(self, memory: UserMemory, user_id: str | None = None) -> str | None:
        """Add ``memory`` to ``user_id``'s memory (an ``observation``), as Agno's manager
        does: its own ``memory_id`` is kept (one the user already has is replaced), else
        one is set; ``user_id`` and ``updated_at`` (when unset) are set on ``memory``.
        Returns the id (None: no memory for this user, ``anonymous="none"``)."""
        memory.user_id = user_id or AGNO_DEFAULT_USER
        if self.memory_db.upsert_user_memory(memory) is None:
            return None
        return memory.memory_id

    def replace_user_memory(self, memory_id: str, memory: UserMemory,
                            user_id: str | None = None) -> str | None:
        """Replace ``user_id``'s memory ``memory_id`` with ``memory``, which keeps that id
        (a lookup by it finds the new text; its ``created_at`` stays). The old text is
        erased, as Agno overwrites it. Returns the id."""
        memory.memory_id = memory_id
        return self.add_user_memory(memory, user_id)

    def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> None:
        """Delete one of ``user_id``'s memories for good (another user's id: nothing)."""
        self.memory_db.delete_user_memory(memory_id, user_id)

    def clear_user_memories(self, user_id: str | None = None) -> None:
        """Delete every memory of ``user_id`` (their episodes; the continuity stays)."""
        ids = [m.memory_id for m in self.memory_db.memories(user_id) if m.memory_id]
        if ids:
            self.memory_db.delete_user_memories(ids, user_id)

    async def aclear_user_memories(self, user_id: str | None = None) -> None:
        await asyncio.to_thread(self.clear_user_memories, user_id)

    def clear(self) -> None:
        """Refused: Agno's ``clear()`` empties every user's memories at once."""
        raise ValidationError("AnnealMemory.clear() would erase every user's memory: clear "
                              "one user's with clear_user_memories(user_id), or erase a "
                              "namespace with Store.erase_namespace (CLI / console)")

    def update_memory_task(self, task: str, user_id: str | None = None) -> str:
        """Agno's agentic memory tool (``enable_agentic_memory``): the model's request is
        recorded as an ``observation`` of the user's memory; no model-driven edits."""
        session = self._memory_or_none(user_id)
        episode = None if session is None else session.record(
            task, "observation", metadata={"agno": "update_user_memory"})
        return "Memory recorded" if episode is not None else "Nothing new to record"

    async def aupdate_memory_task(self, task: str, user_id: str | None = None) -> str:
        return await asyncio.to_thread(self.update_memory_task, task, user_id)

    # ------------------------------------------------------------------ optimize
    def optimize_memories(self, user_id: str | None = None,
                          strategy: Any = MemoryOptimizationStrategyType.SUMMARIZE,
                          apply: bool = True) -> list[UserMemory]:
        """Agno's memory optimization on ``user_id``'s memories in the store: the strategy
        (default: summarize) runs with this manager's model (``model=``, or the agent's,
        which Agno hands its memory manager). With ``apply`` the optimized memories are
        recorded first and the ones they replace erased after. Returns them."""
        memories, strategy_of, model = self._optimize_inputs(user_id, strategy)
        if not memories:
            return []
        optimized = strategy_of.optimize(memories=memories, model=model)
        if apply:
            self._apply_optimized(user_id, memories, optimized)
        return list(optimized)

    async def aoptimize_memories(self, user_id: str | None = None,
                                 strategy: Any = MemoryOptimizationStrategyType.SUMMARIZE,
                                 apply: bool = True) -> list[UserMemory]:
        """Async :meth:`optimize_memories`: the model is awaited, the store's work runs
        off the event loop."""
        memories, strategy_of, model = await asyncio.to_thread(
            self._optimize_inputs, user_id, strategy)
        if not memories:
            return []
        optimized = await strategy_of.aoptimize(memories=memories, model=model)
        if apply:
            await asyncio.to_thread(self._apply_optimized, user_id, memories, optimized)
        return list(optimized)

    def _optimize_inputs(self, user_id: str | None, strategy: Any
                         ) -> tuple[list[UserMemory], Any, Model]:
        if isinstance(strategy, MemoryOptimizationStrategyType):
            strategy = MemoryOptimizationStrategyFactory.create_strategy(strategy)
        elif not isinstance(strategy, MemoryOptimizationStrategy):
            raise ValidationError("strategy must be a MemoryOptimizationStrategyType or a "
                                  f"MemoryOptimizationStrategy, not {type(strategy).__name__}")
        model = self.model if isinstance(self.model, Model) else self._last_model
        if model is None:
            raise ValidationError(
                "optimize_memories needs a model: AnnealMemory(store, model=...), or run the "
                "agent it is the memory_manager of once (Agno hands it the agent's model)")
        return self.memory_db.memories(user_id), strategy, model

    def _apply_optimized(self, user_id: str | None, before: list[UserMemory],
                         optimized: list[UserMemory]) -> None:
        kept = set()
        for memory in optimized:
            memory.user_id = user_id or AGNO_DEFAULT_USER
            self.memory_db.upsert_user_memory(memory)
            kept.add(memory.memory_id)
        gone = [m.memory_id for m in before if m.memory_id and m.memory_id not in kept]
        if gone:
            self.memory_db.delete_user_memories(gone, user_id)


def _input_text(run_input: Any) -> str:
    if run_input is None:
        return ""
    try:
        return str(run_input.input_content_string() or "").strip()
    except Exception:
        return ""


def _answer(run_output: Any) -> str:
    if str(getattr(getattr(run_output, "status", None), "value", "")) == "error":
        return ""
    content = getattr(run_output, "content", None)
    if content is None:
        return ""
    return content if isinstance(content, str) else str(content)
