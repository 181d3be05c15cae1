"""Whose memory a run is: the ``namespace=`` option of the adapters, resolved per run.

``namespace=`` is a mapping with any of tenant/user/project/agent, a ``MemoryNamespace``,
or a callable that receives the framework's run context and returns one. Where the
framework carries its own identity, the adapter passes it as ``default``. Each namespace
gets its own :class:`MemorySession` through :meth:`MemorySession.for_namespace` (cached,
one registry per store), so continuity, recall, de-duplication and the wrap are per user.
"""

from __future__ import annotations

from typing import Any

from anneal_memory.errors import ValidationError
from anneal_memory.governance.namespace import coerce_namespace
from anneal_memory.session import MemorySession


def check_namespace(namespace: Any, session: MemorySession) -> Any:
    """Validate ``namespace=`` at construction (a bad key or value raises now, naming it)."""
    if namespace is None:
        return None
    if session.namespace is not None:
        raise ValidationError("the memory you pass is already scoped to a namespace: pass the "
                              "parent Store with namespace=, or leave namespace out")
    if callable(namespace):
        return namespace
    coerce_namespace(namespace, partial=True)
    return namespace


def session_for(session: MemorySession, namespace: Any, context: Any = None,
                default: Any = None) -> MemorySession:
    """The session of one run: ``namespace`` (called with ``context`` when callable), else
    the framework's identity ``default``, else ``session`` itself. A session already scoped
    to a namespace is used as it is; a callable that returns None is refused (falling back
    to the whole store would show one user another's memory)."""
    if session.namespace is not None:
        return session
    chosen = namespace
    if callable(namespace):
        chosen = namespace(context)
        if chosen is None:
            raise ValidationError("the namespace callable returned None: return a mapping "
                                  "(e.g. {'user': ...}) or a MemoryNamespace for every run")
    if chosen is None:
        chosen = default
    return session if chosen is None else session.for_namespace(chosen)
