"""The unit of work: one open write transaction as the layers above storage see it.

``Store.transaction()`` yields a :class:`UnitOfWork`: the store's typed repositories
(:class:`~.storage.base.Repositories`) and its audit log, whose entries commit in the same
transaction as the rows they describe. :class:`Ground` is what the modules under the Store
facade (facts, trust, items, ...) need of a Store: they are written against it, not
against ``Store``, so they never import the facade they serve.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from .storage.base import Repositories, Scope


class AuditLog(Protocol):
    """The audit trail as a writer sees it: append an entry inside the open transaction."""

    @property
    def enabled(self) -> bool: ...

    def append(self, event: str, data: dict[str, Any], *,
               actor: str = "agent") -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class UnitOfWork(Repositories):
    """One open write transaction: the repositories, and the audit entry that commits with
    them. Nothing written through it is acknowledged until the ``with`` block exits; an
    exception rolls all of it back (and drops its pending audit entries)."""

    audit: AuditLog


class Ground(Protocol):
    """What the modules below the Store facade need of the Store (or scoped view) they
    act for: its repositories, a unit of work, whose memory it is and its trust ceiling."""

    scope: Scope
    trust_ceiling: str

    @property
    def repos(self) -> Repositories: ...

    @property
    def audit_trail(self) -> AuditLog: ...

    @property
    def read_only(self) -> bool: ...

    def transaction(self) -> AbstractContextManager[UnitOfWork]: ...

    def effective_trust_map(self, ids: Sequence[str]) -> dict[str, str]: ...
