"""A namespace-scoped view of a Store: many tenants, users, projects and agents in one
database, without leaks. The views are built by the store layer (``store.ScopedStore``,
``store.UnscopedView``); governance code and users import them here.

The view writes each episode with its namespace in the indexed ``ns_owner`` /
``ns_project`` columns; every read path (recall, retrieve_relevant, get, export, status
counts, the wrap package) filters on them in SQL before anything is ranked. A user-level
view (no project) sees only user-level episodes; a project view also sees its user's
user-level episodes, as governed records do. Every mutation acts only on rows written in
exactly the view's namespace: an id of another namespace reads as an unknown id.

The view shares the parent Store's connection, transactions and audit chain (stamping
the namespace, hashed by the trail, into every entry it causes). Its continuity, baton, wraps, pattern
history and drift probes are its own, so a hundred users can wrap at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..storage.common import audit_counter_key
from ..store import ScopedStore, Store, UnscopedView
from ..store import _namespaces as namespaces
from .namespace import MemoryNamespace

__all__ = ["NS_META_KEY", "ScopedStore", "UnscopedView", "audit_counter_key", "namespaces",
           "scoped"]

#: The metadata key version 1 of scoped views stamped the namespace under (upgraded
#: stores move it into columns); still refused in user metadata.
NS_META_KEY = Store.RESERVED_METADATA_KEY


def scoped(store: Store, namespace: MemoryNamespace | Mapping[str, str | None]) -> ScopedStore:
    """``ScopedStore(store, namespace)``."""
    return ScopedStore(store, namespace)
