"""The storage interface the rest of the library is written against.

A backend owns transactions, the episode tables, the keyword index, the wrap and
pattern-history tables and the in-database copy of the audit chain. The SQLite backend
is the embedded default; a server backend implements the same methods.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class EpisodeRow:
    id: str
    timestamp: str
    type: str
    content: str
    source: str
    session_id: str | None
    metadata: str | None  # JSON text
    trust: str
    state_key: str | None
    wrap_id: int | None
    rowid: int = 0


@dataclass
class SearchFilters:
    since: str | None = None
    until: str | None = None
    episode_type: str | None = None
    source: str | None = None
    include_superseded: bool = False
    only_unwrapped: bool = False
    ids: Sequence[str] | None = None


class Backend(abc.ABC):
    """What Store, recall, the wrap and the audit trail need from a database."""

    path: str

    # -- lifecycle / transactions
    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """An immediate write transaction; nested calls join the outer one."""

    @abc.abstractmethod
    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        """A consistent read snapshot."""

    # -- metadata
    @abc.abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abc.abstractmethod
    def set_meta(self, key: str, value: str | None) -> None: ...

    # -- episodes
    @abc.abstractmethod
    def insert_episode(self, row: EpisodeRow) -> None: ...

    @abc.abstractmethod
    def get_episodes(self, ids: Sequence[str]) -> dict[str, EpisodeRow]: ...

    @abc.abstractmethod
    def delete_episode_rows(self, ids: Sequence[str]) -> int: ...

    @abc.abstractmethod
    def search(self, filters: SearchFilters, *, phrase: str | None = None,
               words: Sequence[str] | None = None, limit: int = 100, offset: int = 0,
               order: str = "recent") -> tuple[list[tuple[EpisodeRow, float]], int]: ...

    # -- audit
    @abc.abstractmethod
    def audit_tip(self) -> tuple[int, str]: ...

    @abc.abstractmethod
    def audit_insert(self, entry: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def audit_entries(self, after_seq: int = 0, limit: int | None = None) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Escape hatch for backend-specific helpers inside this package only."""
