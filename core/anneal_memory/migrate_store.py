"""``anneal-memory migrate-store SRC DST``: copy a store between SQLite and PostgreSQL.

The destination must be new or empty. Everything is copied in one transaction (episodes,
links, tombstones, wraps, pattern history, probes, metadata, the continuity and the
baton, the audit chain entry for entry, and a governed store's tables: records, the
current projection, tombstones and receipts, events, reviews, scoped continuities);
then the row counts and the destination's audit chain are checked against the source.
Progress goes to stderr. Crystal, spore and outcome sidecar files are per-host files and
are not copied.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .audit import AuditTrail, verify_database
from .errors import AnnealMemoryError, StoreError
from .storage.pg_copy import copy_all, counts, is_governed
from .storage.pg_location import pg_dsn, redact


def _label(location: str) -> str:
    dsn = pg_dsn(location)
    return redact(dsn) if dsn else location


def _progress(stream: Any) -> Any:
    def show(table: str, done: int, total: int) -> None:
        width = 30
        filled = width if not total else int(width * done / total)
        end = "\n" if done >= total else ""
        stream.write(f"\r{table:<16} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}{end}")
        stream.flush()
    return show


def migrate(src: str, dst: str, *, stream: Any = sys.stderr) -> dict[str, Any]:
    """Copy the store at ``src`` into the new store at ``dst`` and verify the copy."""
    from .store import Store

    with Store(src, read_only=True) as source, Store(dst, audit=False) as target:
        governed = is_governed(source.backend)
        copied = copy_all(source.backend, target.backend, _progress(stream))
        want, got = counts(source.backend, governed), counts(target.backend, governed)
        if want != got:
            raise StoreError(f"the copy does not match the source (source {want}, copy {got}): "
                             "the destination is left as written; drop it and retry")
        if pg_dsn(dst):
            chain = verify_database(target.backend)
        else:
            AuditTrail.repair(target.path, target.backend)
            chain = AuditTrail.verify(target.path)
        if not chain.valid:
            raise StoreError(f"the copied audit chain does not verify ({chain.reason} at entry "
                             f"{chain.chain_break_at}): check the source with 'anneal-memory "
                             "audit verify'")
        if source.backend.audit_tip() != target.backend.audit_tip():
            raise StoreError("the copied audit chain ends elsewhere than the source's")
    return {"source": _label(src), "destination": _label(dst), "copied": copied,
            "audit_entries": chain.total_entries, "governed": governed, "verified": True}


def main(argv: list[str] | None = None) -> int:
    """CLI entry: ``migrate-store SRC DST``; 0 on a verified copy, 1 on an error."""
    parser = argparse.ArgumentParser(
        prog="anneal-memory migrate-store",
        description="Copy a store, governed memory included, between SQLite and PostgreSQL "
                    "(postgresql://...), verifying row counts and the audit chain.")
    parser.add_argument("src", help="the store to copy: a .db path or a postgresql:// URL")
    parser.add_argument("dst", help="a new, empty store: a .db path or a postgresql:// URL")
    args = parser.parse_args(argv)
    try:
        result = migrate(args.src, args.dst)
    except AnnealMemoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    governed = " (with its governed memory)" if result["governed"] else ""
    print(f"copied {sum(result['copied'].values())} rows from {result['source']} to "
          f"{result['destination']}{governed}; audit chain verified "
          f"({result['audit_entries']} entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
