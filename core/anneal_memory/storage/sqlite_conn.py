"""The raw DB-API connection of a SQLite store as this package uses it.

The connections come from the standard library's ``sqlite3`` or a ``pysqlite3`` build
(``driver.sqlite_driver``): two modules, one interface. :class:`RawConnection` names the
part of it the read-only looks, the audit chain's raw reads and the keyword-index
upkeep call, so those take a typed connection whichever module opened it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol


class RawCursor(Protocol):
    """A cursor over the rows of one statement."""

    def fetchone(self) -> tuple[object, ...] | None: ...
    def fetchall(self) -> list[tuple[object, ...]]: ...
    def __iter__(self) -> Iterator[tuple[object, ...]]: ...


class RawConnection(Protocol):
    """A DB-API connection to a SQLite database (``sqlite3`` or ``pysqlite3``)."""

    def execute(self, sql: str, parameters: Sequence[object] = ..., /) -> RawCursor: ...
    def close(self) -> None: ...
