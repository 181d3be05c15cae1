"""A DSPy callback that records a program's episodes.

DSPy fires the same sync handlers for ``__call__`` and ``acall``, so this one class
covers both paths. Handlers never raise (DSPy would only log it as a warning anyway);
failures go to the ``anneal_memory.adapters.dspy`` logger.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from dspy.utils.callback import BaseCallback

try:  # dspy >= 3.1 keeps the active call id in its own module
    from dspy.utils.callback_context import ACTIVE_CALL_ID
except ImportError:  # dspy 3.0
    from dspy.utils.callback import ACTIVE_CALL_ID  # type: ignore[attr-defined,no-redef]

from anneal_memory import Store
from anneal_memory.adapters import hook_guard, open_session
from anneal_memory.session import MemorySession

LOGGER_NAME = "anneal_memory.adapters.dspy"

#: What a callback or program accepts as its memory.
Memory = Store | MemorySession | str | os.PathLike[str]

#: Prediction keys that are the program's working, not its answer.
_WORKING_FIELDS = frozenset({"trajectory", "reasoning", "rationale"})
#: ReAct's built-in tool that ends the loop; its "Completed." result is not an observation.
_FINISH_TOOL = "finish"

_safe = hook_guard(LOGGER_NAME)


def fields_text(values: dict[str, Any], skip: Iterable[str] = ()) -> str:
    """``{"question": "q"}`` -> ``"q"``; several fields -> ``"name: value"`` lines."""
    kept = {k: v for k, v in values.items() if k not in set(skip) and v not in (None, "")}
    if len(kept) == 1:
        return str(next(iter(kept.values())))
    return "\n".join(f"{k}: {v}" for k, v in kept.items())


class AnnealCallback(BaseCallback):
    """Records into anneal memory what a DSPy program does.

    Register it with ``dspy.configure(callbacks=[cb])``, ``dspy.context(callbacks=[cb])``
    or let :class:`MemoryProgram` install it. The outermost module call this callback sees
    is the run: its input fields are recorded as the user's request (``context``) and its
    output fields as the ``outcome``, both when it ends. Tool results are observations with ``trust="tool"``;
    LM completions are recorded only with ``record_lm=True``. ``skip_fields`` names input
    fields that are not the user's words (the memory field itself). ``store`` is a Store,
    a store path or a :class:`MemorySession`.
    """

    def __init__(
        self,
        store: Memory,
        *,
        session_id: str | None = None,
        record_inputs: bool = True,
        record_outputs: bool = True,
        record_tools: bool = True,
        record_lm: bool = False,
        skip_fields: Iterable[str] = (),
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
    ) -> None:
        self.session = open_session(store, LOGGER_NAME, session_id=session_id,
                                    recall_limit=recall_limit, max_content_chars=max_content_chars)
        self.record_inputs = record_inputs
        self.record_outputs = record_outputs
        self.record_tools = record_tools
        self.record_lm = record_lm
        self.skip_fields = frozenset(skip_fields)
        self._seen: set[str] = set()             # call ids this callback has seen start
        self._roots: dict[str, str] = {}         # root module call id -> its input text
        self._tools: dict[str, tuple[str, dict[str, Any]]] = {}

    # -- modules ---------------------------------------------------------------------
    @_safe
    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        parent = ACTIVE_CALL_ID.get()
        self._seen.add(call_id)
        if parent is None or parent not in self._seen:
            self._roots[call_id] = fields_text(dict(inputs.get("kwargs") or {}), self.skip_fields)

    @_safe
    def on_module_end(self, call_id: str, outputs: Any | None,
                      exception: BaseException | None = None) -> None:
        self._seen.discard(call_id)
        if call_id not in self._roots:
            return
        request = self._roots.pop(call_id)
        if self.record_inputs and request:
            self.session.record_user_input(request)
        if self.record_outputs and exception is None and outputs is not None:
            answer = fields_text(_prediction_fields(outputs), _WORKING_FIELDS)
            if answer:
                self.session.record_outcome(answer)

    # -- tools -----------------------------------------------------------------------
    @_safe
    def on_tool_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._seen.add(call_id)
        name = str(getattr(instance, "name", None) or "tool")
        self._tools[call_id] = (name, dict(inputs.get("kwargs") or {}))

    @_safe
    def on_tool_end(self, call_id: str, outputs: Any | None,
                    exception: BaseException | None = None) -> None:
        self._seen.discard(call_id)
        name, arguments = self._tools.pop(call_id, ("tool", {}))
        if self.record_tools and exception is None and name != _FINISH_TOOL and outputs is not None:
            self.session.record_tool_output(name, str(outputs), arguments=arguments or None)

    # -- language model --------------------------------------------------------------
    @_safe
    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._seen.add(call_id)

    @_safe
    def on_lm_end(self, call_id: str, outputs: Any | None,
                  exception: BaseException | None = None) -> None:
        self._seen.discard(call_id)
        if self.record_lm and exception is None:
            for text in completion_texts(outputs):
                self.session.record_observation(text, metadata={"event": "lm_completion"})


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
