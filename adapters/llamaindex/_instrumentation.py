"""Record tool calls from LlamaIndex's instrumentation bus.

LlamaIndex emits no tool-call *event* from its agents (the workflow step events carry only
a string summary), but every tool call runs inside an instrumented span whose result is the
tool's ``ToolOutput``. :class:`AnnealToolRecorder` is a span handler that records each such
result with ``trust="tool"``, whichever agent or query engine called the tool.

The dispatcher is process-global: attach the recorder for the runs it should see and detach
it afterwards (``with recorder.attached(): ...``). The dispatcher swallows handler errors
silently, so the recorder logs its own (and lets them through with a ``strict`` session, for
the dispatcher to swallow).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.tools.types import ToolOutput
from pydantic import PrivateAttr

from anneal_memory.adapters import hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

from ._block import LOGGER_NAME
from ._memory import RECALL_TOOL_NAME

_safe = hook_guard(LOGGER_NAME)


class AnnealToolRecorder(BaseSpanHandler[SimpleSpan]):
    """Span handler: every ``ToolOutput`` a span returns becomes a tool episode.

    ``memory`` is a :class:`MemorySession`, or an ``AnnealMemory`` (then its namespace's
    session; an ``AnnealMemory`` also records the tool results it is given, once). It keeps
    no spans (``new_span`` returns None), so it holds nothing between calls.
    """

    _memory: Any = PrivateAttr()
    _record_errors: bool = PrivateAttr(default=True)

    def __init__(self, memory: Any, *, record_errors: bool = True) -> None:
        if not isinstance(memory, MemorySession) and not callable(getattr(memory, "scope", None)):
            raise ValidationError(
                f"memory must be an anneal_memory MemorySession or an AnnealMemory, not "
                f"{type(memory).__name__}: pass AnnealMemory.from_store(...) or MemorySession(store)"
            )
        super().__init__(open_spans={}, completed_spans=[], dropped_spans=[], current_span_ids={})
        self._memory = memory
        self._record_errors = record_errors

    @property
    def session(self) -> MemorySession:
        """The session tool outputs are recorded into."""
        memory = self._memory
        return memory if isinstance(memory, MemorySession) else memory.scope()

    @classmethod
    def class_name(cls) -> str:
        return "AnnealToolRecorder"

    def new_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any | None = None,
                 parent_span_id: str | None = None, tags: dict[str, Any] | None = None,
                 **kwargs: Any) -> SimpleSpan | None:
        return None

    def prepare_to_exit_span(self, id_: str, bound_args: inspect.BoundArguments,
                             instance: Any | None = None, result: Any | None = None,
                             **kwargs: Any) -> SimpleSpan | None:
        if isinstance(result, ToolOutput) and (self._record_errors or not result.is_error) \
                and result.tool_name != RECALL_TOOL_NAME:
            self._record(result)
        return None

    @_safe
    def _record(self, result: ToolOutput) -> None:
        metadata = {"is_error": True} if result.is_error else None
        self.session.record_tool_output(result.tool_name, result.content,
                                        arguments=result.raw_input, metadata=metadata)

    def prepare_to_drop_span(self, id_: str, bound_args: inspect.BoundArguments,
                             instance: Any | None = None, err: BaseException | None = None,
                             **kwargs: Any) -> SimpleSpan | None:
        return None

    # --- wiring -------------------------------------------------------------------------
    def attach(self, dispatcher: Any = None) -> AnnealToolRecorder:
        """Add to ``dispatcher`` (default: the root one) unless already there."""
        dispatcher = dispatcher or get_dispatcher()
        if self not in dispatcher.span_handlers:
            dispatcher.add_span_handler(self)
        return self

    def detach(self, dispatcher: Any = None) -> None:
        """Remove from ``dispatcher`` (default: the root one); a no-op when absent."""
        dispatcher = dispatcher or get_dispatcher()
        dispatcher.span_handlers[:] = [h for h in dispatcher.span_handlers if h is not self]

    @contextlib.contextmanager
    def attached(self, dispatcher: Any = None) -> Iterator[AnnealToolRecorder]:
        """Attached for the ``with`` block, detached after it (even on error)."""
        self.attach(dispatcher)
        try:
            yield self
        finally:
            self.detach(dispatcher)
