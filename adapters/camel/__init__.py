"""anneal-memory for CAMEL-AI: an ``AgentMemory`` for ``ChatAgent`` and a ``WorkforceCallback``.

::

    from anneal_memory.adapters.camel import AnnealAgentMemory, AnnealWorkforceCallback

    memory = AnnealAgentMemory("memory.db", model=model)
    agent = ChatAgent("You are helpful.", model=model, memory=memory, agent_id="alice-helper")
    workforce = Workforce("team", callbacks=[AnnealWorkforceCallback("memory.db")])

See docs/integrations/camel.md.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("camel", "camel", "camel.memories",
              "camel.societies.workforce.workforce_callback",
              "camel.storages.key_value_storages")

from ._memory import LOGGER_NAME, MEMORY_MARK, AnnealAgentMemory, model_compressor  # noqa: E402
from ._storage import AnnealKeyValueStorage  # noqa: E402
from ._workforce import AnnealWorkforceCallback  # noqa: E402

__all__ = ["LOGGER_NAME", "MEMORY_MARK", "AnnealAgentMemory", "AnnealKeyValueStorage",
           "AnnealWorkforceCallback", "model_compressor"]
