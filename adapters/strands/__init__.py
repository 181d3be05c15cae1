"""Strands Agents adapter: anneal memory as the agent's memory manager.

::

    from strands import Agent
    from anneal_memory import Store
    from anneal_memory.adapters.strands import AnnealMemory

    memory = AnnealMemory(Store("memory.db"))       # a run's user: invocation_state["user_id"]
    agent = Agent(model=model, memory_manager=memory)
    agent("Which heater do we have?", invocation_state={"user_id": "alice"})

``AnnealMemoryStore`` is the same memory as a plain Strands ``MemoryStore`` (one memory per
store instance), for a ``MemoryManager`` of your own next to other stores;
``AnnealSessionManager`` / ``AnnealSessionRepository`` keep Strands sessions (the chat
history and agent state) in the same database, per namespace.

Install with ``pip install 'anneal-memory[strands]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("strands-agents", "strands", "strands.memory")

from ._memory import (  # noqa: E402
    LOGGER_NAME,
    AnnealMemory,
    AnnealMemoryStore,
    RunContext,
    model_compressor,
)
from ._sessions import AnnealSessionManager, AnnealSessionRepository  # noqa: E402

__all__ = ["LOGGER_NAME", "AnnealMemory", "AnnealMemoryStore", "AnnealSessionManager",
           "AnnealSessionRepository", "RunContext", "model_compressor"]
