"""A namespace-scoped view of a Store: many tenants, users, projects and agents in one
database, without leaks.

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

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._fileio import sidecar_path
from ..errors import GovernanceError, ValidationError
from ..storage.base import Scope
from ..storage.scoped import ScopedBackend
from ..store import Store
from .namespace import MemoryNamespace, coerce_namespace, digest

#: The metadata key version 1 of scoped views stamped the namespace under (upgraded
#: stores move it into columns); still refused in user metadata.
NS_META_KEY = Store.RESERVED_METADATA_KEY


class _ScopedAudit:
    """The parent's audit trail, adding the namespace to every entry's data (the trail
    writes it as salted hashes, field by field)."""

    def __init__(self, inner: Any, namespace: MemoryNamespace, counter: str) -> None:
        self._inner = inner
        self._ns = namespace.to_dict()
        self._counter = counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def append(self, event: str, data: dict[str, Any], *, actor: str = "agent") -> Any:
        entry = self._inner.append(event, {**data, "namespace": self._ns}, actor=actor)
        if entry is not None:  # the namespace's own count, in the entry's transaction
            self._inner.count_entry(self._counter)
        return entry


def audit_counter_key(ns_tag: str) -> str:
    """The meta key counting one namespace's audit entries (by its hashed tag: the
    store's files and tables never name a user in clear)."""
    return f"audit_count:ns-{ns_tag}"


class ScopedStore(Store):
    """A Store view limited to one namespace. Close the parent, not the view."""

    def __init__(self, store: Store, namespace: MemoryNamespace | Mapping[str, Any]) -> None:
        # Not Store.__init__: the view reuses the parent's open database and state.
        if isinstance(store, ScopedStore):
            raise ValidationError("scope the parent Store, not another scoped view")
        if not isinstance(store, Store):
            raise ValidationError("ScopedStore needs an open anneal_memory.Store")
        ns = coerce_namespace(namespace, partial=True)
        self.__dict__.update(copy.copy(store.__dict__))
        self.namespace = ns
        self.parent = store
        self.scope = Scope(ns.owner, ns.project)
        self.ns_tag = digest("continuity", ns.to_dict())[:16]
        self._backend = ScopedBackend(store.backend, self.scope)  # type: ignore[assignment]
        self._audit = _ScopedAudit(store.audit_trail, ns,  # type: ignore[assignment]
                                   audit_counter_key(self.ns_tag))

    def __repr__(self) -> str:
        return f"ScopedStore({str(self.path)!r}, {self.namespace.label()!r})"

    def close(self) -> None:
        """A view owns nothing: closing it leaves the parent Store open."""

    @property
    def continuity_path(self) -> Path:
        return sidecar_path(self.path, f".ns-{self.ns_tag}.continuity.md")

    def _audit_entry_count(self) -> int:
        # the entries this namespace caused, counted as they were appended
        return int(self.parent.repos.meta.get_meta(audit_counter_key(self.ns_tag)) or 0)

    def _status_namespace(self) -> dict[str, Any] | None:
        return self.namespace.to_dict()

    def _namespace_totals(self) -> None:
        return None

    def scoped(self, namespace: MemoryNamespace | Mapping[str, Any]) -> ScopedStore:
        """Refused: scope the parent Store (a view of a view would widen nothing)."""
        raise ValidationError("scope the parent Store, not another scoped view")

    def import_(self, data: Mapping[str, Any] | str, *, via: str = "library",
                progress: Any = None, restore: bool | None = None) -> dict[str, Any]:
        """Refused: an export's episodes carry their own namespaces (or none), so
        importing them through a view could write into another namespace."""
        raise GovernanceError("import through the parent Store, not a scoped view: an "
                              "export's namespaces are its own")


class UnscopedView(Store):
    """The root store as a model served from it reads it: only the episodes written
    without a namespace. What a ``MemorySession`` without a namespace recalls through,
    so one user's memory in a shared store never reaches a run that named nobody."""

    namespace = None

    def __init__(self, store: Store) -> None:
        if isinstance(store, (ScopedStore, UnscopedView)):
            raise ValidationError("build the view over the parent Store")
        self.__dict__.update(copy.copy(store.__dict__))
        self.parent = store
        self.scope = Scope(None, None, unscoped_only=True)
        self._backend = ScopedBackend(store.backend, self.scope)  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UnscopedView({str(self.path)!r})"

    def scoped(self, namespace: MemoryNamespace | Mapping[str, Any]) -> ScopedStore:
        return ScopedStore(self.parent, namespace)

    def _namespace_totals(self) -> None:
        return None

    def close(self) -> None:
        """A view owns nothing: closing it leaves the parent Store open."""


def scoped(store: Store, namespace: MemoryNamespace | Mapping[str, Any]) -> ScopedStore:
    """``ScopedStore(store, namespace)``."""
    return ScopedStore(store, namespace)


def namespaces(store: Store) -> list[dict[str, Any]]:
    """Every namespace that holds episodes, saved wraps, governed records or pending
    reviews in ``store``: ``{"namespace": MemoryNamespace, "episodes", "wraps",
    "records", "pending_reviews"}``, ordered by tenant, user, project, agent. Episodes
    written without a namespace (the root's) are not listed."""
    import json


    if isinstance(store, ScopedStore):
        raise ValidationError("list namespaces on the parent Store, not a scoped view")
    counts: dict[tuple[str, str | None], dict[str, int]] = {}

    def slot(owner: str, project: str | None) -> dict[str, int]:
        return counts.setdefault((owner, project), {"episodes": 0, "wraps": 0, "records": 0,
                                                    "pending_reviews": 0})

    r = store.repos
    with r.read():
        for owner, project, eps, wraps in r.episodes.namespace_counts():
            slot(owner, project).update(episodes=eps, wraps=wraps)
        if r.governance.has_schema():
            for owner, project, records, pending in r.governance.namespace_counts():
                slot(owner, project).update(records=records, pending_reviews=pending)
    out = []
    for (owner, project), n in counts.items():
        try:
            tenant, user, agent = json.loads(owner)
            ns = MemoryNamespace(tenant=tenant, user=user, agent=agent, project=project)
        except (ValueError, TypeError, ValidationError):
            continue  # not a namespace this version writes
        out.append({"namespace": ns, **n})
    return sorted(out, key=lambda d: (d["namespace"].tenant, d["namespace"].user,
                                      d["namespace"].project or "", d["namespace"].agent))
