"""An ``AgentMiddleware`` that gives a ``create_agent`` agent anneal memory.

Hook map (sync and async twins of each; the async ones keep the store's work off the loop):

- ``before_agent``: builds the memory block (continuity + recall for the user's request)
  once per run, and records the request (never recalled back to its own run).
- ``wrap_model_call``: puts that block in the model request only (the agent's state and
  checkpoints never contain it): as a labelled user message just before the user's
  request (``memory_role="user"``, the default) or appended to the system message
  (``"system"``).
- ``after_model``: records the model's text that accompanies tool calls (``record_steps``).
- ``wrap_tool_call``: records each tool result with ``trust="tool"``.
- ``after_agent``: records the final answer; with ``wrap_on_end`` wraps the run's memory
  through the agent's own model (or ``compress``).

Identity: a run's memory is ``namespace=`` (a mapping, a ``MemoryNamespace``, a LangGraph
namespace tuple such as ``("users", "{user_id}")`` filled from the run, or a callable of
the LangGraph ``Runtime``), else the ids in ``runtime.context`` or
``config["configurable"]`` (``user_id``, ``tenant_id``, ``project_id``, ``agent_id``),
else the store as it is.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from anneal_memory import Store
from anneal_memory.adapters import Compress, MemoryAdapter, hook_guard, label_memory, options_except
from anneal_memory.adapters.langchain import (
    from_tuple,
    identity_of,
    is_template,
    message_text,
    model_acompressor,
    model_compressor,
)
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.langgraph"

_safe = hook_guard(LOGGER_NAME)


def _latest_human(messages: list[Any]) -> HumanMessage | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
    return None


def _configurable() -> dict[str, Any]:
    """The run's ``config["configurable"]`` (empty outside a run)."""
    try:
        from langgraph.config import get_config

        return dict(get_config().get("configurable") or {})
    except Exception:
        return {}


def _template(labels: tuple[str, ...]) -> Callable[[Any], dict[str, str]]:
    def namespace_of(runtime: Any) -> dict[str, str]:
        return from_tuple(labels, getattr(runtime, "context", None), _configurable())
    return namespace_of


