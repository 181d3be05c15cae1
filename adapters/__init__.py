"""Framework adapters. Each subpackage is installed with its own extra, e.g.
``pip install 'anneal-memory[langgraph]'``, and imported as
``anneal_memory.adapters.<framework>``.

What every adapter shares lives in :mod:`anneal_memory.adapters._base` and is re-exported
here: the base class :class:`MemoryAdapter` (session, the shared constructor options
:class:`MemoryOptions`, ``namespace=``, compressor,
``wrap_on_end``, ``wrap`` / ``awrap``, ``close``, ``memory_role``, ``anonymous``), the import guard
:func:`require_extra`, the hook guard :func:`hook_guard` and the identity rule
(:func:`identity`, :func:`check_identity`: an empty or invisible id is refused). None of it holds memory
logic: that is the core session's.
"""

from __future__ import annotations

from ._base import (
    ANONYMOUS_POLICIES,
    MEMORY_LABEL,
    MEMORY_OPTIONS,
    MEMORY_ROLES,
    NAMESPACE_FIELDS,
    AdapterMemory,
    Compress,
    MemoryAdapter,
    MemoryKwargs,
    MemoryOptions,
    attach_memory,
    check_anonymous,
    check_embedder,
    check_identity,
    check_memory_role,
    check_namespace,
    check_namespace_identity,
    hook_guard,
    identity,
    label_memory,
    namespace_key,
    open_session,
    options_except,
    require_extra,
)
from ._json import from_item_value, has_non_finite, item_value

__all__ = [
    "ANONYMOUS_POLICIES",
    "MEMORY_LABEL",
    "MEMORY_OPTIONS",
    "MEMORY_ROLES",
    "NAMESPACE_FIELDS",
    "AdapterMemory",
    "Compress",
    "MemoryAdapter",
    "MemoryKwargs",
    "MemoryOptions",
    "attach_memory",
    "check_anonymous",
    "check_embedder",
    "check_identity",
    "check_memory_role",
    "check_namespace",
    "from_item_value",
    "has_non_finite",
    "item_value",
    "check_namespace_identity",
    "hook_guard",
    "identity",
    "label_memory",
    "namespace_key",
    "open_session",
    "options_except",
    "require_extra",
]
