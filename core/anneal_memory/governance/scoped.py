"""A namespace-scoped view of a Store: episodes for several tenants, users, projects
and agents in one database, without leaks.

Writes through the view are stamped with the namespace in the episode's metadata
(under the reserved key ``_anneal_ns``). Every read path (recall, retrieve_relevant,
get, export, status counts, the wrap package) goes through a backend whose SQL keeps
only the namespace's episodes, so filtering happens before any ranking. User-level
views (no project) see only user-level episodes; a project view also sees the user's
user-level episodes, as governed records do.

The view shares the parent Store's connection, transactions and audit chain, and
stamps the namespace into every audit entry it causes. Its continuity file is its own
(``<stem>.ns-<digest>.continuity.md``) so wraps of different namespaces never mix.
One wrap may be open per database at a time.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._fileio import sidecar_path
from ..errors import GovernanceError, ValidationError
from ..storage import governance_sql as sql
from ..store import Store
from .namespace import MemoryNamespace, coerce_namespace, digest

NS_META_KEY = sql.NS_META_KEY


class _ScopedAudit:
    """The parent's audit trail, adding the namespace to every entry's data."""

    def __init__(self, inner: Any, namespace: MemoryNamespace) -> None:
        self._inner = inner
        self._ns = namespace.to_dict()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def append(self, event: str, data: dict[str, Any], *, actor: str = "agent") -> Any:
        return self._inner.append(event, {**data, "namespace": self._ns}, actor=actor)


class ScopedStore(Store):
    """A Store view limited to one namespace. Close the parent, not the view."""

    _writes_namespace_stamp = True

    def __init__(self, store: Store, namespace: MemoryNamespace | Mapping[str, Any]) -> None:
        # Not Store.__init__: the view reuses the parent's open database and state.
        if isinstance(store, ScopedStore):
            raise ValidationError("scope the parent Store, not another scoped view")
        if not isinstance(store, Store):
            raise ValidationError("ScopedStore needs an open anneal_memory.Store")
        self.__dict__.update(copy.copy(store.__dict__))
        self.namespace = coerce_namespace(namespace)
        self.parent = store
        self._backend = sql.scoped_backend(store.backend, self.namespace.owner,  # type: ignore[assignment]
                                           self.namespace.project)
        self._audit = _ScopedAudit(store.audit_trail, self.namespace)  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ScopedStore({str(self.path)!r}, {self.namespace.label()!r})"

    def close(self) -> None:
        """A view owns nothing: closing it leaves the parent Store open."""

    @property
    def continuity_path(self) -> Path:
        tag = digest("continuity", self.namespace.to_dict())[:16]
        return sidecar_path(self.path, f".ns-{tag}.continuity.md")

    def import_(self, data: Mapping[str, Any] | str, *, via: str = "library",
                progress: Any = None) -> dict[str, Any]:
        """Refused: an export's episodes carry their own namespace stamps (or none), so
        importing them through a view could write into another namespace."""
        raise GovernanceError("import through the parent Store, not a scoped view: an "
                              "export's namespace stamps are its own")

    def _prepare_record(self, content: Any, episode_type: Any, source: Any, metadata: Any,
                        timestamp: Any, supersedes: Any, state_key: Any, trust_label: Any,
                        derived_from: Any) -> dict[str, Any]:
        if metadata is not None and not isinstance(metadata, dict):
            raise ValidationError("metadata must be a dict (or None)")
        if metadata and NS_META_KEY in metadata:
            raise ValidationError(f"metadata key {NS_META_KEY!r} is reserved for the "
                                  "namespace stamp: rename your key")
        stamped = {**(metadata or {}), NS_META_KEY: {
            **self.namespace.to_dict(), "owner": self.namespace.owner}}
        return super()._prepare_record(content, episode_type, source, stamped, timestamp,
                                       supersedes, state_key, trust_label, derived_from)


def scoped(store: Store, namespace: MemoryNamespace | Mapping[str, Any]) -> ScopedStore:
    """``ScopedStore(store, namespace)``."""
    return ScopedStore(store, namespace)
