"""Google ADK adapter: an anneal-backed ``BaseMemoryService``, ``BaseSessionService`` and
``BasePlugin``.

::

    from anneal_memory import Store
    from anneal_memory.adapters.google_adk import AnnealMemoryPlugin, AnnealMemoryService

    memory = AnnealMemoryService(Store("memory.db"))
    runner = Runner(app=App(name="garden", root_agent=agent,
                            plugins=[AnnealMemoryPlugin(memory, wrap_on_end=True)]),
                    session_service=InMemorySessionService(), memory_service=memory)

Each ``(app_name, user_id)`` is its own memory. For ADK's own tooling (``adk web``,
``adk api_server``), ``register_services()`` in the agents folder's ``services.py`` makes
``--memory_service_uri=anneal:///abs/path/memory.db`` use it. Install with
``pip install 'anneal-memory[google-adk]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("google-adk", "google-adk", "google.adk.memory.base_memory_service",
              "google.adk.plugins.base_plugin")

from ._plugin import AnnealMemoryPlugin, model_compressor  # noqa: E402
from ._registry import register_services  # noqa: E402
from ._service import (  # noqa: E402
    EVENTS,
    LOGGER_NAME,
    STOP_WORDS,
    AdkUser,
    AnnealMemoryService,
    matched_words,
)
from ._sessions import AnnealSessionService  # noqa: E402
from ._uri import SCHEMES, AnnealUri, ServiceUriError, parse_uri  # noqa: E402

__all__ = ["EVENTS", "LOGGER_NAME", "SCHEMES", "STOP_WORDS", "AdkUser", "AnnealMemoryPlugin",
           "AnnealMemoryService", "AnnealSessionService", "AnnealUri", "ServiceUriError", "matched_words",
           "model_compressor", "parse_uri", "register_services"]
