"""Audit commands: audit (read the trail), audit verify / verify, audit-repair."""

from __future__ import annotations

import argparse
import json
from collections import deque
from typing import Any

from ..audit import AuditTrail
from ..clock import parse_since
from ..errors import AuditError
from .common import add_json, command, db_path, emit, group, open_store, progress


def register(sub: Any) -> None:
    p, asub = group(sub, "audit", "read the hash-chained audit trail (or: audit verify)")
    p.add_argument("--since", help="ISO time or an age such as 7d, 12h")
    p.add_argument("--event", action="append", default=[],
                   help="only this event (repeatable), e.g. record, delete, continuity_saved")
    p.add_argument("--limit", type=int, default=50, help="the newest N entries (0: all)")
    add_json(p)
    p.set_defaults(func=cmd_audit)
    command(asub, "verify", "walk the whole chain and report the first break", cmd_verify)

    command(sub, "verify", "verify the audit chain (same as audit verify)", cmd_verify)

    r = command(sub, "audit-repair",
                "rebuild the audit files and manifest from the database's copy", cmd_repair)
    r.add_argument("--set-aside-unreadable", action="store_true",
                   help="accepted for compatibility: files are set aside, never deleted")
    r.add_argument("--force", action="store_true",
                   help="rebuild even when the trail verifies")


def _existing_db(args: argparse.Namespace) -> Any:
    path = db_path(args)
    if not path.exists():
        raise AuditError(f"no store at {path}: pass --db PATH of an existing store "
                         "(or create one with anneal-memory init)")
    return path


def cmd_audit(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise AuditError("--limit must be 0 (all) or more")
    path = _existing_db(args)
    since = parse_since(args.since) if args.since else None
    events = set(args.event)
    keep: deque[dict[str, Any]] = deque(maxlen=args.limit or None)
    for _name, entry in AuditTrail.iter_entries(path):
        if events and entry.get("event") not in events:
            continue
        if since and str(entry.get("ts", "")) < since:
            continue
        keep.append(entry)
    entries = list(keep)
    lines = [f"{e['seq']:>6}  {e['ts'][:19]}  {e['actor']:<8} {e['event']:<20} "
             f"{json.dumps(e['data'], ensure_ascii=False, sort_keys=True)}" for e in entries]
    emit(args, {"entries": entries, "count": len(entries), "total": len(entries),
                "anchor_trusted": _anchored(path)}, "\n".join(lines) or "(no entries)")
    return 0


def _anchored(path: Any) -> bool:
    """True when the trail starts at its genesis entry (not after a cut or a lost head)."""
    from ..audit import GENESIS

    for _name, entry in AuditTrail.iter_entries(path):
        return bool(entry.get("prev_hash") == GENESIS)
    return True


def cmd_verify(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    progress(f"verifying the audit chain of {path} ...")
    res = AuditTrail.verify(path, progress=lambda name, n: progress(
        f"  {name} ({n:,} entries verified so far)"))
    data = res.to_dict()
    # 1.0.2's keys beside ours
    data.update(error=res.reason, anchor_trusted=_anchored(path), set_aside=[], skipped_lines=0)
    if args.json:
        emit(args, data)
    if not res.valid:
        raise AuditError(f"the audit chain breaks at entry {res.chain_break_at} in "
                         f"{res.chain_break_file} ({res.reason}): keep the files as evidence; "
                         "anneal-memory audit-repair rebuilds them from the database's copy")
    if not args.json:
        print(f"Audit chain valid: {res.total_entries} entries in {res.files_verified} file(s)"
              + (f", {res.unmirrored_entries} not yet mirrored" if res.unmirrored_entries else ""))
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    _existing_db(args)
    with open_store(args) as store:
        result = AuditTrail.repair(store.path, store.backend, force=args.force)
    emit(args, result, f"{result['status']}: rebuilt {result['rebuilt_entries']} entries; "
         f"set aside: {', '.join(result['set_aside']) or 'nothing'}")
    return 0
