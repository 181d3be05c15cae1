"""Run/agent hooks and the instructions helper that put an agent on a :class:`MemorySession`.

Hook map (the SDK's hooks are all coroutines):

- ``instructions(base)``: the agent's instructions callable, evaluated on every model call:
  the base instructions, then the memory block (continuity + recall for the latest user
  message) as a labelled data section.
- ``on_agent_start`` / ``on_start``: record the user's message.
- ``on_tool_end``: record the tool's result with ``trust="tool"``.
- ``on_agent_end`` / ``on_end``: record the final output as the outcome; wrap when
  ``wrap_on_end``, with ``compress`` or the agent's own model.

The SDK lets a hook exception abort the run; every hook here logs instead (unless the
session is ``strict``).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, AgentHooks, RunContextWrapper, RunHooks, Runner

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, hook_guard
from anneal_memory.session import MemorySession, WrapOutcome

from .items import latest_user_text

LOGGER_NAME = "anneal_memory.adapters.openai_agents"
_safe = hook_guard(LOGGER_NAME)

#: prompt -> continuity markdown, sync or async
Compress = Callable[[str], "str | Awaitable[str]"]
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


class AnnealMemory:
    """Anneal memory for OpenAI Agents SDK agents.

    ``memory`` is a :class:`~anneal_memory.Store`, a store path (opened and owned:
    ``memory.session.close()`` closes it) or a ready
    :class:`~anneal_memory.session.MemorySession` (then the session options go to it). Attach :attr:`run_hooks` to
    ``Runner.run(..., hooks=...)`` or :attr:`agent_hooks` to ``Agent(hooks=...)`` (both is
    harmless: recording is de-duplicated) and use :meth:`instructions` for recall.
    ``wrap_on_end`` defaults to ``False``: call :meth:`wrap` when the conversation ends.
    """

    def __init__(self, memory: Store | MemorySession | str | os.PathLike[str], *,
                 wrap_on_end: bool = False, compress: Compress | None = None,
                 record_user_input: bool = True, record_tools: bool = True,
                 record_outcome: bool = True, recall_limit: int | None = None,
                 max_content_chars: int | None = None, session_id: str | None = None,
                 crystal_store: Any = None, strict: bool | None = None) -> None:
        attach_memory(self, memory, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      session_id=session_id, crystal_store=crystal_store,
                      recall_limit=recall_limit, max_content_chars=max_content_chars,
                      strict=strict)
        self.record_user_input = record_user_input
        self.record_tools = record_tools
        self.record_outcome = record_outcome
        self._last_model: Any = None
        self.run_hooks: RunHooks[Any] = _RunHooks(self)
        self.agent_hooks: AgentHooks[Any] = _AgentHooks(self)

    # --- recall ---------------------------------------------------------------------
    def instructions(self, base: Instructions = None) -> Callable[..., Awaitable[str]]:
        """An ``Agent(instructions=...)`` callable: ``base`` then the memory block."""

        async def with_memory(ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            text = base(ctx, agent) if callable(base) else (base or "")
            if inspect.isawaitable(text):
                text = await text
            block = self.memory_block(latest_user_text(ctx.turn_input))
            return "\n\n".join(part for part in (str(text), block) if part)

        return with_memory

    def memory_block(self, query: str) -> str:
        """Continuity + recall for ``query`` (never the request itself)."""
        return self.session.memory_block(query or None) or ""

    # --- recording (called by the hooks) ----------------------------------------------
    @_safe
    def _started(self, context: RunContextWrapper[Any], agent: Agent[Any]) -> None:
        if agent.model is not None:
            self._last_model = agent.model
        query = latest_user_text(context.turn_input)
        if self.record_user_input and query:
            self.session.record_user_input(query)

    @_safe
    def _tool_ended(self, tool: Any, result: Any) -> None:
        if self.record_tools:
            name = getattr(tool, "name", type(tool).__name__)
            self.session.record_tool_output(name, result)

    @_safe
    async def _ended(self, agent: Agent[Any], output: Any) -> None:
        if agent.model is not None:
            self._last_model = agent.model
        if self.record_outcome and output is not None:
            self.session.record_outcome(output)
        if self.wrap_on_end:
            await self.wrap()

    # --- the wrap ---------------------------------------------------------------------
    async def wrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Compress this session's episodes into the continuity.

        Uses ``compress``, else the constructor's ``compress``, else the model of the last
        agent that ran (the SDK's default model when that agent named none).
        Never raises unless ``strict``: a failed or refused wrap keeps every episode. The
        outcome is also kept on ``session.last_wrap``.
        """
        return await self.session.awrap_first(compress, self.compress,
                                              model_compressor(self._last_model))


class _RunHooks(RunHooks[Any]):
    def __init__(self, memory: AnnealMemory) -> None:
        self._memory = memory

    async def on_agent_start(self, context: Any, agent: Agent[Any]) -> None:
        self._memory._started(context, agent)

    async def on_tool_end(self, context: Any, agent: Agent[Any], tool: Any, result: Any) -> None:
        self._memory._tool_ended(tool, result)

    async def on_agent_end(self, context: Any, agent: Agent[Any], output: Any) -> None:
        await self._memory._ended(agent, output)


class _AgentHooks(AgentHooks[Any]):
    def __init__(self, memory: AnnealMemory) -> None:
        self._memory = memory

    async def on_start(self, context: Any, agent: Agent[Any]) -> None:
        self._memory._started(context, agent)

    async def on_tool_end(self, context: Any, agent: Agent[Any], tool: Any, result: Any) -> None:
        self._memory._tool_ended(tool, result)

    async def on_end(self, context: Any, agent: Agent[Any], output: Any) -> None:
        await self._memory._ended(agent, output)

