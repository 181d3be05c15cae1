"""A LangChain callback handler that records a run's episodes.

Callbacks are LangChain's observation point: they see every chain, model and tool run
but cannot change inputs, so this handler only records (recall goes in through
:class:`~anneal_memory.adapters.langchain.AnnealRetriever` or the LangGraph middleware).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import LLMResult

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

from .messages import last_message_text, message_text, payload_text

LOGGER_NAME = "anneal_memory.adapters.langchain"

_safe = hook_guard(LOGGER_NAME)


class AnnealCallbackHandler(BaseCallbackHandler):
    """Records the root run's input (context) and answer (outcome) when the root run
    ends, and every tool result as it arrives (observation, ``trust="tool"``).
    ``store`` is a Store, a store path or a :class:`MemorySession`.

    Pass it as ``config={"callbacks": [handler]}`` to any runnable: a chat model, an LCEL
    chain, a LangGraph graph. The root run is the one with no parent; nested chain and
    model runs are recorded only with ``record_llm_steps=True``.

    ``wrap_on_end`` (default False) wraps after every root run with ``compress``; most
    applications call :meth:`wrap` once at the end of a session instead.
    """

    raise_error = False
    # Inline so episodes land in the order the events happened, also under ainvoke.
    run_inline = True

    def __init__(
        self,
        store: Store | MemorySession | str | os.PathLike[str],
        *,
        session_id: str | None = None,
        record_inputs: bool = True,
        record_outputs: bool = True,
        record_tools: bool = True,
        record_llm_steps: bool = False,
        wrap_on_end: bool = False,
        compress: Callable[[str], str] | None = None,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
    ) -> None:
        if wrap_on_end and compress is None:
            raise ValidationError(
                "wrap_on_end=True needs compress=: a callback handler cannot reach the model; "
                "pass compress=chat_model_compress(model)"
            )
        attach_memory(self, store, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      session_id=session_id, recall_limit=recall_limit,
                      max_content_chars=max_content_chars)
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self.record_tools = record_tools
        self.record_llm_steps = record_llm_steps
        # root run id -> its input text, recorded when the run ends (a failed run's too)
        self._roots: dict[UUID, str] = {}
        self._tools: dict[UUID, tuple[str, Any]] = {}
        # True while the wrap's own model call runs: its events are not the user's run.
        self._wrapping = False

    # -- root runs -------------------------------------------------------------------
    @_safe
    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: dict[str, Any] | Any, *,
                       run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if parent_run_id is None and not self._wrapping:
            self._roots[run_id] = payload_text(inputs, prefer=HumanMessage)

    @_safe
    def on_chain_end(self, outputs: dict[str, Any] | Any, *, run_id: UUID,
                     parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if run_id in self._roots:
            self._end_root(run_id, payload_text(outputs, prefer=AIMessage))

    @_safe
    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._fail_root(run_id)

    @_safe
    def on_chat_model_start(self, serialized: dict[str, Any] | None,
                            messages: list[list[BaseMessage]], *, run_id: UUID,
                            parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if parent_run_id is None and not self._wrapping:
            self._roots[run_id] = last_message_text(messages[0], HumanMessage) if messages else ""

    @_safe
    def on_llm_start(self, serialized: dict[str, Any] | None, prompts: list[str], *,
                     run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if parent_run_id is None and not self._wrapping:
            self._roots[run_id] = prompts[-1] if prompts else ""

    @_safe
    def on_llm_end(self, response: LLMResult, *, run_id: UUID,
                   parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        text = _generation_text(response)
        if run_id in self._roots:
            self._end_root(run_id, text)
        elif self.record_llm_steps and text and not self._wrapping:
            self.session.record_observation(text, metadata={"event": "llm_step"})

    @_safe
    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._fail_root(run_id)

    # -- tools -----------------------------------------------------------------------
    @_safe
    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: str, *,
                      run_id: UUID, inputs: dict[str, Any] | None = None,
                      **kwargs: Any) -> None:
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        self._tools[run_id] = (str(name), inputs if inputs is not None else input_str)

    @_safe
    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        name, arguments = self._tools.pop(run_id, (kwargs.get("name") or "tool", None))
        if self.record_tools:
            text = message_text(getattr(output, "content", output))
            self.session.record_tool_output(name, text, arguments=_as_dict(arguments))

    @_safe
    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._tools.pop(run_id, None)

    # -- the wrap --------------------------------------------------------------------
    def wrap(self, compress: Callable[[str], str] | None = None) -> WrapOutcome:
        """Wrap now (session end) with ``compress`` or the one given at construction (a
        handler cannot reach the model: without either the outcome is ``failed``). The
        outcome is also kept on ``session.last_wrap``."""
        self._wrapping = True
        try:
            return self.session.wrap_first(compress, self.compress)
        finally:
            self._wrapping = False

    def _record_input(self, run_id: UUID) -> None:
        text = self._roots.pop(run_id, "")
        if self.record_inputs and text:
            self.session.record_user_input(text)

    def _fail_root(self, run_id: UUID) -> None:
        # The request still happened; keep it even though the run failed.
        if run_id in self._roots:
            self._record_input(run_id)

    def _end_root(self, run_id: UUID, answer: str) -> None:
        self._record_input(run_id)
        if self.record_outputs and answer:
            self.session.record_outcome(answer)
        if self.wrap_on_end:
            self.wrap()


def _generation_text(response: LLMResult) -> str:
    for generations in reversed(response.generations):
        for generation in reversed(generations):
            message = getattr(generation, "message", None)
            text = message_text(message) if message is not None else generation.text
            if text:
                return text
    return ""


def _as_dict(arguments: Any) -> dict[str, Any] | None:
    if isinstance(arguments, dict):
        return arguments
    return None if arguments in (None, "") else {"input": arguments}
