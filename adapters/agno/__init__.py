"""Agno adapter: anneal memory as an Agno agent's memory manager, plus run hooks.

::

    from anneal_memory import Store
    from anneal_memory.adapters.agno import AnnealMemory

    memory = AnnealMemory(Store("memory.db"))
    agent = Agent(model=model, memory_manager=memory,
                  pre_hooks=[memory.pre_hook], post_hooks=[memory.post_hook])
    agent.run("...", user_id="alice", session_id="s1")

Install with ``pip install 'anneal-memory[agno]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("agno", "agno", "agno.memory", "agno.agent")

from ._db import AnnealMemoryDb  # noqa: E402
from ._memory import (  # noqa: E402
    AGNO_DEFAULT_USER,
    LOGGER_NAME,
    AgnoIdentityError,
    AnnealMemory,
    model_compressor,
)

__all__ = ["AGNO_DEFAULT_USER", "LOGGER_NAME", "AgnoIdentityError", "AnnealMemory",
           "AnnealMemoryDb", "model_compressor"]
