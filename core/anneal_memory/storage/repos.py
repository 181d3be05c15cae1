"""The typed roles of one database, as the layers above storage hold them.

:class:`Repositories` is what ``store.repos`` returns: the data roles of the store's
database, each built for the store's (or scoped view's) namespace scope (see
``roles.py``), a read snapshot, and the whole-table role for backup and migration, the
episodes' vectors and the governed runtime's tables. No raw SQL, no connection: those
stay in ``storage/``. One set is built per database and scope, when it is first asked
for, and every later ``Repositories.of`` of the same backend returns that same set.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import cast

from .base import ROOT, Backend, Connection, Scope
from .governance_sql import GovernanceRepo
from .pg_copy import Tables
from .roles import Episodes, Items, Links, Meta, OutOfScope, Wraps
from .scoped import ScopedBackend
from .vectors import VectorRepo

#: how many role sets are built (a counter the seam test reads: once per database and
#: scope, never per ``store.repos``)
BUILT = [0]


@dataclass(frozen=True)
class Repositories:
    """Episodes, links, wraps, items and metadata of one Store (or scoped view)."""

    episodes: Episodes
    links: Links
    wraps: Wraps
    items: Items
    meta: Meta
    tables: Tables
    vectors: VectorRepo
    governance: GovernanceRepo
    _conn: Connection = field(repr=False, compare=False)

    @classmethod
    def build(cls, db: Backend, scope: Scope) -> Repositories:
        """The roles of ``db`` built for ``scope`` (a namespace's through a new
        :class:`~.scoped.ScopedBackend`, which the vectors and governance helpers take)."""
        if scope == ROOT:
            BUILT[0] += 1
            return cls(Episodes(db, scope), Links(db, scope), Wraps(db, scope),
                       Items(db, scope), Meta(db, scope), Tables(db), VectorRepo(db),
                       GovernanceRepo(db), db)
        return cls.of(ScopedBackend(db, scope))

    @classmethod
    def of(cls, backend: Backend | ScopedBackend) -> Repositories:
        """Every role of ``backend`` (a scoped view's: those built for its namespace),
        built once and kept beside it."""
        roles = cast("Repositories | None", backend.__dict__.get("_repositories"))
        if roles is None:
            if isinstance(backend, ScopedBackend):
                BUILT[0] += 1
                roles = cls(backend.episodes, backend.links, backend.wraps, backend.items,
                            backend.meta, Tables(backend.inner), VectorRepo(backend),
                            GovernanceRepo(backend), backend)
            else:
                roles = cls.build(backend, ROOT)
            backend.__dict__["_repositories"] = roles
        return roles

    @property
    def scope(self) -> Scope:
        """Whose memory these roles act on."""
        return self.episodes.scope

    def within(self, scope: Scope) -> Repositories:
        """The roles of the same database for ``scope``: only the root's roles (which see
        every namespace already) may name another; a scoped set raises OutOfScope."""
        if self.scope != ROOT:
            raise OutOfScope("a namespace's roles cannot reach another namespace: ask the "
                             "root Store's roles")
        if scope == ROOT:
            return self
        if not isinstance(self._conn, Backend):
            raise OutOfScope("these roles hold no database of their own")
        return Repositories.build(self._conn, scope)

    def read(self) -> AbstractContextManager[None]:
        """A consistent read snapshot across the roles."""
        return self._conn.read()
