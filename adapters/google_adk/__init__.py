"""Google ADK adapter: an anneal-backed ``BaseMemoryService`` and a ``BasePlugin``.

::

    from anneal_memory import Store
    from anneal_memory.adapters.google_adk import AnnealMemoryPlugin, AnnealMemoryService

    memory = AnnealMemoryService(Store("memory.db"))
    runner = Runner(app=App(name="garden", root_agent=agent,
                            plugins=[AnnealMemoryPlugin(memory, wrap_on_end=True)]),
                    session_service=InMemorySessionService(), memory_service=memory)

Install with ``pip install 'anneal-memory[google-adk]'``.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import google.adk.memory.base_memory_service  # noqa: F401
    import google.adk.plugins.base_plugin  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("google-adk", "google-adk") from exc

from .plugin import AnnealMemoryPlugin, model_compressor
from .service import LOGGER_NAME, AnnealMemoryService, scope_source

__all__ = ["LOGGER_NAME", "AnnealMemoryPlugin", "AnnealMemoryService", "model_compressor",
           "scope_source"]
