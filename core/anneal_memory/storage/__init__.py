"""Storage backends. All SQL lives in this package; ``storage.open`` builds them and
returns the :class:`Database` (its roles per scope, its transactions)."""

from .base import ROOT, Backend, EpisodeRow, Scope
from .opening import Database, scoped_roles
from .opening import open_database as open  # noqa: A004 - storage.open(location)
from .sqlite import SQLiteBackend

__all__ = ["ROOT", "Backend", "Database", "EpisodeRow", "SQLiteBackend", "Scope", "open",
           "scoped_roles"]
