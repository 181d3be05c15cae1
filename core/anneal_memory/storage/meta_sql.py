"""The metadata, blob and erasure SQL, owned by the :class:`~.roles.Meta` role.

:class:`MetaSQL` is the statements every database shares: the ``meta`` key-value table,
and the per-namespace rows the erasure of a named owner walks (items, pattern history,
probes, wraps, tombstones). The named text blobs (continuity, baton) are the dialect's:
files beside a SQLite store (``blobs.SQLiteMetaSQL``), a table every host shares on
PostgreSQL (``postgres.PostgresMetaSQL``, which also takes the write lock before it
touches a metadata row another writer may hold). A backend names its dialect in
``_META_SQL``; the backend itself declares none of these methods.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from .audit_sql import SQLConnection
from .base import Scope
from .rows import ErasedCounts, MetaEntry, TextCell

#: per-namespace tables with text fields (table, key columns, text columns): the places
#: besides the episodes where an episode's text can be kept
TEXT_TABLES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("items", ("seq",), ("value", "metadata")),
    ("pattern_history", ("ns_key", "name"), ("explanations", "grounding")),
    ("drift_probes", ("id",), ("fact", "last_detail")),
    ("wraps", ("id",), ("metrics",)),
)


class MetaConnection(SQLConnection, Protocol):
    """What the metadata statements need of a backend besides raw SQL: its upsert, and
    its write transaction (a blob table's writes take one of their own)."""

    def _upsert(self, table: str, cols: Sequence[str], key: Sequence[str],
                values: Sequence[object]) -> None: ...
    def transaction(self, *, appends_only: bool = False
                    ) -> contextlib.AbstractContextManager[None]: ...


def ns_keys_sql(owner: str | None, keys: Sequence[str] | None) -> tuple[str, list[object]]:
    """``ns_key`` is one of ``keys``, or (``owner``) any key of that owner's namespaces
    (the owner's own and each of its projects: Scope.key)."""
    if owner is not None:
        return "(ns_key=? OR substr(ns_key, 1, ?) = ?)", [owner, len(owner) + 1, owner + "\x1f"]
    keys = list(keys or [])
    return (f"ns_key IN ({','.join('?' * len(keys))})" if keys else "FALSE"), list(keys)


class MetaSQL(abc.ABC):
    """The metadata and erasure statements over one backend's connection; the blobs are
    a subclass's (the dialect's)."""

    __slots__ = ("db",)

    def __init__(self, db: MetaConnection) -> None:
        self.db = db

    # -- metadata
    def get(self, key: str) -> str | None:
        r = self.db.q1("SELECT value FROM meta WHERE key=?", (key,))
        return None if r is None or r[0] is None else str(r[0])

    def set(self, key: str, value: str | None) -> None:
        if value is None:
            self.db.q("DELETE FROM meta WHERE key=?", (key,))
        else:
            self.db._upsert("meta", ("key", "value"), ("key",), (key, value))

    def add_int(self, key: str, delta: int) -> None:
        self.db.q("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
                  "SET value=CAST(CAST(meta.value AS BIGINT) + ? AS TEXT)",
                  (key, str(delta), delta))

    def with_prefix(self, prefix: str) -> list[MetaEntry]:
        return [MetaEntry(str(k), str(v)) for k, v in self.db.q(
            "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))
            if v is not None]

    def delete_if(self, key: str, value: str) -> bool:
        return bool(self.db.q("DELETE FROM meta WHERE key=? AND value=? RETURNING key",
                              (key, value)))

    def rows(self) -> list[MetaEntry]:
        return [MetaEntry(str(k), str(v)) for k, v in self.db.q("SELECT key, value FROM meta")
                if v is not None]

    # -- named text blobs (the continuity file, the baton): the dialect's
    @abc.abstractmethod
    def read_blob(self, name: str) -> str | None: ...
    @abc.abstractmethod
    def write_blob(self, name: str, text: str, *, lock: str | None = None) -> None: ...
    @abc.abstractmethod
    def update_blob(self, name: str, fn: Callable[[str | None], str | None], *,
                    lock: str | None = None) -> str | None:
        """Read-modify-write under the blob's lock; ``fn`` returning None leaves it as is."""
    @abc.abstractmethod
    def delete_blob(self, name: str, *, lock: str | None = None) -> bool: ...

    # -- erasure: the places besides the episodes where an episode's text can be kept
    def owners(self) -> list[str]:
        """Every namespace owner with rows in this store."""
        found = {str(r[0]) for r in self.db.q(
            "SELECT DISTINCT ns_owner FROM episodes WHERE ns_owner IS NOT NULL")}
        for table, _k, _c in TEXT_TABLES:
            for (key,) in self.db.q(f"SELECT DISTINCT ns_key FROM {table} WHERE ns_key <> ''"):
                found.add(str(key).partition("\x1f")[0])
        return sorted(found)

    def text_cells(self, ns_keys: Sequence[str]) -> Iterator[TextCell]:
        """(table, key values, column, text) of every stored text field in those namespaces."""
        cond, params = ns_keys_sql(None, ns_keys)
        for table, keys, cols in TEXT_TABLES:
            for row in self.db.q(f"SELECT {', '.join(keys + cols)} FROM {table} WHERE {cond}",
                                 params):
                for i, col in enumerate(cols):
                    text = row[len(keys) + i]
                    if text:
                        yield TextCell(table, tuple(row[:len(keys)]), col, str(text))

    def set_text_cell(self, table: str, key: tuple[object, ...], column: str, text: str) -> None:
        spec = next(t for t in TEXT_TABLES if t[0] == table)
        if column not in spec[2]:
            raise ValueError(f"{table}.{column} is not a text field")
        where = " AND ".join(f"{k}=?" for k in spec[1])
        self.db.q(f"UPDATE {table} SET {column}=? WHERE {where}", (text, *key))

    def episode_ids_of_owner(self, owner: str) -> list[str]:
        return [str(r[0]) for r in self.db.q("SELECT id FROM episodes WHERE ns_owner=?",
                                             (owner,))]

    def erase_namespace_rows(self, owner: str) -> ErasedCounts:
        """Remove every per-namespace row of ``owner``'s namespaces (items, wraps, pattern
        history, probes) and take the owner off its tombstones (ids and hashes stay).
        Episodes go through the delete path first, so their links are rewired."""
        cond, params = ns_keys_sql(owner, None)
        items, patterns, probes, wraps = (
            self.db._rowcount(f"DELETE FROM {table} WHERE {cond}", params)
            for table, _k, _c in TEXT_TABLES)
        tombstones = self.db._rowcount(
            "UPDATE tombstones SET ns_owner=NULL, ns_project=NULL WHERE ns_owner=?", (owner,))
        return ErasedCounts(items, patterns, probes, wraps, tombstones)

    def erase_scope_rows(self, target: Scope) -> ErasedCounts:
        """``erase_namespace_rows`` for one project namespace (``owner`` + ``project``),
        and its per-namespace meta keys."""
        items, patterns, probes, wraps = (
            self.db._rowcount(f"DELETE FROM {table} WHERE ns_key=?", (target.key,))
            for table, _k, _c in TEXT_TABLES)
        tombstones = self.db._rowcount(
            "UPDATE tombstones SET ns_owner=NULL, ns_project=NULL WHERE ns_owner=? AND "
            "ns_project=?", (target.owner, target.project))
        meta = self.db._rowcount("DELETE FROM meta WHERE substr(key, length(key) - ?) = ?",
                                 (len(target.key), "@" + target.key))
        return ErasedCounts(items, patterns, probes, wraps, tombstones, meta)

    def erase_owner_meta(self, owner: str, extra_keys: Sequence[str] = ()) -> int:
        """Drop the per-namespace meta keys of ``owner``'s namespaces (``key@<scope key>``,
        see ns_meta_key) and ``extra_keys``."""
        doomed = [str(k) for (k,) in self.db.q("SELECT key FROM meta")
                  if str(k).endswith("@" + owner) or ("@" + owner + "\x1f") in str(k)]
        return sum(self.db._rowcount("DELETE FROM meta WHERE key=?", (k,))
                   for k in [*doomed, *extra_keys])

    def owner_projects(self, owner: str) -> list[str | None]:
        """The projects ``owner`` has memory in (None: the owner's user-level memory)."""
        found: set[str | None] = {None}
        for (p,) in self.db.q("SELECT DISTINCT ns_project FROM episodes WHERE ns_owner=?",
                              (owner,)):
            found.add(None if p is None else str(p))
        cond, params = ns_keys_sql(owner, None)
        for table, _k, _c in TEXT_TABLES:
            for (key,) in self.db.q(f"SELECT DISTINCT ns_key FROM {table} WHERE {cond}",
                                    params):
                _o, _, project = str(key).partition("\x1f")
                found.add(project or None)
        return sorted(found, key=lambda p: p or "")
