"""Which SQLite the embedded backend runs on, and the oldest one it accepts.

The store needs FTS5 with the trigram tokenizer and ``RETURNING``; older SQLite builds
also lack fixes the delete path depends on. The standard library's ``sqlite3`` is used
when it is new enough; otherwise a ``pysqlite3`` build (``pip install pysqlite3-binary``,
which bundles a current SQLite) when one is installed.
"""

from __future__ import annotations

import functools
from types import ModuleType

from ..errors import StoreError

MIN_SQLITE = (3, 39, 0)
MIN_SQLITE_TEXT = ".".join(map(str, MIN_SQLITE))


def _version(module: ModuleType) -> tuple[int, ...]:
    return tuple(int(p) for p in str(module.sqlite_version).split(".")[:3])


def _usable(module: ModuleType) -> bool:
    if _version(module) < MIN_SQLITE:
        return False
    conn = module.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
        return True
    except module.DatabaseError:
        return False
    finally:
        conn.close()


def _candidates() -> list[ModuleType]:
    found: list[ModuleType] = []
    import sqlite3

    found.append(sqlite3)
    try:
        from pysqlite3 import dbapi2  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        found.append(dbapi2)
    return found


def choose_driver(candidates: list[ModuleType]) -> ModuleType:
    """The first of ``candidates`` whose SQLite is new enough, else a StoreError that
    says which version was found and how to get a newer one."""
    for module in candidates:
        if _usable(module):
            return module
    seen = ", ".join(str(m.sqlite_version) for m in candidates) or "none"
    raise StoreError(
        f"anneal-memory needs SQLite {MIN_SQLITE_TEXT} or newer with FTS5 (found {seen}): "
        "use a newer Python, or install pysqlite3-binary, which bundles a current SQLite "
        "and is picked up automatically"
    )


@functools.lru_cache(maxsize=1)
def sqlite_driver() -> ModuleType:
    """The DB-API module every SQLite connection of the package is opened with."""
    return choose_driver(_candidates())
