"""Copy a store between SQLite and PostgreSQL: ``migrate(src, dst)``, public as
``anneal_memory.migrate_store.migrate``. The command line is ``anneal-memory migrate-store
SRC DST`` (``python -m anneal_memory.migrate_store`` runs the same command); both call this
module, which sits below the CLI and that package.

The destination must be new or empty. Everything is copied in one transaction (episodes,
links, tombstones, wraps, pattern history, probes, metadata, the continuity and the
baton, the audit chain entry for entry, and a governed store's tables: records, the
current projection, tombstones and receipts, events, reviews, scoped continuities);
then the row counts and the destination's audit chain are checked against the source.
Crystals, spores and the outcome log kept on the Store are item rows and copied with
them; sidecar files of a tier opened with a path are not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from ._seam import roles_of
from .audit import AuditTrail
from .errors import StoreError
from .storage.pg_location import pg_dsn, redact


def _label(location: str) -> str:
    dsn = pg_dsn(location)
    return redact(dsn) if dsn else location


class MigrationReport(TypedDict):
    """What ``migrate`` copied and verified."""

    source: str
    destination: str
    #: rows copied, by table
    copied: dict[str, int]
    audit_entries: int
    #: whether the governed memory's tables came along
    governed: bool
    verified: bool


def migrate(src: str, dst: str, *,
            progress: Callable[[str, int, int], None] | None = None) -> MigrationReport:
    """Copy the store at ``src`` into the new store at ``dst`` and verify the copy.
    ``progress(table, rows_done, rows_total)`` is called as each table is copied."""
    if pg_dsn(dst):
        return _migrate(src, dst, progress)
    from pathlib import Path

    from .storage.sqlite_files import undone_on_failure

    target = Path(dst).expanduser()
    source = None if pg_dsn(src) else Path(src).expanduser()
    keep = frozenset() if source is None else frozenset(
        p for p in source.parent.glob(source.stem + "*") if p.is_file())
    with undone_on_failure(target, keep=keep, shared=False):  # a failed copy leaves nothing behind
        return _migrate(src, dst, progress)


def _migrate(src: str, dst: str,
             progress: Callable[[str, int, int], None] | None) -> MigrationReport:
    from .store import Store

    with Store(src, read_only=True) as source, Store(dst, audit=False) as target:
        src_tables, dst_tables = roles_of(source).tables, roles_of(target).tables
        governed = src_tables.governed()
        copied = src_tables.copy_into(dst_tables, progress or _quiet)
        want, got = src_tables.counts(governed), dst_tables.counts(governed)
        if want != got:
            raise StoreError(f"the copy does not match the source (source {want}, copy {got}): "
                             "nothing was kept at the destination (a PostgreSQL one is left as "
                             "written: drop it); retry")
        if pg_dsn(dst):
            chain = target.audit_trail.verify_stored()
        else:
            target.audit_trail.repair_files()
            chain = AuditTrail.verify(target.path)
        if not chain.valid:
            raise StoreError(f"the copied audit chain does not verify ({chain.reason} at entry "
                             f"{chain.chain_break_at}): check the source with 'anneal-memory "
                             "audit verify'")
        if source.audit_trail.tip() != target.audit_trail.tip():
            raise StoreError("the copied audit chain ends elsewhere than the source's")
    return {"source": _label(src), "destination": _label(dst), "copied": copied,
            "audit_entries": chain.total_entries, "governed": governed, "verified": True}


def _quiet(table: str, done: int, total: int) -> None:
    return None
