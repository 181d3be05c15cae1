"""anneal-memory for DSPy (``pip install 'anneal-memory[dspy]'``).

- :class:`MemoryProgram`: wraps any DSPy program (``Predict``, ``ChainOfThought``,
  ``ReAct``, your own module). Each call passes continuity + recall to every LM call of
  the run as a labelled ``memory`` input field, records through :class:`AnnealCallback`,
  and wraps through the configured LM. Calls under ``dspy.Evaluate`` or an optimizer are
  not recorded.
- :class:`AnnealCallback`: a ``dspy.utils.callback.BaseCallback`` that records the
  outermost module's request (when it starts) and answer, tool results
  (``trust="tool"``) and, optionally, LM completions.
- :class:`MemoryTools`: store / search / list / update / delete tools for a ``dspy.ReAct``
  agent, scoped to one namespace.
- Whose memory: ``namespace=``, or ``dspy.context(memory_namespace={"user": ...})``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("dspy", "dspy")

from ._callback import LOGGER_NAME, NAMESPACE_SETTING, AnnealCallback, under_evaluation  # noqa: E402
from ._program import MemoryProgram, lm_compress, model_compressor, with_memory_field  # noqa: E402
from ._tools import TOOL_NAMES, MemoryTools  # noqa: E402

__all__ = ["LOGGER_NAME", "NAMESPACE_SETTING", "TOOL_NAMES", "AnnealCallback", "MemoryProgram",
           "MemoryTools", "lm_compress", "model_compressor", "under_evaluation",
           "with_memory_field"]
