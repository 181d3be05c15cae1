"""The one place a backend is built: ``storage.open(location)`` reads the location (a
``postgresql://`` address or a SQLite path) and opens the backend for it, so nothing above
storage constructs or imports a concrete backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from .base import Backend, Scope
from .pg_location import pg_dsn
from .repos import Repositories


def open_backend(location: str | Path, *, read_only: bool = False, legacy: Any = None,
                 compacted_entries: Any = None) -> Backend:
    """The backend for ``location``: PostgreSQL for a server address, else SQLite.

    ``legacy`` (the 1.0.2 upgrade) and ``compacted_entries`` (the audit files' reader)
    are the SQLite backend's; a server database takes neither."""
    dsn = pg_dsn(location)
    if dsn is not None:
        from .postgres import PostgresBackend

        return PostgresBackend(dsn, read_only=read_only)
    from .sqlite import SQLiteBackend

    return SQLiteBackend(location, read_only=read_only, legacy=legacy,
                         compacted_entries=compacted_entries)


def scoped_roles(repos: Repositories, scope: Scope) -> Repositories:
    """The roles of ``repos`` (a store's, at the root) as one namespace sees them: every
    call carries ``scope`` (a scoped view's repositories)."""
    from .scoped import ScopedBackend

    return Repositories.of(ScopedBackend(cast(Backend, repos._conn), scope))  # type: ignore[arg-type]
