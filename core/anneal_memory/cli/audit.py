"""Audit commands: audit (read the trail), audit verify / verify [--anchor], audit head,
audit-repair.

Every command takes a SQLite path or a ``postgresql://`` URL; a PostgreSQL store keeps its
one chain in the database, so there are no files to repair there.
"""

from __future__ import annotations

import argparse
import json
from collections import deque
from typing import TYPE_CHECKING, Any

from .._inputs import whole_number
from ..audit import AuditTrail, RepairReport, ranges_text
from ..clock import parse_since
from ..errors import AuditError, ValidationError
from .common import (
    Progress,
    add_json,
    add_verbose,
    brief_lists,
    command,
    emit,
    group,
    open_store,
    require_store,
    shown_location,
)

if TYPE_CHECKING:
    from .common import Subcommands


#: Every event the library writes (a test keeps this in step with the code). ``--event``
#: refuses a name that is neither one of these nor present in the trail being read.
AUDIT_EVENTS = frozenset({
    "record", "delete", "delete_refused", "prune", "import", "trust_set", "operator_gate",
    "supersede", "unsupersede", "state_key_set", "state_key_cleared",
    "wrap_started", "wrap_cancelled", "wrap_completed", "continuity_saved", "continuity_refused",
    "schema_set", "baton_policy", "probe_added", "probe_retired", "store_upgraded",
    "worklist_reviewed", "pattern_demoted", "pattern_retired",
    "crystallize", "crystal_retire", "crystal_restore",
    "gov_write", "gov_correct", "gov_approve", "gov_decision", "gov_refused", "gov_forget",
    "gov_hide", "gov_rebuild", "gov_review_queued", "gov_review_decided",
    "namespace_erased", "import_hashes", "wrap_taken_over", "wrap_policy",
    "mcp_token_created", "mcp_token_revoked",
})


def register(sub: Subcommands) -> None:
    p, asub = group(sub, "audit", "read the hash-chained audit trail (or: audit verify)")
    p.add_argument("--since", help="only entries from this ISO time or age on, e.g. 7d, 12h")
    p.add_argument("--event", action="append", default=[], metavar="NAME",
                   help="only this event (repeatable), e.g. record, delete, continuity_saved")
    p.add_argument("--limit", type=int, default=50, metavar="N",
                   help="the newest N entries (default 50; 0: all)")
    add_verbose(p)
    add_json(p)
    p.set_defaults(func=cmd_audit)
    for v in (command(asub, "verify", "walk the whole chain and report the first break",
                      cmd_verify),
              command(sub, "verify", "verify the audit chain (same as audit verify)",
                      cmd_verify)):
        v.add_argument("--anchor", metavar="HASH_OR_FILE",
                       help="also check the chain still holds this entry: a hash, SEQ:HASH, "
                            "or a file holding the output of 'audit head --json' kept elsewhere")
        v.add_argument("--deep", action="store_true",
                       help="also check every episode's content, type, trust and namespace "
                            "against the entry that recorded it (one pass over both)")
    command(asub, "head", "print the newest entry's seq and hash (keep it elsewhere as an "
            "anchor for verify --anchor)", cmd_head)

    r = command(sub, "audit-repair",
                "rebuild the audit files and manifest from the database's copy and the "
                "lines still on disk", cmd_repair)
    r.add_argument("--set-aside-unreadable", action="store_true",
                   help="accepted for compatibility: files are set aside, never deleted")
    r.add_argument("--force", action="store_true",
                   help="rebuild even when the trail verifies")


def cmd_audit(args: argparse.Namespace) -> int:
    whole_number(args.limit, "--limit")
    loc = require_store(args)
    since = parse_since(args.since) if args.since else None
    events = set(args.event)
    keep: deque[dict[str, Any]] = deque(maxlen=args.limit or None)
    seen: set[str] = set()
    for _name, entry in AuditTrail.iter_entries(loc):
        seen.add(entry.get("event", ""))
        if events and entry.get("event") not in events:
            continue
        if since and str(entry.get("ts", "")) < since:
            continue
        keep.append(entry)
    unknown = sorted(events - AUDIT_EVENTS - seen)
    if unknown:
        raise ValidationError(f"unknown audit event(s) {', '.join(unknown)}: use one of "
                              f"{', '.join(sorted(AUDIT_EVENTS | (seen - {''})))}")
    entries = list(keep)
    # ids can run to thousands per entry (an import): plain output shows the first few
    lines = [f"{e['seq']:>6}  {e['ts'][:19]}  {e['actor']:<8} {e['event']:<20} "
             + json.dumps(brief_lists(e["data"], args.verbose), ensure_ascii=False,
                          sort_keys=True) for e in entries]
    emit(args, {"entries": entries, "count": len(entries), "total": len(entries),
                "anchor_trusted": _anchored(loc)}, "\n".join(lines) or "(no entries)")
    return 0


def _anchored(path: Any) -> bool:
    """True when the trail starts at its genesis entry (not after a cut or a lost head)."""
    from .._audit_chain import GENESIS

    for _name, entry in AuditTrail.iter_entries(path):
        return bool(entry.get("prev_hash") == GENESIS)
    return True


