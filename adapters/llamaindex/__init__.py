"""LlamaIndex adapter: a memory block, a recording ``Memory`` and a tool-call recorder.

::

    from anneal_memory import Store
    from anneal_memory.adapters.llamaindex import AnnealMemory, AnnealToolRecorder

    memory = AnnealMemory.from_store(Store("memory.db"), wrap_on_end=True)
    with AnnealToolRecorder(memory.session).attached():
        result = await memory.arun(agent, "What did we decide about the pump?")

Install with ``pip install 'anneal-memory[llama-index]'``.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import llama_index.core.memory  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("llama-index", "llama-index") from exc

from .block import LOGGER_NAME, AnnealMemoryBlock
from .instrumentation import AnnealToolRecorder
from .memory import AnnealMemory, llm_compressor

__all__ = ["LOGGER_NAME", "AnnealMemory", "AnnealMemoryBlock", "AnnealToolRecorder",
           "llm_compressor"]
