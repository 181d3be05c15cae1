"""The typed roles of one database, as the layers above storage hold them.

:class:`Repositories` is what ``store.repos`` returns: the data roles of the store's
backend (a scoped view's carry its namespace on every call), a read snapshot, and the
whole-table role for backup and migration, the
episodes' vectors and the governed runtime's tables. No raw SQL, no connection: those stay in
``storage/``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from .base import Backend, Connection, EpisodeRepo, ItemRepo, LinkRepo, MetaRepo, WrapRepo
from .governance_sql import GovernanceRepo
from .pg_copy import Tables
from .vectors import VectorRepo


@dataclass(frozen=True)
class Repositories:
    """Episodes, links, wraps, items and metadata of one Store (or scoped view)."""

    episodes: EpisodeRepo
    links: LinkRepo
    wraps: WrapRepo
    items: ItemRepo
    meta: MetaRepo
    tables: Tables
    vectors: VectorRepo
    governance: GovernanceRepo
    _conn: Connection = field(repr=False, compare=False)

    @classmethod
    def of(cls, backend: Backend) -> Repositories:
        """Every role of ``backend`` (or of a namespace-scoped backend standing in for one)."""
        return cls(backend, backend, backend, backend, backend, Tables(backend),
                   VectorRepo(backend), GovernanceRepo(backend), backend)

    def read(self) -> AbstractContextManager[None]:
        """A consistent read snapshot across the roles."""
        return self._conn.read()