def cmd_verify(args: argparse.Namespace) -> int:
    loc = require_store(args)
    bar = Progress()
    bar.update(f"verifying the audit chain of {shown_location(args)} ...", force=True)
    res = AuditTrail.verify(loc, progress=lambda name, n: bar.update(
        f"verifying {name}: {n:,} entries checked"), anchor=getattr(args, "anchor", None))
    bar.done(f"verified {res.total_entries:,} entries")
    data = res.to_dict()
    # 1.0.2's keys beside ours
    data.update(error=res.reason, anchor_trusted=_anchored(loc), set_aside=[], skipped_lines=0)
    if not res.valid:
        if isinstance(loc, str):
            fix = ": a PostgreSQL store keeps its chain in the database only; restore it from a backup"
        elif "AuditTrail.repair" in str(res.reason):
            fix = ""  # the reason names the fix already (the CLI words it as a command)
        elif res.chain_break_file == "database" and "cannot be read" in str(res.reason):
            # audit-repair rebuilds the files from the database's copy: it cannot help
            fix = ("; the database itself is damaged, so audit-repair (which rebuilds the "
                   "files from it) cannot help: keep every file as evidence, restore the "
                   "store from a backup (anneal-memory import --restore FILE into a new "
                   "--db), and save what SQLite can still read from a copy with sqlite3's "
                   ".recover (sqlite3 COPY.db .recover > recovered.sql)")
        else:
            fix = ("; keep the files as evidence: anneal-memory audit-repair rebuilds them "
                   "from the database's copy")
        where = (f"breaks at entry {res.chain_break_at} in {res.chain_break_file}"
                 if res.chain_break_at is not None else f"cannot be read ({res.chain_break_file})")
        err = AuditError(f"the audit chain {where}: {res.reason}{fix}")
        err.json_data = data  # type: ignore[attr-defined]  # --json: one document, with the result
        raise err
    deep_line = ""
    if getattr(args, "deep", False):
        from ..store import Store

        bar.update("checking every episode against its audit entry ...", force=True)
        with Store(loc, read_only=True) as store:
            deep = store.verify_content()
        bar.done(f"checked {deep.checked:,} episodes")
        data["deep"] = deep.to_dict()
        if not deep.valid:
            first = deep.mismatches[0]
            err = AuditError(
                f"the chain is intact but {len(deep.mismatches)} stored field(s) differ from "
                f"what it recorded (first: {deep.describe(first)}): the store's tables were "
                "changed outside the library; restore the store from a backup")
            err.json_data = data  # type: ignore[attr-defined]
            raise err
        covered = deep.checked - len(deep.uncovered)
        deep_line = (f"; {covered} of {deep.checked} episodes checked against their audit "
                     "entries, all match" + (
                         f" ({len(deep.uncovered)} have no per-episode entry: written by "
                         "1.0.2 or an earlier build)" if deep.uncovered else ""))
    if args.json:
        emit(args, data)
    else:
        anchored = (f"; anchor {res.anchor['seq'] or ''}:{res.anchor['hash'][:12]}... matches"
                    if res.anchor else "")
        print(f"Audit chain valid: {res.total_entries} entries in {res.files_verified} file(s)"
              + (f", {res.unmirrored_entries} not yet mirrored" if res.unmirrored_entries else "")
              + anchored + deep_line)
    return 0


def cmd_head(args: argparse.Namespace) -> int:
    head = AuditTrail.head(require_store(args))
    emit(args, head.to_dict(), f"seq {head.seq}\nhash {head.hash}\nts {head.ts or '-'}\n"
         f"(keep this elsewhere; check it later with: anneal-memory verify --anchor "
         f"{head.seq}:{head.hash})")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    loc = require_store(args)
    if isinstance(loc, str):
        res = AuditTrail.verify(loc)
        if not res.valid:
            raise AuditError(f"the audit chain in the database breaks at entry "
                             f"{res.chain_break_at} ({res.reason}): a PostgreSQL store keeps "
                             "no audit files to rebuild from; restore it from a backup")
        result: RepairReport = {"rebuilt_entries": 0, "mirrored_entries": 0, "set_aside": [],
                                "salvaged_entries": 0, "lost_entries": [],
                                "valid": True, "reason": None,
                                "status": "the trail verifies: nothing to repair (a "
                                          "PostgreSQL store keeps its chain in the database)"}
    else:
        with open_store(args) as store:
            result = store.audit_trail.repair_files(force=args.force)
    if not result["valid"]:
        lost = result.get("lost_entries") or []
        why = (f"entries {ranges_text(lost)} are kept in the database as their hashes only (once "
               "mirrored) and no audit file holds their text any more, so they cannot be "
               "rebuilt; every other entry was" if lost else
               "the database's copy itself is damaged")
        err = AuditError(f"audit-repair could not produce a trail that verifies "
                         f"({result['reason']}): {why}; the files that were there are kept "
                         "beside the store (set-aside)")
        err.json_data = result  # type: ignore[attr-defined]  # --json: one document
        raise err
    emit(args, result, f"{result['status']}: rebuilt {result['rebuilt_entries']} entries; "
         f"set aside: {', '.join(result['set_aside']) or 'nothing'}")
    return 0
