"""An ``AgentMiddleware`` that gives a ``create_agent`` agent anneal memory.

Hook map (sync and async twins of each):

- ``before_agent``: builds the memory block (continuity + recall for the user's request)
  once per run, and records the request.
- ``wrap_model_call``: adds that block to the system message of the model request only;
  the agent's state and checkpoints never contain it.
- ``after_model``: records the model's text that accompanies tool calls (``record_steps``).
- ``wrap_tool_call``: records each tool result with ``trust="tool"``.
- ``after_agent``: records the final answer; with ``wrap_on_end`` wraps through the
  agent's own model (or ``compress``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, hook_guard
from anneal_memory.adapters.langchain.messages import (
    chat_model_acompress,
    chat_model_compress,
    message_text,
)
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.langgraph"

Compress = Callable[[str], "str | Awaitable[str]"]

_safe = hook_guard(LOGGER_NAME)


def _latest_human(messages: list[Any]) -> HumanMessage | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


class AnnealMiddleware(AgentMiddleware):
    """anneal memory for ``create_agent(model, tools, middleware=[AnnealMiddleware(store)])``.

    ``store`` is a Store, a store path or a :class:`MemorySession`.
    Options: ``session_id`` (the wrap baton's session id), ``wrap_on_end`` (default
    False: each ``invoke`` is usually one turn of a longer conversation, so call
    :meth:`wrap` / :meth:`awrap` at the session's end; True wraps after every run),
    ``compress`` (prompt -> continuity; default: the agent's own model),
    ``record_tools``, ``record_steps``, ``recall_limit``, ``max_content_chars``.
    """

    def __init__(
        self,
        store: Store | MemorySession | str | os.PathLike[str],
        *,
        session_id: str | None = None,
        wrap_on_end: bool = False,
        compress: Compress | None = None,
        record_tools: bool = True,
        record_steps: bool = True,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
    ) -> None:
        super().__init__()
        attach_memory(self, store, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      session_id=session_id, recall_limit=recall_limit,
                      max_content_chars=max_content_chars)
        self.record_tools = record_tools
        self.record_steps = record_steps
        self._model: BaseChatModel | None = None
        # memory block per user message id: one recall per run, not one per model call
        self._blocks: dict[str, str] = {}

    # -- run start -------------------------------------------------------------------
    @_safe
    def before_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        human = _latest_human(state["messages"])
        query = message_text(human)
        block = self.session.memory_block(query or None)
        if human is not None and human.id:
            self._blocks[human.id] = block
        if query:
            self.session.record_user_input(query)
        return None

    async def abefore_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    # -- model calls -----------------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._with_memory(request) or request)

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        return await handler(self._with_memory(request) or request)

    @_safe
    def _with_memory(self, request: ModelRequest) -> ModelRequest | None:
        self._model = request.model
        human = _latest_human(request.messages)
        block = self._blocks.get(human.id) if human is not None and human.id else None
        if block is None:  # before_agent did not run for this message (e.g. a resumed run)
            block = self.session.memory_block(message_text(human) or None)
        if not block:
            return None
        current = request.system_prompt or ""
        combined = f"{current}\n\n{block}" if current else block
        if hasattr(request, "system_message"):
            return request.override(system_message=SystemMessage(content=combined))
        return request.override(system_prompt=combined)  # langchain < 1.1: a plain string

    @_safe
    def after_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        last = state["messages"][-1] if state["messages"] else None
        if self.record_steps and isinstance(last, AIMessage) and last.tool_calls:
            text = message_text(last)
            if text:
                self.session.record_observation(text, metadata={"event": "model_step"})
        return None

    async def aafter_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    # -- tools -----------------------------------------------------------------------
    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        self._record_tool(request, result)
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        self._record_tool(request, result)
        return result

    @_safe
    def _record_tool(self, request: Any, result: Any) -> None:
        if not self.record_tools or not isinstance(result, ToolMessage):
            return
        call = request.tool_call
        self.session.record_tool_output(str(call.get("name") or "tool"), message_text(result),
                                        arguments=call.get("args") or None)

    # -- run end ---------------------------------------------------------------------
    @_safe
    def after_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        self._finish(state)
        if self.wrap_on_end:
            self.wrap()
        return None

    @_safe
    async def aafter_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        self._finish(state)
        if self.wrap_on_end:
            await self.awrap()
        return None

    def _finish(self, state: AgentState) -> None:
        messages = state["messages"]
        human = _latest_human(messages)
        if human is not None and human.id:
            self._blocks.pop(human.id, None)
        last = messages[-1] if messages else None
        if isinstance(last, AIMessage) and not last.tool_calls:
            self.session.record_outcome(message_text(last))

    # -- the wrap --------------------------------------------------------------------
    def wrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Wrap the session now with ``compress``, the constructor's, or the agent's model
        (``failed`` before any run without either). The outcome is also kept on
        ``session.last_wrap``."""
        model = self._model
        return self.session.wrap_first(compress, self.compress,
                                       chat_model_compress(model) if model is not None else None)

    async def awrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Async :meth:`wrap`; ``compress`` may be sync or async."""
        model = self._model
        return await self.session.awrap_first(
            compress, self.compress, chat_model_acompress(model) if model is not None else None)
