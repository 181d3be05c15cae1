"""The one place a backend is built: ``storage.open(location)`` reads the location (a
``postgresql://`` address or a SQLite path), opens the backend for it and returns the
:class:`Database`, so nothing above storage constructs or imports a concrete backend.

A :class:`Database` is what the layers above hold of one open database: its roles for a
namespace scope (:meth:`Database.roles`, built once per scope asked for at the root, or
once per view), a write transaction over them (:meth:`Database.unit`), a read snapshot,
and the connection the transaction machinery and the audit trail run on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import ROOT, Backend, Scope
from .pg_location import pg_dsn
from .repos import Repositories
from .roles import AuditChain


class Database:
    """One open database: its connection and the roles built over it for each scope."""

    def __init__(self, connection: Backend) -> None:
        self.connection = connection
        self.audit = AuditChain(connection, ROOT)

    @property
    def path(self) -> str:
        return self.connection.path

    @property
    def read_only(self) -> bool:
        return self.connection.read_only

    @property
    def closed(self) -> bool:
        return self.connection.closed

    def roles(self, scope: Scope = ROOT) -> Repositories:
        """The roles acting for ``scope``: the root's are built once and kept; a
        namespace's are built anew on each call (hold them for as long as the view
        lives), over a connection that carries the scope on every call."""
        return Repositories.build(self.connection, scope) if scope != ROOT else \
            Repositories.of(self.connection)

    @contextlib.contextmanager
    def unit(self, scope: Scope = ROOT, *, appends_only: bool = False) -> Iterator[Repositories]:
        """A write transaction over the roles of ``scope``: committed when the block
        exits, rolled back whole on an exception; nested calls join the outer one."""
        roles = self.roles(scope)
        with self.connection.transaction(appends_only=appends_only):
            yield roles

    def read(self) -> contextlib.AbstractContextManager[None]:
        """A consistent read snapshot."""
        return self.connection.read()

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_database(location: str | Path, *, read_only: bool = False,
                  legacy: Any = None, compacted_entries: Any = None) -> Database:
    """The database at ``location``: PostgreSQL for a server address, else SQLite.

    ``legacy`` (the 1.0.2 upgrade) and ``compacted_entries`` (the audit files' reader)
    are the SQLite backend's; a server database takes neither."""
    dsn = pg_dsn(location)
    if dsn is not None:
        from .postgres import PostgresBackend

        return Database(PostgresBackend(dsn, read_only=read_only))
    from .sqlite import SQLiteBackend

    return Database(SQLiteBackend(location, read_only=read_only, legacy=legacy,
                                  compacted_entries=compacted_entries))


def scoped_roles(repos: Repositories, scope: Scope) -> Repositories:
    """The roles of ``repos`` (a store's, at the root) as one namespace sees them: every
    call carries ``scope`` (a scoped view's repositories)."""
    return repos.within(scope)
