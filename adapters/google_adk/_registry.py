"""Registering the ``anneal:`` schemes in ADK's service registry.

ADK's tooling (``adk web``, ``adk api_server``, ``get_fast_api_app``) builds its memory and
session services from ``--memory_service_uri`` / ``--session_service_uri`` through
``google.adk.cli.service_registry``, after loading a ``services.yaml`` or ``services.py``
from the agents folder. A ``services.py`` holding::

    from anneal_memory.adapters.google_adk import register_services

    register_services()

makes every ``anneal`` scheme (see :mod:`._uri`) name :class:`AnnealMemoryService`;
``services.yaml`` can list the same class (ADK calls ``Cls(uri=..., agents_dir=...)``).
"""

from __future__ import annotations

from typing import Any

from ._uri import SCHEMES


def _memory_factory(uri: str, **kwargs: Any) -> Any:
    from ._service import AnnealMemoryService

    return AnnealMemoryService(uri=uri, **kwargs)


def register_services(registry: Any = None) -> None:
    """Register the ``anneal``, ``anneal+postgresql`` and ``anneal+postgres`` schemes for
    ADK's memory service in ``registry`` (default ADK's own, ``get_service_registry()``)."""
    if registry is None:
        from google.adk.cli.service_registry import get_service_registry

        registry = get_service_registry()
    for scheme in SCHEMES:
        registry.register_memory_service(scheme, _memory_factory)
