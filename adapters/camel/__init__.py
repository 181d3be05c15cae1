"""anneal-memory for CAMEL-AI: an ``AgentMemory`` for ``ChatAgent`` and a ``WorkforceCallback``.

::

    from anneal_memory.adapters.camel import AnnealAgentMemory, AnnealWorkforceCallback

    memory = AnnealAgentMemory("memory.db", model=model)
    agent = ChatAgent("You are helpful.", model=model, memory=memory)
    workforce = Workforce("team", callbacks=[AnnealWorkforceCallback("memory.db")])

See docs/integrations/camel.md.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    from camel.memories import AgentMemory  # noqa: F401
    from camel.societies.workforce.workforce_callback import WorkforceCallback  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("camel", "camel") from exc

from ._memory import MEMORY_MARK, AnnealAgentMemory
from ._workforce import AnnealWorkforceCallback

__all__ = ["MEMORY_MARK", "AnnealAgentMemory", "AnnealWorkforceCallback"]
