"""Google ADK adapter: an anneal-backed ``BaseMemoryService`` and a ``BasePlugin``.

::

    from anneal_memory import Store
    from anneal_memory.adapters.google_adk import AnnealMemoryPlugin, AnnealMemoryService

    memory = AnnealMemoryService(Store("memory.db"))
    runner = Runner(app=App(name="garden", root_agent=agent,
                            plugins=[AnnealMemoryPlugin(memory, wrap_on_end=True)]),
                    session_service=InMemorySessionService(), memory_service=memory)

Each ``(app_name, user_id)`` is its own memory. Install with
``pip install 'anneal-memory[google-adk]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("google-adk", "google-adk", "google.adk.memory.base_memory_service",
              "google.adk.plugins.base_plugin")

from ._plugin import AnnealMemoryPlugin, model_compressor  # noqa: E402
from ._service import EVENTS, LOGGER_NAME, AdkUser, AnnealMemoryService, matched_words  # noqa: E402

__all__ = ["EVENTS", "LOGGER_NAME", "AdkUser", "AnnealMemoryPlugin", "AnnealMemoryService",
           "matched_words", "model_compressor"]
