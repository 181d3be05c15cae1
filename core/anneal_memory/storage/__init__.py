"""Storage backends. All SQL lives in this package."""

from .base import Backend, EpisodeRow
from .sqlite import SQLiteBackend

__all__ = ["Backend", "EpisodeRow", "SQLiteBackend"]
