"""anneal-memory for AutoGen AgentChat (``autogen-agentchat`` / ``pyautogen`` 0.10).

::

    from anneal_memory.adapters.autogen import AnnealMemory

    memory = AnnealMemory("memory.db", namespace={"user": "alice"}, model_client=client)
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])

``AnnealMemory`` is a full ``autogen_core.memory.Memory``. The agent never calls
``Memory.add`` itself, so on the first turn the memory attaches a recorder to the agent's
model context, which records every message of the turn. See docs/integrations/autogen.md.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("autogen", "autogen", "autogen_core.memory", "autogen_core.model_context",
              "autogen_agentchat")

from ._context import MEMORY_SOURCE  # noqa: E402
from ._memory import AnnealMemory, AnnealMemoryConfig  # noqa: E402

__all__ = ["MEMORY_SOURCE", "AnnealMemory", "AnnealMemoryConfig"]
