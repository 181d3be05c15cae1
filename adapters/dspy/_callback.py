"""A DSPy callback that records a program's episodes.

DSPy fires the same sync handlers for ``__call__`` and ``acall``, so this one class
covers both paths. Handlers never raise (DSPy would only log it as a warning anyway);
failures go to the ``anneal_memory.adapters.dspy`` logger.

Whose memory a call is: ``namespace=`` (a mapping, a ``MemoryNamespace`` or a callable of
the call's input fields), else ``dspy.context(memory_namespace=...)`` (DSPy's own way of
scoping settings to a block, a thread or a task, carried into ``dspy.Parallel`` and
``Evaluate`` workers), else the whole store. Runs under ``dspy.Evaluate`` or an optimizer
are not recorded unless ``record_evaluation=True``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import dspy
from dspy.utils.callback import BaseCallback

try:  # dspy >= 3.1 keeps the active call id in its own module
    from dspy.utils.callback_context import ACTIVE_CALL_ID
except ImportError:  # dspy 3.0
    from dspy.utils.callback import ACTIVE_CALL_ID  # type: ignore[attr-defined,no-redef]

from anneal_memory import Store
from anneal_memory.adapters import MemoryAdapter, hook_guard
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

LOGGER_NAME = "anneal_memory.adapters.dspy"

#: What a callback or program accepts as its memory.
Memory = Store | MemorySession | str | os.PathLike[str]
#: The ``dspy.context`` key that names whose memory the calls in the block are.
NAMESPACE_SETTING = "memory_namespace"

#: Prediction keys that are the program's working, not its answer.
_WORKING_FIELDS = frozenset({"trajectory", "reasoning", "rationale"})
#: ReAct's built-in tool that ends the loop; its "Completed." result is not an observation.
_FINISH_TOOL = "finish"
#: The modules whose calls of a program are evaluation or optimization, not a user's run.
_EVALUATION_MODULES = ("dspy.evaluate", "dspy.teleprompt")

_safe = hook_guard(LOGGER_NAME)


def fields_text(values: dict[str, Any], skip: Iterable[str] = ()) -> str:
    """``{"question": "q"}`` -> ``"q"``; several fields -> ``"name: value"`` lines."""
    kept = {k: v for k, v in values.items() if k not in set(skip) and v not in (None, "")}
    if len(kept) == 1:
        return str(next(iter(kept.values())))
    return "\n".join(f"{k}: {v}" for k, v in kept.items())


def under_evaluation() -> bool:
    """True inside ``dspy.Evaluate`` or an optimizer (``dspy.teleprompt``): their calls of
    the program are on a dev or training set, not a user's."""
    frame = sys._getframe(1)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(_EVALUATION_MODULES):
            return True
        frame = frame.f_back
    return False


class DSPyMemory(MemoryAdapter):
    """What the DSPy adapter's classes share: the identity DSPy can carry."""

    framework = "dspy"
    extra = "dspy"
    logger_name = LOGGER_NAME
    identity_source = "dspy.context(memory_namespace=...)"

    def default_namespace(self, context: Any) -> Any:
        """``dspy.context(memory_namespace=...)`` of the calling block (None: none)."""
        return dspy.settings.get(NAMESPACE_SETTING)


