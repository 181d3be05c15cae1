"""Namespaces, the isolation boundary of governed memory: defined in
``anneal_memory._namespace`` (below the Store, which filters by them) and kept here under
the name governance code and users import."""

from .._namespace import (
    DEFAULT_FIELD,
    FIELDS,
    MemoryNamespace,
    coerce_namespace,
    digest,
    identity_problem,
    invisible,
    require_view,
)

__all__ = ["DEFAULT_FIELD", "FIELDS", "MemoryNamespace", "coerce_namespace", "digest",
           "identity_problem", "invisible", "require_view"]
