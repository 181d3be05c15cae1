"""CrewAI adapter: a ``Memory`` for crews, a storage backend and an event listener.

::

    from anneal_memory import Store
    from anneal_memory.adapters.crewai import AnnealCrewMemory, AnnealEventListener

    memory = AnnealCrewMemory(Store("memory.db"), llm=my_llm, wrap_on_end=True)
    listener = AnnealEventListener(memory.session)
    crew = Crew(agents=[...], tasks=[...], memory=memory,
                after_kickoff_callbacks=[memory.after_kickoff])

Install with ``pip install 'anneal-memory[crewai]'``.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import crewai  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("crewai", "crewai") from exc

from .listener import AnnealEventListener
from .memory import AnnealCrewMemory, llm_compressor
from .storage import AnnealStorage

__all__ = ["AnnealCrewMemory", "AnnealEventListener", "AnnealStorage", "llm_compressor"]
