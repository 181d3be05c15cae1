"""CrewAI adapter: a ``Memory`` for crews, a storage backend and an event listener.

::

    from anneal_memory import Store
    from anneal_memory.adapters.crewai import AnnealCrewMemory, AnnealEventListener

    memory = AnnealCrewMemory(Store("memory.db"), llm=my_llm, wrap_on_end=True)
    bob = memory.scope("/user/bob")           # bob's memory: CrewAI's own scope tree
    listener = AnnealEventListener(memory)
    crew = Crew(agents=[...], tasks=[...], memory=bob,
                after_kickoff_callbacks=[bob.after_kickoff])

Install with ``pip install 'anneal-memory[crewai]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("crewai", "crewai")

from ._listener import AnnealEventListener  # noqa: E402
from ._memory import LOGGER_NAME, AnnealCrewMemory, AnnealMemoryScope, model_compressor  # noqa: E402
from ._scope import identity_of, normalize  # noqa: E402
from ._storage import COLLECTION, AnnealStorage  # noqa: E402

__all__ = ["COLLECTION", "LOGGER_NAME", "AnnealCrewMemory", "AnnealEventListener",
           "AnnealMemoryScope", "AnnealStorage", "identity_of", "model_compressor", "normalize"]
