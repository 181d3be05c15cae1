"""LlamaIndex adapter: a memory block, a recording ``Memory`` and a tool-call recorder.

::

    from anneal_memory import Store
    from anneal_memory.adapters.llamaindex import AnnealMemory, AnnealToolRecorder

    memory = AnnealMemory.from_store(Store("memory.db"), session_id="alice", wrap_on_end=True)
    result = await agent.run(user_msg="What did we decide about the pump?", memory=memory)

Install with ``pip install 'anneal-memory[llama-index]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("llama-index", "llama-index", "llama_index.core.memory")

from ._block import LOGGER_NAME, AnnealMemoryBlock  # noqa: E402
from ._instrumentation import AnnealToolRecorder  # noqa: E402
from ._memory import RECALL_TOOL_NAME, AnnealMemory, llm_compressor, model_compressor  # noqa: E402
from ._retriever import AnnealRetriever, memory_tool  # noqa: E402

__all__ = ["LOGGER_NAME", "RECALL_TOOL_NAME", "AnnealMemory", "AnnealMemoryBlock",
           "AnnealRetriever", "AnnealToolRecorder", "llm_compressor", "memory_tool",
           "model_compressor"]
