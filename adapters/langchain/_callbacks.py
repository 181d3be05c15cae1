"""A LangChain callback handler that records a run's episodes.

Callbacks are LangChain's observation point: they see every chain, model and tool run
but cannot change inputs, so this handler only records (recall goes in through
:class:`~anneal_memory.adapters.langchain.AnnealRetriever` or the LangGraph middleware).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables.config import var_child_runnable_config

from anneal_memory import Store
from anneal_memory.adapters import Compress, MemoryAdapter, hook_guard, options_except
from anneal_memory.errors import IdentityError, ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

from ._identity import identity_of
from ._messages import last_message_text, message_text, payload_text

LOGGER_NAME = "anneal_memory.adapters.langchain"

_safe = hook_guard(LOGGER_NAME)
#: how a refusal names an id read from the running config's configurable
CONFIGURABLE_SOURCE = "config['configurable'] of the run"


class AnnealCallbackHandler(MemoryAdapter, BaseCallbackHandler):
    """Records the root run's input (context) and answer (outcome) when the root run
    ends, and every tool result as it arrives (observation, ``trust="tool"``).
    ``store`` is a Store, a store path or a :class:`MemorySession`.

    Identity: each run's events go to ``namespace`` (a mapping, a ``MemoryNamespace`` or a
    callable of the run's metadata), else to the ids in the run's metadata (``user_id``,
    ``tenant_id``, ``project_id``, ``agent_id``, from ``config={"metadata": ...}`` or
    ``config={"configurable": ...}``: langchain-core 1.x no longer copies configurable
    values into the metadata callbacks get, so a root run whose metadata has no id takes
    it from the configurable its first step runs with), else to the store as it is (a
    bare chat-model call sees only its metadata). An id there that is
    empty, whitespace or invisible is refused (``IdentityError``, the run stops).

    Pass it as ``config={"callbacks": [handler]}`` to any runnable: a chat model, an LCEL
    chain, a LangGraph graph. The root run is the one with no parent; nested chain and
    model runs are recorded only with ``record_llm_steps=True``.

    ``wrap_on_end`` (default False) wraps after every root run with ``compress``; most
    applications call :meth:`wrap` once at the end of a session instead.
    """

    # True so an IdentityError (a run whose id is empty or invisible) stops the run: every
    # hook is guarded, so any other failure is logged and the run goes on (unless strict)
    raise_error = True
    identity_source = ("the run's metadata (config['metadata'], and the config['configurable'] "
                       "ids older langchain-core releases copy into it)")
    # Inline so episodes land in the order the events happened, also under ainvoke.
    run_inline = True
    framework = "langchain"
    extra = "langchain"
    logger_name = LOGGER_NAME

    memory_options = options_except("memory_role", "project_name", "crystal_store")

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 record_inputs: bool = True, record_outputs: bool = True,
                 record_tools: bool = True, record_llm_steps: bool = False,
                 options: MemoryOptions | None = None, **memory: Unpack[MemoryKwargs]) -> None:
        opts = self._memory_options(options, memory)
        if opts.wrap_on_end and opts.compress is None:
            raise ValidationError(
                "wrap_on_end=True needs compress=: a callback handler cannot reach the model; "
                "pass compress=model_compressor(model)"
            )
        self._init_memory(store, opts)
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self.record_tools = record_tools
        self.record_llm_steps = record_llm_steps
        # root run id -> (its input text, its memory), recorded when the run ends (a
        # failed run's too); tool and model runs -> what their end needs
        self._roots: dict[UUID, tuple[str, MemorySession]] = {}
        self._tools: dict[UUID, tuple[str, Any, MemorySession]] = {}
        self._steps: dict[UUID, MemorySession] = {}
        # roots with no id at their start -> their runs so far; a run -> its root
        self._pending: dict[UUID, list[UUID]] = {}
        self._root_of: dict[UUID, UUID] = {}
        # True while the wrap's own model call runs: its events are not the user's run.
        self._wrapping = False

    # -- root runs -------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """The ids in the run's metadata."""
        return identity_of(context, names=(self.identity_source,))

    def _context_of(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The run's metadata, with the simple ``config['configurable']`` values of the
        enclosing run (as older langchain-core releases copied them into it: newer ones
        pass them to their tracer only, so a handler reads them where the framework keeps
        the running config); metadata wins where both name a key."""
        metadata = dict(kwargs.get("metadata") or {})
        configurable = {k: v for k, v in _configurable_ids().items() if k not in metadata}
        identity_of(configurable, names=(CONFIGURABLE_SOURCE,))  # refuses an empty id there
        return {**configurable, **metadata}

    def _memory_of(self, kwargs: dict[str, Any]) -> MemorySession:
        return self.session_for(self._context_of(kwargs))

    def _start_root(self, run_id: UUID, text: str, kwargs: dict[str, Any]) -> None:
        context = self._context_of(kwargs)
        self._roots[run_id] = (text, self.session_for(context))
        if self._anneal.namespace is None and identity_of(context) is None:
            # no id yet: a chain's first step sees the run's configurable, and says whose
            self._pending[run_id] = [run_id]

    def _child_started(self, run_id: UUID, parent_run_id: UUID | None,
                       kwargs: dict[str, Any]) -> None:
        """A run inside a root whose identity was not known at its start: the first one
        names it from the config the framework runs it with."""
        if parent_run_id is None or not self._pending:
            return
        root = self._root_of.get(parent_run_id, parent_run_id)
        if root not in self._pending:
            return
        self._root_of[run_id] = root
        self._pending[root].append(run_id)
        context = self._context_of(kwargs)
        if identity_of(context) is not None and root in self._roots:
            for child in self._pending.pop(root):
                self._root_of.pop(child, None)
            text, _ = self._roots[root]
            self._roots[root] = (text, self.session_for(context))

    def _forget_root(self, run_id: UUID) -> None:
        for child in self._pending.pop(run_id, []):
            self._root_of.pop(child, None)

    @_safe
    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: dict[str, Any] | Any, *,
                       run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if self._wrapping:
            return
        if parent_run_id is None:
            self._start_root(run_id, payload_text(inputs, prefer=HumanMessage), kwargs)
        else:
            self._child_started(run_id, parent_run_id, kwargs)

    @_safe
    def on_chain_end(self, outputs: dict[str, Any] | Any, *, run_id: UUID,
                     parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if run_id in self._roots:
            self._end_root(run_id, payload_text(outputs, prefer=AIMessage))

    @_safe
    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._fail_root(run_id, error)

    @_safe
    def on_chat_model_start(self, serialized: dict[str, Any] | None,
                            messages: list[list[BaseMessage]], *, run_id: UUID,
                            parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if self._wrapping:
            return
        if parent_run_id is None:
            self._start_root(run_id, last_message_text(messages[0], HumanMessage)
                             if messages else "", kwargs)
            return
        self._child_started(run_id, parent_run_id, kwargs)
        if self.record_llm_steps:
            self._steps[run_id] = self._memory_of(kwargs)

    @_safe
    def on_llm_start(self, serialized: dict[str, Any] | None, prompts: list[str], *,
                     run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if self._wrapping:
            return
        if parent_run_id is None:
            self._start_root(run_id, prompts[-1] if prompts else "", kwargs)
            return
        self._child_started(run_id, parent_run_id, kwargs)
        if self.record_llm_steps:
            self._steps[run_id] = self._memory_of(kwargs)

    @_safe
    def on_llm_end(self, response: LLMResult, *, run_id: UUID,
                   parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        text = _generation_text(response)
        step = self._steps.pop(run_id, None)
        if run_id in self._roots:
            self._end_root(run_id, text)
        elif step is not None and text and not self._wrapping:
            step.record_observation(text, metadata={"event": "llm_step"})

    @_safe
    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._steps.pop(run_id, None)
        self._fail_root(run_id, error)

    # -- tools -----------------------------------------------------------------------
    @_safe
    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: str, *,
                      run_id: UUID, inputs: dict[str, Any] | None = None,
                      parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._child_started(run_id, parent_run_id, kwargs)
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        self._tools[run_id] = (str(name), inputs if inputs is not None else input_str,
                               self._memory_of(kwargs))

    @_safe
    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        started = self._tools.pop(run_id, None)
        if self.record_tools and started is not None:
            name, arguments, memory = started
            text = message_text(getattr(output, "content", output))
            memory.record_tool_output(name, text, arguments=_as_dict(arguments))

    @_safe
    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._tools.pop(run_id, None)

    # -- the wrap --------------------------------------------------------------------
    def wrap(self, compress: Compress | None = None, *, context: Any = None,
             namespace: Any = None) -> WrapOutcome:
        """Wrap one memory now (a session's end): ``namespace`` (or the run metadata
        ``context``) names it; ``compress`` or the one given at construction compresses
        (a handler cannot reach the model: without either the outcome is ``failed``)."""
        self._wrapping = True
        try:
            return super().wrap(compress, context=context, namespace=namespace)
        finally:
            self._wrapping = False

    def _record_input(self, run_id: UUID) -> MemorySession | None:
        self._forget_root(run_id)
        text, memory = self._roots.pop(run_id, ("", None))
        if memory is not None and self.record_inputs and text:
            memory.record_user_input(text)
        return memory

    def _fail_root(self, run_id: UUID, error: BaseException | None = None) -> None:
        # The request still happened; keep it even though the run failed, unless the run
        # was refused for its identity (a retriever's IdentityError): then nothing is kept
        if isinstance(error, IdentityError):
            self._forget_root(run_id)
            self._roots.pop(run_id, None)
        elif run_id in self._roots:
            self._record_input(run_id)

    def _end_root(self, run_id: UUID, answer: str) -> None:
        memory = self._record_input(run_id)
        if memory is None:
            return
        if self.record_outputs and answer:
            memory.record_outcome(answer)
        self._wrapping = True
        try:
            self.end_run(memory)
        finally:
            self._wrapping = False


def _configurable_ids() -> dict[str, Any]:
    """The simple values of the running config's ``configurable`` (none outside a run)."""
    config = var_child_runnable_config.get()
    configurable = (config or {}).get("configurable") or {}
    return {k: v for k, v in configurable.items()
            if isinstance(k, str) and not k.startswith("__")
            and isinstance(v, (str, int, float, bool))}


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
