"""Microsoft Agent Framework adapter: anneal memory as an agent's context provider, and
the session's history in the same database.

::

    from agent_framework import Agent
    from anneal_memory import Store
    from anneal_memory.adapters.agent_framework import AnnealContextProvider

    memory = AnnealContextProvider(Store("memory.db"))
    agent = Agent(client, "You are helpful.",
                  context_providers=[memory, memory.history_provider()])
    await agent.run("...", session=agent.create_session(), options={"user": "alice"})

Install with ``pip install 'anneal-memory[agent-framework]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("agent-framework-core", "agent-framework", "agent_framework")

from ._memory import (  # noqa: E402
    COLLECTION,
    LOGGER_NAME,
    AnnealContextProvider,
    AnnealHistoryProvider,
    RunContext,
    model_compressor,
)

__all__ = ["COLLECTION", "LOGGER_NAME", "AnnealContextProvider", "AnnealHistoryProvider",
           "RunContext", "model_compressor"]