class AnnealCallback(DSPyMemory, BaseCallback):
    """Records into anneal memory what a DSPy program does.

    Register it with ``dspy.configure(callbacks=[cb])``, ``dspy.context(callbacks=[cb])``
    or let :class:`MemoryProgram` install it. The outermost module call this callback sees
    is the run: its input fields are recorded as the user's request (``context``) when it
    starts, its output fields as the ``outcome`` when it ends. Tool results are
    observations with ``trust="tool"``; LM completions are recorded only with
    ``record_lm=True``. ``skip_fields`` names input fields that are not the user's words
    (the memory field itself). ``store`` is a Store, a store path or a
    :class:`MemorySession`.
    """

    #: a callback records: the wrap and the memory message are the program's
    memory_options = ("namespace", "session_id", "recall_limit", "max_content_chars")

    def __init__(self, store: Memory, *, record_inputs: bool = True,
                 record_outputs: bool = True, record_tools: bool = True,
                 record_lm: bool = False, record_evaluation: bool = False,
                 skip_fields: Iterable[str] = (), skip_tools: Iterable[str] = (),
                 options: MemoryOptions | None = None,
                 **keywords: Unpack[MemoryKwargs]) -> None:
        self._init_memory(store, options, **keywords)
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self.record_tools = record_tools
        self.record_lm = record_lm
        self.record_evaluation = record_evaluation
        self.skip_fields = frozenset(skip_fields)
        self.skip_tools = frozenset(skip_tools)
        self._seen: set[str] = set()             # call ids this callback has seen start
        #: root module call id -> the session of that run (None: not recorded)
        self._roots: dict[str, MemorySession | None] = {}
        self._runs: dict[str, MemorySession | None] = {}  # any open call id -> its run's session
        self._tools: dict[str, tuple[str, dict[str, Any]]] = {}

    def _session_of(self, call_id: str) -> MemorySession | None:
        parent = ACTIVE_CALL_ID.get()
        return self._runs.get(parent) if parent is not None else None

    # -- modules ---------------------------------------------------------------------
    @_safe
    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        parent = ACTIVE_CALL_ID.get()
        self._seen.add(call_id)
        if parent is not None and parent in self._seen:
            self._runs[call_id] = self._runs.get(parent)
            return
        self._runs[call_id] = None
        self._roots[call_id] = None
        if under_evaluation() and not self.record_evaluation:
            return
        values = dict(inputs.get("kwargs") or {})
        session = self.session_for(values)
        self._runs[call_id] = self._roots[call_id] = session
        request = fields_text(values, self.skip_fields)
        if self.record_inputs and request:
            session.record_user_input(request)  # before the run's tools: in order

    @_safe
    def on_module_end(self, call_id: str, outputs: Any | None,
                      exception: BaseException | None = None) -> None:
        self._seen.discard(call_id)
        self._runs.pop(call_id, None)
        if call_id not in self._roots:
            return
        session = self._roots.pop(call_id)
        if session is not None and self.record_outputs and exception is None \
                and outputs is not None:
            answer = fields_text(_prediction_fields(outputs), _WORKING_FIELDS)
            if answer:
                session.record_outcome(answer)

    # -- tools -----------------------------------------------------------------------
    @_safe
    def on_tool_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._seen.add(call_id)
        self._runs[call_id] = self._session_of(call_id)
        name = str(getattr(instance, "name", None) or "tool")
        owner = getattr(getattr(instance, "func", None), "__self__", None)
        if getattr(owner, "is_anneal_memory_tools", False):
            name = ""  # the memory tools' results are memory already
        self._tools[call_id] = (name, dict(inputs.get("kwargs") or {}))

    @_safe
    def on_tool_end(self, call_id: str, outputs: Any | None,
                    exception: BaseException | None = None) -> None:
        self._seen.discard(call_id)
        session = self._runs.pop(call_id, None)
        name, arguments = self._tools.pop(call_id, ("tool", {}))
        if session is None or not self.record_tools or exception is not None \
                or name in ("", _FINISH_TOOL) or name in self.skip_tools or outputs is None:
            return
        session.record_tool_output(name, str(outputs), arguments=arguments or None)

    # -- language model --------------------------------------------------------------
    @_safe
    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._seen.add(call_id)
        self._runs[call_id] = self._session_of(call_id)

    @_safe
    def on_lm_end(self, call_id: str, outputs: Any | None,
                  exception: BaseException | None = None) -> None:
        self._seen.discard(call_id)
        session = self._runs.pop(call_id, None)
        if self.record_lm and exception is None and session is not None:
            for text in completion_texts(outputs):
                session.record_observation(text, metadata={"event": "lm_completion"})


def completion_texts(outputs: Any) -> list[str]:
    """An LM call's completions as text (DSPy gives str, or dicts with a "text" key)."""
    texts = []
    for out in outputs or []:
        text = out.get("text") if isinstance(out, dict) else out
        if isinstance(text, str) and text.strip():
            texts.append(text)
    return texts


def _prediction_fields(outputs: Any) -> dict[str, Any]:
    if hasattr(outputs, "toDict"):
        return dict(outputs.toDict())
    if isinstance(outputs, dict):
        return outputs
    return {"output": outputs}
