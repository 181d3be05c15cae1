"""Storage backends. All SQL lives in this package; ``storage.open`` builds them."""

from .base import Backend, EpisodeRow
from .opening import open_backend as open  # noqa: A004 - storage.open(location)
from .opening import scoped_roles
from .sqlite import SQLiteBackend

__all__ = ["Backend", "EpisodeRow", "SQLiteBackend", "open", "scoped_roles"]