class AnnealMiddleware(MemoryAdapter, AgentMiddleware):
    """anneal memory for ``create_agent(model, tools, middleware=[AnnealMiddleware(store)])``.

    ``store`` is a Store, a store path or a :class:`MemorySession`. Options:
    ``namespace`` (see the module), ``session_id`` (the wrap baton's session id),
    ``wrap_on_end`` (default False: each ``invoke`` is usually one turn of a longer
    conversation, so call :meth:`wrap` / :meth:`awrap` at the session's end; True wraps
    after every run), ``compress`` (prompt -> continuity; default: the agent's own model),
    ``memory_role``, ``record_tools``, ``record_steps``, ``recall_limit``,
    ``max_content_chars``.
    """

    framework = "langgraph"
    extra = "langgraph"
    logger_name = LOGGER_NAME

    memory_options = options_except("project_name", "crystal_store")

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 record_tools: bool = True, record_steps: bool = True,
                 options: MemoryOptions | None = None, **memory: Unpack[MemoryKwargs]) -> None:
        super().__init__()
        opts = self._memory_options(options, memory)
        if is_template(opts.namespace):
            opts = replace(opts, namespace=_template(opts.namespace))
        self._init_memory(store, opts)
        self.record_tools = record_tools
        self.record_steps = record_steps
        self._model: BaseChatModel | None = None
        # per user message id (one run): its memory block and the model that served it
        self._blocks: OrderedDict[str, str] = OrderedDict()
        self._models: OrderedDict[str, BaseChatModel] = OrderedDict()

    # -- identity --------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """The ids in ``runtime.context``, else in ``config["configurable"]``."""
        return identity_of(getattr(context, "context", None), _configurable(),
                           names=("the run's runtime.context",
                                  "the run's config['configurable']"))

    # -- run start -------------------------------------------------------------------
    @_safe
    def before_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        session = self.session_for(runtime)
        human = _latest_human(state["messages"])
        query = message_text(human)
        self._keep(human, session.memory_block(query or None,
                                               transcript=_transcript(state["messages"])))
        if query:
            session.record_user_input(query, _meta())
        return None

    @_safe
    async def abefore_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        session = self.session_for(runtime)
        human = _latest_human(state["messages"])
        query = message_text(human)
        self._keep(human, await session.amemory_block(
            query or None, transcript=_transcript(state["messages"])))
        if query:
            await session.arecord_user_input(query, _meta())
        return None

    def _keep(self, human: HumanMessage | None, block: str) -> None:
        if human is not None and human.id:
            self._blocks[human.id] = block
            while len(self._blocks) > 1024:
                self._blocks.popitem(last=False)

    # -- model calls -----------------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(self._with_memory(request, self._block_for(request)) or request)

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[Any]]) -> Any:
        return await handler(self._with_memory(request, await self._ablock_for(request))
                             or request)

    @_safe
    def _block_for(self, request: ModelRequest) -> str:
        human = self._seen_model(request)
        block = self._blocks.get(human.id) if human is not None and human.id else None
        if block is None:  # before_agent did not run for this message (e.g. a resumed run)
            block = self.session_for(request.runtime).memory_block(
                message_text(human) or None, transcript=_transcript(request.messages))
        return block

    @_safe
    async def _ablock_for(self, request: ModelRequest) -> str:
        human = self._seen_model(request)
        block = self._blocks.get(human.id) if human is not None and human.id else None
        if block is None:
            block = await self.session_for(request.runtime).amemory_block(
                message_text(human) or None, transcript=_transcript(request.messages))
        return block

    def _seen_model(self, request: ModelRequest) -> HumanMessage | None:
        human = _latest_human(request.messages)
        if isinstance(request.model, BaseChatModel):
            self._model = request.model
            if human is not None and human.id:
                self._models[human.id] = request.model
                while len(self._models) > 1024:
                    self._models.popitem(last=False)
        return human

    @_safe
    def _with_memory(self, request: ModelRequest, block: str | None) -> ModelRequest | None:
        if not block:
            return None
        if self.memory_role == "user":
            messages = list(request.messages)
            human = _latest_human(messages)
            at = next((i for i, m in enumerate(messages) if m is human), len(messages))
            messages.insert(at, HumanMessage(content=label_memory(block)))
            return request.override(messages=messages)
        current = request.system_prompt or ""
        combined = f"{current}\n\n{label_memory(block)}" if current else label_memory(block)
        if hasattr(request, "system_message"):
            return request.override(system_message=SystemMessage(content=combined))
        return request.override(system_prompt=combined)  # langchain < 1.1: a plain string

    # -- model steps -----------------------------------------------------------------
    @_safe
    def after_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        text = self._step_text(state)
        if text:
            self.session_for(runtime).record_observation(text, metadata={"event": "model_step"})
        return None

    @_safe
    async def aafter_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        text = self._step_text(state)
        if text:
            await self.session_for(runtime).arecord_observation(
                text, metadata={"event": "model_step"})
        return None

    def _step_text(self, state: AgentState) -> str:
        last = state["messages"][-1] if state["messages"] else None
        if self.record_steps and isinstance(last, AIMessage) and last.tool_calls:
            return message_text(last)
        return ""

    # -- tools -----------------------------------------------------------------------
    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        self._record_tool(request, result)
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        await self._arecord_tool(request, result)
        return result

    @_safe
    def _record_tool(self, request: Any, result: Any) -> None:
        if self.record_tools and isinstance(result, ToolMessage):
            call = request.tool_call
            self.session_for(request.runtime).record_tool_output(
                str(call.get("name") or "tool"), message_text(result),
                arguments=call.get("args") or None)

    @_safe
    async def _arecord_tool(self, request: Any, result: Any) -> None:
        if self.record_tools and isinstance(result, ToolMessage):
            call = request.tool_call
            await self.session_for(request.runtime).arecord_tool_output(
                str(call.get("name") or "tool"), message_text(result),
                arguments=call.get("args") or None)

    # -- run end ---------------------------------------------------------------------
    @_safe
    def after_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        session = self.session_for(runtime)
        answer, model = self._finish(state)
        if answer:
            session.record_outcome(answer, _meta())
        self.end_run(session, model)
        return None

    @_safe
    async def aafter_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        session = self.session_for(runtime)
        answer, model = self._finish(state)
        if answer:
            await session.arecord_outcome(answer, _meta())
        await self.aend_run(session, model)
        return None

    def _finish(self, state: AgentState) -> tuple[str, BaseChatModel | None]:
        messages = state["messages"]
        human = _latest_human(messages)
        model = None
        if human is not None and human.id:
            self._blocks.pop(human.id, None)
            model = self._models.pop(human.id, None)
        last = messages[-1] if messages else None
        answer = message_text(last) if isinstance(last, AIMessage) and not last.tool_calls else ""
        return answer, model

    # -- the wrap --------------------------------------------------------------------
    def framework_compressor(self, context: Any = None) -> Compress | None:
        """The run's model (``context`` is it, from the run's end), else the last model
        the agent used (``failed`` before any run, without ``compress``)."""
        model = context if isinstance(context, BaseChatModel) else self._model
        return model_compressor(model) if model is not None else None

    async def awrap(self, compress: Compress | None = None, *, context: Any = None,
                    namespace: Any = None) -> Any:
        """Async :meth:`wrap`; the agent's model is asked asynchronously."""
        session = self.session_for(context, namespace=namespace)
        return await session.awrap_first(compress or self._acompressor(self._model))

    async def aend_run(self, session: MemorySession, context: Any = None) -> Any:
        if not self._anneal.wrap_on_end:
            return None
        model = context if isinstance(context, BaseChatModel) else self._model
        return await session.awrap_first(self._acompressor(model))

    def _acompressor(self, model: BaseChatModel | None) -> Compress | None:
        return self._anneal.compress or (model_acompressor(model) if model is not None else None)


def _transcript(messages: Any) -> list[str]:
    """The texts of the messages the model receives (a thread's earlier turns, with a
    checkpointer): recall leaves the episodes recorded from them out of the block."""
    return [message_text(m) for m in messages or []]


def _meta() -> dict[str, Any]:
    thread = _configurable().get("thread_id")
    return {"thread_id": str(thread)} if thread is not None else {}
