"""Run/agent hooks, the instructions helper and the run config that put an OpenAI Agents
SDK agent on a :class:`MemorySession`.

Hook map (the SDK's hooks are all coroutines; the store's work runs off the event loop):

- ``instructions(base)``: the agent's instructions callable, evaluated on every model call:
  the base instructions, then the memory block (continuity + recall for the latest user
  message; never that message itself) as a labelled data section.
- ``run_config()``: a ``RunConfig`` whose ``call_model_input_filter`` moves that block out
  of the instructions into a user message just before the newest user message, for that
  model call only (``memory_role="user"``, the default). Without it the block stays in
  the instructions (and a warning says so once).
- ``on_agent_start`` / ``on_start``: record the user's message.
- ``on_tool_end``: record the tool's result with ``trust="tool"``.
- ``on_agent_end`` / ``on_end``: record the final output as the outcome; wrap when
  ``wrap_on_end``, with ``compress`` or the agent's own model.

Identity: every hook and instructions call acts in the memory of its run: ``namespace=``
(a mapping, a ``MemoryNamespace`` or a callable of the SDK's ``RunContextWrapper``), else
the namespace of the run's :class:`AnnealSession`, else the store as it is. The SDK lets a
hook exception abort the run; every hook here logs instead (unless ``strict``).
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agents import Agent, AgentHooks, RunConfig, RunContextWrapper, RunHooks, Runner

from anneal_memory import Store
from anneal_memory.adapters import (
    MEMORY_LABEL,
    Compress,
    hook_guard,
    label_memory,
    options_except,
)
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

from ._items import item_text, latest_user_text
from ._session import AnnealSession, SessionMemory, session_of_run

LOGGER_NAME = "anneal_memory.adapters.openai_agents"
_log = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)

Instructions = str | Callable[[RunContextWrapper[Any], Agent[Any]], "str | Awaitable[str]"] | None


def model_compressor(model: Any) -> Compress:
    """A compressor that runs the wrap prompt through a bare agent on ``model``.

    The bare agent has no hooks and no memory instructions, so the wrap is not itself
    recorded or recalled. ``model`` is whatever ``Agent(model=...)`` accepts.
    """

    async def compress(prompt: str) -> str:
        wrapper = Agent(name="anneal-memory-wrap", model=model)
        result = await Runner.run(wrapper, prompt, max_turns=1)
        return str(result.final_output or "")

    return compress


def split_memory(instructions: str | None) -> tuple[str | None, str]:
    """(instructions without the memory block, the labelled block) of instructions that
    :meth:`AnnealMemory.instructions` made."""
    if not instructions:
        return instructions, ""
    at = instructions.rfind("\n\n" + MEMORY_LABEL)
    if at >= 0:
        return instructions[:at], instructions[at + 2:]
    if instructions.startswith(MEMORY_LABEL):
        return None, instructions
    return instructions, ""


class AnnealMemory(SessionMemory):
    """Anneal memory for OpenAI Agents SDK agents.

    ``memory`` is a :class:`~anneal_memory.Store`, a store path (opened and owned:
    :meth:`close` closes it) or a ready :class:`~anneal_memory.session.MemorySession`
    (then the session options go to it). Use :meth:`instructions` for recall, pass
    :meth:`run_config` (memory as a user message) and attach :attr:`run_hooks` to
    ``Runner.run(..., hooks=...)`` or :attr:`agent_hooks` to ``Agent(hooks=...)`` (both is
    harmless: recording is de-duplicated). Give each conversation an :class:`AnnealSession`
    (``memory.conversation(session_id)``) and each run's memory is that session's.
    ``wrap_on_end`` defaults to ``False``: call :meth:`wrap` / :meth:`awrap` when the
    conversation ends.
    """

    framework = "openai-agents"
    extra = "openai-agents"
    logger_name = LOGGER_NAME

    memory_options = options_except("project_name")

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 record_user_input: bool = True, record_tools: bool = True,
                 record_outcome: bool = True, options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        self._init_memory(memory, options, **keywords)
        self.record_user_input = record_user_input
        self.record_tools = record_tools
        self.record_outcome = record_outcome
        self._last_model: Any = None
        #: per run (the id of its Usage): the agent's model, and the events already seen
        #: (run hooks and agent hooks fire the same event at once)
        # keyed by a run's id(); each entry holds the run's object, so that id cannot
        # name a later run while the entry lives (a freed run's id is reused at once)
        self._run_models: OrderedDict[int, tuple[Any, Any]] = OrderedDict()
        self._events: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._warned = False
        self.run_hooks: RunHooks[Any] = _RunHooks(self)
        self.agent_hooks: AgentHooks[Any] = _AgentHooks(self)

    # --- identity -------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """The namespace of the run's :class:`AnnealSession` (when it is in this store)."""
        session = session_of_run(context)
        if session is not None and session.belongs_to(self.base_session.store):
            return session.namespace
        return None

    def conversation(self, session_id: str, **options: Any) -> Any:
        """An :class:`AnnealSession` for ``session_id`` in this memory's store (its
        namespace: this memory's fixed ``namespace=``, else ``{"user": session_id}``)."""
        return AnnealSession(session_id, self, **options)

    # --- recall ---------------------------------------------------------------------
    def instructions(self, base: Instructions = None) -> Callable[..., Awaitable[str]]:
        """An ``Agent(instructions=...)`` callable: ``base`` then the memory block."""

        async def with_memory(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            text = base(ctx, agent) if callable(base) else (base or "")
            if inspect.isawaitable(text):
                text = await text
            block = await self._block(ctx)
            return "\n\n".join(part for part in (str(text), block) if part)

        return with_memory

    @_safe
    async def _block(self, ctx: RunContextWrapper[Any]) -> str:
        session = self.session_for(ctx)
        # the turns the model already receives (a Session's history is in turn_input) are
        # not recalled back into the block
        transcript = [item_text(i) for i in ctx.turn_input or [] if not isinstance(i, str)]
        return label_memory(await session.amemory_block(
            latest_user_text(ctx.turn_input) or None, transcript=transcript))

    def run_config(self, base: RunConfig | None = None, **fields: Any) -> RunConfig:
        """``base`` (or a new ``RunConfig(**fields)``) whose model input filter puts the
        memory block in a user message (``memory_role="user"``); a filter already set
        runs first."""
        config = dataclasses.replace(base, **fields) if base is not None else RunConfig(**fields)
        previous = config.call_model_input_filter

        async def memory_filter(data: Any) -> Any:
            if previous is not None:
                result = previous(data)
                data = dataclasses.replace(data, model_data=await result
                                           if inspect.isawaitable(result) else result)
            return self._move_memory(data)

        config.call_model_input_filter = memory_filter
        return config

    def _move_memory(self, data: Any) -> Any:
        model_data = data.model_data
        if self.memory_role != "user":
            return model_data
        instructions, block = split_memory(model_data.instructions)
        if not block:
            return model_data
        items = list(model_data.input)
        at = next((i for i in range(len(items) - 1, -1, -1)
                   if isinstance(items[i], dict) and items[i].get("role") == "user"), 0)
        items.insert(at, {"role": "user", "content": block})
        return dataclasses.replace(model_data, input=items, instructions=instructions)

    def _check_channel(self, system_prompt: str | None) -> None:
        if self.memory_role == "user" and not self._warned and system_prompt \
                and MEMORY_LABEL in system_prompt:
            self._warned = True
            _log.warning("anneal-memory: memory_role='user' but the memory is in the "
                         "instructions: pass run_config=memory.run_config() to Runner.run")

    # --- recording (called by the hooks) ----------------------------------------------
    def _first(self, context: Any, *event: Any) -> bool:
        """True the first time a run reports ``event`` (checked before any await, so the
        run hooks and the agent hooks of one event record it once)."""
        run = getattr(context, "usage", context)
        key = (id(run), *event)
        if self._events.get(key) is run:
            return False
        self._events[key] = run  # held: its id names no other run while the key lives
        while len(self._events) > 4096:
            self._events.popitem(last=False)
        return True

    def _seen_model(self, context: Any, agent: Agent[Any]) -> None:
        if agent.model is None:
            return
        self._last_model = agent.model
        run = getattr(context, "usage", context)
        self._run_models[id(run)] = (run, agent.model)
        while len(self._run_models) > 1024:
            self._run_models.popitem(last=False)

    @_safe
    async def _started(self, context: Any, agent: Agent[Any]) -> None:
        self._seen_model(context, agent)
        query = latest_user_text(getattr(context, "turn_input", None))
        if self.record_user_input and query and self._first(context, "start", id(agent), query):
            await self.session_for(context).arecord_user_input(query)

    @_safe
    async def _tool_ended(self, context: Any, tool: Any, result: Any) -> None:
        name = getattr(tool, "name", type(tool).__name__)
        if self.record_tools and self._first(context, "tool", name, str(result)):
            await self.session_for(context).arecord_tool_output(name, result)

    @_safe
    async def _ended(self, context: Any, agent: Agent[Any], output: Any) -> None:
        self._seen_model(context, agent)
        if not self._first(context, "end", id(agent)):
            return
        session = self.session_for(context)
        if self.record_outcome and output is not None:
            await session.arecord_outcome(output)
        await self.aend_run(session, context)

    # --- the wrap ---------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Compress | None:
        """The model of the run's agent (outside a run: of the last agent that ran; the
        SDK's default model when it named none)."""
        usage = getattr(context, "usage", None)
        held = self._run_models.get(id(usage)) if usage is not None else None
        model = held[1] if held is not None and held[0] is usage else self._last_model
        return model_compressor(model)


class _Forward:
    """What run hooks and agent hooks share: both forward to the memory."""

    def __init__(self, memory: AnnealMemory) -> None:
        self._memory = memory

    async def on_llm_start(self, context: Any, agent: Agent[Any], system_prompt: Any,
                           input_items: Any) -> None:
        self._memory._check_channel(system_prompt)

    async def on_tool_end(self, context: Any, agent: Agent[Any], tool: Any, result: Any) -> None:
        await self._memory._tool_ended(context, tool, result)


class _RunHooks(_Forward, RunHooks[Any]):
    async def on_agent_start(self, context: Any, agent: Agent[Any]) -> None:
        await self._memory._started(context, agent)

    async def on_agent_end(self, context: Any, agent: Agent[Any], output: Any) -> None:
        await self._memory._ended(context, agent, output)


class _AgentHooks(_Forward, AgentHooks[Any]):
    async def on_start(self, context: Any, agent: Agent[Any]) -> None:
        await self._memory._started(context, agent)

    async def on_end(self, context: Any, agent: Agent[Any], output: Any) -> None:
        await self._memory._ended(context, agent, output)
