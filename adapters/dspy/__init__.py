"""anneal-memory for DSPy (``pip install 'anneal-memory[dspy]'``).

- :class:`AnnealCallback`: a ``dspy.utils.callback.BaseCallback`` that records the
  outermost module's inputs and outputs, tool results (``trust="tool"``) and, optionally,
  LM completions.
- :class:`MemoryProgram`: DSPy callbacks cannot change inputs, so this small wrapper
  module passes continuity + recall to the wrapped program as an input field, records
  through :class:`AnnealCallback`, and wraps through the configured LM.
- :func:`with_memory_field`: adds that input field to a signature.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import dspy  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("dspy", "dspy") from exc

from .callback import AnnealCallback
from .program import MemoryProgram, lm_compress, with_memory_field

__all__ = ["AnnealCallback", "MemoryProgram", "lm_compress", "with_memory_field"]
