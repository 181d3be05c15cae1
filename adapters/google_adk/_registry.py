"""Registering the ``anneal:`` schemes in ADK's service registry.

ADK's tooling (``adk web``, ``adk api_server``, ``get_fast_api_app``) builds its memory and
session services from ``--memory_service_uri`` / ``--session_service_uri`` through
``google.adk.cli.service_registry``, after loading a ``services.yaml`` or ``services.py``
from the agents folder. A ``services.py`` holding::

    from anneal_memory.adapters.google_adk import register_services

    register_services()

makes every ``anneal`` scheme (see :mod:`._uri`) name :class:`AnnealMemoryService` and
:class:`AnnealSessionService`; ``services.yaml`` can list the same classes (ADK calls
``Cls(uri=..., agents_dir=...)``).
"""

from __future__ import annotations

from typing import Any

from ._uri import SCHEMES


def _memory_factory(uri: str, **kwargs: Any) -> Any:
    from ._service import AnnealMemoryService

    return AnnealMemoryService(uri=uri, **kwargs)


def _session_factory(uri: str, **kwargs: Any) -> Any:
    from ._sessions import AnnealSessionService

    return AnnealSessionService(uri=uri, **kwargs)


def register_services(registry: Any = None, *, memory: bool = True,
                      sessions: bool = True) -> None:
    """Register the ``anneal``, ``anneal+postgresql`` and ``anneal+postgres`` schemes for
    ADK's memory service (``memory``) and session service (``sessions``) in ``registry``
    (default ADK's own, ``get_service_registry()``)."""
    if registry is None:
        from google.adk.cli.service_registry import get_service_registry

        registry = get_service_registry()
    for scheme in SCHEMES:
        if memory:
            registry.register_memory_service(scheme, _memory_factory)
        if sessions:
            registry.register_session_service(scheme, _session_factory)
