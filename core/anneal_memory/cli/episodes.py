"""Episode commands: init, record, search, get, delete, prune, state, unsupersede, trust."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._inputs import load_json
from ..continuity.schema import NAMED_SCHEMAS
from ..errors import EpisodeNotFoundError, StoreError, SupersessionError, ValidationError
from ..types import TRUST_LEVELS, EpisodeType
from .common import (
    cli_hint,
    command,
    confirm,
    emit,
    episode_line,
    namespace_of,
    new_store_undone,
    open_store,
    operator_store,
    read_store,
    read_text,
    require_store,
    shown_location,
    store_location,
    store_name,
)
from .semantic import add_embedder_option, embedder_of

if TYPE_CHECKING:
    from ..store import Store
    from .common import Subcommands

_TYPES = [t.value for t in EpisodeType]


def register(sub: Subcommands) -> None:
    p = command(sub, "init", "create the store (the consolidation baton is required by default)", cmd_init)
    p.add_argument("--no-baton", action="store_true",
                   help="let any caller wrap this store (no single-consolidator gate)")
    p.add_argument("--schema", default="default", choices=sorted(NAMED_SCHEMAS),
                   help="continuity section schema for a new store (default: default)")
    p.add_argument("--force", action="store_true",
                   help="where the database was lost (missing or empty) but its store's files "
                        "remain: move them aside into <name>.old-<timestamp> and start fresh")

    p = command(sub, "record", "record one episode (creates the store if needed)", cmd_record)
    p.add_argument("text", help="the episode text, or - to read it from standard input")
    p.add_argument("--type", default="observation", type=str.lower, choices=_TYPES,
                   help="observation, decision, tension, question, outcome or context (default observation)")
    p.add_argument("--supersedes", action="append", default=[], metavar="ID",
                   help="an episode this one replaces (repeatable)")
    p.add_argument("--state-key", metavar="KEY",
                   help="the slot this fact fills, e.g. user.home_city")
    p.add_argument("--trust", default="agent", help="agent, tool, external or operator (operator-only)")
    p.add_argument("--derived-from", action="append", default=[], metavar="ID",
                   help="an episode this one was made from (repeatable)")
    p.add_argument("--timestamp", help="when it happened (ISO 8601; default now)")
    p.add_argument("--source", default="cli", help="who recorded it (default cli, as in 1.0.2)")
    p.add_argument("--metadata", metavar="JSON", help="a JSON object stored with the episode")
    p.add_argument("--tags", help="comma-separated tags, kept as metadata.tags")

    p = command(sub, "search", "keyword recall with filters (alias: recall)", cmd_search,
                aliases=("recall",))
    p.add_argument("query", nargs="?", default=None, help="phrase or words (omit for all)")
    p.add_argument("--type", type=str.lower, choices=_TYPES, help="only this episode type")
    p.add_argument("--source", help="only this source")
    p.add_argument("--since", help="ISO time or an age such as 7d, 12h")
    p.add_argument("--until", help="ISO time or an age such as 7d, 12h")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="show at most N episodes (default 20)")
    p.add_argument("--offset", type=int, default=0, metavar="N",
                   help="skip the first N matches, to page through them (default 0)")
    p.add_argument("--include-superseded", action="store_true",
                   help="also show episodes a newer one replaced")
    p.add_argument("--mode", choices=("keyword", "hybrid", "semantic"),
                   help="keyword (the default without an embedder), hybrid (the default with "
                   "one) or semantic (by meaning alone)")
    p.add_argument("--semantic", action="store_const", const="semantic", dest="mode",
                   help="the same as --mode semantic")
    add_embedder_option(p)

    p = command(sub, "get", "show one episode", cmd_get)
    p.add_argument("id", help="the episode id")

    p = command(sub, "delete", "remove an episode for good (a tombstone keeps its hash)", cmd_delete)
    p.add_argument("id", help="the episode id")
    p.add_argument("--force", action="store_true", help="accepted for 1.0.2 scripts")

    p = command(sub, "erase", "forget a whole namespace (a user): every episode, continuity, "
                "item and governed record of it (asks first)", cmd_erase)
    p.add_argument("--yes", action="store_true",
                   help="do not ask: needed to erase when not on a terminal")

    p = command(sub, "prune", "remove episodes older than N days (asks first)", cmd_prune)
    age = p.add_mutually_exclusive_group(required=True)
    age.add_argument("--older-than-days", type=int, metavar="N",
                     help="remove episodes recorded more than N days ago (0: every episode)")
    age.add_argument("--older-than", type=int, metavar="N", dest="older_than_days",
                     help="1.0.2's name for --older-than-days")
    p.add_argument("--yes", action="store_true",
                   help="do not ask: needed to prune when not on a terminal")
    p.add_argument("--dry-run", action="store_true", help="count what would go; remove nothing")

    p = command(sub, "state", "state keys: current holder and history; --set/--unset", cmd_state)
    p.add_argument("key", nargs="?", default=None,
                   help="one state key, e.g. user.home_city (omit for every key)")
    act = p.add_mutually_exclusive_group()
    act.add_argument("--set", metavar="ID", help="put episode ID into slot KEY")
    act.add_argument("--unset", metavar="ID", help="take episode ID out of its slot")

    p = command(sub, "supersede", "record that a newer episode replaces an older one (validated)",
                cmd_supersede)
    p.add_argument("--old", required=True, metavar="ID", help="the replaced episode")
    p.add_argument("--new", required=True, metavar="ID", help="the replacing episode")

    p = command(sub, "unsupersede", "remove a wrong supersession link", cmd_unsupersede)
    p.add_argument("--old", required=True, metavar="ID", help="the replaced episode")
    p.add_argument("--new", required=True, metavar="ID", help="the episode that replaced it")

    p = command(sub, "trust", "set an episode's trust class (raising it is operator-only)", cmd_trust)
    p.add_argument("id", help="the episode id")
    p.add_argument("level", help="agent, tool, external or operator")


def _holds_a_store(loc: Path | str) -> bool:
    if isinstance(loc, Path):
        return loc.exists() and loc.stat().st_size > 0
    from ..store import Store

    try:  # a server database: a read-only open fails when it holds no store yet
        with Store(loc, read_only=True):
            return True
    except StoreError:
        return False


def _start_fresh(args: argparse.Namespace) -> str | None:
    """init --force: move a lost store's files aside (the folder, or None when the path
    holds a store, or nothing at all)."""
    loc = store_location(args)
    if not isinstance(loc, Path):
        return None
    from ..clock import utcnow
    from ..storage.sqlite_files import is_empty, move_aside, store_files

    if not is_empty(loc) or not store_files(loc):
        return None
    folder = move_aside(loc, utcnow().strftime("%Y%m%dT%H%M%SZ"))
    return str(folder) if folder else None


def cmd_init(args: argparse.Namespace) -> int:
    aside = _start_fresh(args) if args.force else None
    existed = _holds_a_store(store_location(args))
    with open_store(args, create=True, consolidate_requires_baton_on_create=not args.no_baton,
                    section_schema=None if existed else NAMED_SCHEMAS[args.schema]) as store:
        headings = [s["heading"] for s in store.section_schema]
        data = {"path": shown_location(args), "created": not existed,
                "consolidate_requires_baton": store.consolidate_requires_baton(),
                "schema": headings, "continuity_path": str(store.continuity_path),
                "moved_aside": aside}
    lines = [f"{'Created' if not existed else 'Already exists, left as is'}: {data['path']}",
             f"Sections: {', '.join(headings)}"]
    if aside:
        lines.insert(0, f"Moved the lost store's files aside into {aside}")
    elif existed and args.force:
        lines.append("(--force only starts fresh where the database was lost; this store "
                     "holds its database and was left as is)")
    if existed and (args.no_baton or args.schema != "default"):
        lines.append("(--no-baton and --schema apply only to a new store; see set-schema)")
    if data["consolidate_requires_baton"]:
        lines.append("Wraps need the consolidation baton: anneal-memory baton claim <session>")
    emit(args, data, "\n".join(lines))
    return 0


def _metadata(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = load_json(raw, "--metadata")
    except ValidationError as exc:
        if getattr(exc, "fix_included", False):  # it already says what to change
            raise
        raise ValidationError(f"{exc}: pass an object such as '{{\"k\": \"v\"}}'") from None
    if not isinstance(value, dict):
        raise ValidationError("--metadata must be a JSON object such as '{\"k\": \"v\"}'")
    return value


def cmd_record(args: argparse.Namespace) -> int:
    # a shell pipe adds a final newline that is not part of the episode
    text = read_text(args.text, "episode text").rstrip("\r\n") if args.text == "-" else args.text
    metadata = _metadata(args.metadata)
    if args.tags:
        metadata = dict(metadata or {}, tags=[t.strip() for t in args.tags.split(",") if t.strip()])
    kw = dict(content=text, episode_type=args.type, source=args.source,
              metadata=metadata, timestamp=args.timestamp,
              supersedes=args.supersedes or None, state_key=args.state_key,
              trust=args.trust, derived_from=args.derived_from or None)
    with new_store_undone(args):  # a refused first record leaves no empty store behind
        if str(args.trust).strip().lower() == "operator":
            with operator_store(args, "record an episode with trust operator",
                                create=True) as (store, via):
                with store.batch():
                    ep = store.record(**kw)
                    store.audit_event("operator_gate", {"action": "record", "id": ep.id,
                                                        "via": via})
        else:
            with open_store(args, create=True) as store:
                ep = store.record(**kw)
    emit(args, ep.to_dict(), f"Recorded {ep.id} ({ep.type.value})")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    mode = getattr(args, "mode", None)
    if mode in ("hybrid", "semantic") or getattr(args, "embedder", None):
        require_store(args)  # a missing store is the first thing to say
    emb = embedder_of(args, required_for=f"search --mode {mode}"
                      if mode in ("hybrid", "semantic") else None)
    # with an embedder the store is opened for writing: a search embeds what is pending
    with (open_store(args, embedder=emb) if emb is not None else read_store(args)) as store:
        res = store.recall(since=args.since, until=args.until, episode_type=args.type,
                           source=args.source, keyword=args.query, limit=args.limit,
                           offset=args.offset, include_superseded=args.include_superseded,
                           mode=mode)
    data = {"episodes": [e.to_dict() for e in res.episodes],
            "total_matching": res.total_matching, "query_params": res.query_params}
    use = res.semantic
    why = res.why
    lines = [episode_line(e) + (f"  (context: {why[e.id]})" if why.get(e.id, "").startswith(
        "next to") else "") for e in res.episodes]
    context = sum(1 for e in res.episodes if why.get(e.id, "").startswith("next to"))
    shown = f"{args.offset + 1}-{args.offset + len(res.episodes)} of " if res.episodes else ""
    lines.append(f"({shown}{res.total_matching} matching" + (
        f"; {context} shown as context" if context else "") + ")")
    if use is not None and use.reason:
        lines.append(f"({'vectors not used: ' if not use.used else ''}{use.reason})")
    emit(args, data, "\n".join(lines))
    return 0


def _require(store: Store, episode_id: str) -> Any:
    ep = store.get(episode_id)
    if ep is None:
        raise EpisodeNotFoundError(f"no episode {episode_id!r} in {store_name(store)}: check the id "
                                   "(anneal-memory search)")
    return ep


def cmd_get(args: argparse.Namespace) -> int:
    with read_store(args) as store:
        ep = _require(store, args.id)
    d = ep.to_dict()
    text = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v}"
                     for k, v in d.items() if v not in (None, [], {}))
    emit(args, d, text)
    return 0


def _erasure_lines(report: Any) -> list[str]:
    out = [f"  removed continuity line {c['line']} ({c['section'] or 'no section'}"
           + (f", {c['namespace']}" if c["namespace"] else "") + ")"
           for c in report.continuity_lines]
    if report.cells or report.files:
        out.append(f"  rewrote {report.cells} stored field(s) and {len(report.files)} "
                   "sidecar file(s) that quoted it")
    if report.unlocated:
        out.append("  not located in any continuity line, though a wrap compressed it: "
                   + ", ".join(report.unlocated) + " (the continuity may paraphrase it: "
                   "read it with anneal-memory continuity)")
    return out


def cmd_delete(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        report = store.erase([args.id])
        if not report.episodes:
            raise EpisodeNotFoundError(f"no episode {args.id!r} in {store_name(store)}: nothing was "
                                       "deleted; check the id (anneal-memory search)")
    emit(args, {"deleted": args.id, "erasure": report.to_dict()},
         "\n".join([f"Deleted {args.id}", *_erasure_lines(report)]))
    return 0


def cmd_erase(args: argparse.Namespace) -> int:
    from ..store import ScopedStore

    ns = namespace_of(args)
    with open_store(args, trust_ceiling="operator") as store:
        if ns is None:
            raise ValidationError("erase needs the namespace to forget: anneal-memory erase "
                                  "--namespace user=alice --yes (to delete one episode: "
                                  "anneal-memory delete ID)")
        root = store.parent if isinstance(store, ScopedStore) else store  # a view: ns given
        counts = next((n for n in root.namespaces() if n["namespace"] == ns), None)
        what = (f"erase would forget {ns.label()}"
                + (f" (all its projects): {counts['episodes']} episode(s), {counts['wraps']} "
                   f"wrap(s), {counts['records']} governed record(s)" if counts and
                   ns.project is None else "")
                + ", its continuity and item collections, for good")
        confirm(f"{what}.", args.yes, refusal=what)
        report = store.erase_namespace()
    emit(args, {"erased": ns.to_dict(), **report.to_dict()},
         "\n".join([f"Erased {ns.label()}: {len(report.episodes)} episode(s), "
                    f"{report.governed_records} governed record version(s)",
                    *_erasure_lines(report)]))
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    if args.dry_run:
        from datetime import timedelta

        from ..clock import iso, utcnow

        cutoff = iso(utcnow() - timedelta(days=args.older_than_days))
        with read_store(args) as store:
            n = store.recall(until=cutoff, limit=0, include_superseded=True).total_matching
        emit(args, {"would_prune": n, "older_than_days": args.older_than_days, "dry_run": True},
             f"Would prune {n} episode(s) older than {args.older_than_days} days (dry run)")
        return 0
    days = args.older_than_days
    with open_store(args) as store:
        going = len(store.prunable(days))
        if going:
            what = (f"prune would remove {going} episode(s) older than {days} day(s)"
                    + (" (every episode not frozen in an open wrap)" if days == 0 else ""))
            confirm(f"{what}.", args.yes, refusal=what)
        n = store.prune(days) if going else 0
    emit(args, {"pruned": n, "older_than_days": days},
         f"Pruned {n} episode(s) older than {days} day(s)")
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    for flag, value in (("--set", args.set), ("--unset", args.unset)):
        if value is not None and not value.strip():
            raise ValidationError(f"state {flag} needs an episode id, not an empty string: "
                                  f"anneal-memory state KEY {flag} ID")
    if args.set:
        if not args.key:
            raise ValidationError("state --set ID needs the KEY: anneal-memory state KEY --set ID")
        with open_store(args) as store:
            links = store.set_state_key(args.set, args.key)
        replaced = [old for old, _new in links]
        emit(args, {"key": args.key, "id": args.set, "episode_id": args.set, "replaced": replaced,
                    "links": [list(x) for x in links]},
             f"{args.set} now holds {args.key}" + (f"; replaced {', '.join(replaced)}" if replaced else ""))
        return 0
    if args.unset:
        with open_store(args) as store:
            _require(store, args.unset)
            change = store.clear_state_key(args.unset)
        done = change["key"] is not None
        emit(args, {"id": args.unset, "episode_id": args.unset, "cleared": done, **change},
             f"{args.unset} taken out of its slot" if done else f"{args.unset} held no state key")
        return 0
    with read_store(args) as store:
        report = store.state_report(args.key)
    lines = []
    for slot in report:
        cur = slot["current"]
        lines.append(f"{slot['key']}: [{cur['id']}] {cur['content']}")
        lines += [f"    was [{h['id']}] {h['content']}" for h in slot["history"]]
    with read_store(args) as store:  # --json: 1.0.2's list of {key, current, replaced}
        emit(args, store.state_key_report(args.key), "\n".join(lines) or "(no state keys)")
    return 0


def cmd_supersede(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        added = store.supersede(old_id=args.old, new_id=args.new)
    emit(args, {"old_id": args.old, "new_id": args.new, "recorded": added},
         f"{args.new} replaces {args.old}" if added else
         f"{args.new} already replaces {args.old}")
    return 0


def cmd_unsupersede(args: argparse.Namespace) -> int:
    with open_store(args) as store, cli_hint(
            SupersessionError, "anneal-memory search --include-superseded shows the links"):
        if not store.unsupersede(old_id=args.old, new_id=args.new):
            raise SupersessionError(f"there is no link {args.old} -> {args.new} to remove: "
                                    "anneal-memory search --include-superseded shows the links")
    emit(args, {"old_id": args.old, "new_id": args.new, "removed": True},
         f"Removed the link {args.old} -> {args.new}")
    return 0


def cmd_trust(args: argparse.Namespace) -> int:
    level = str(args.level).strip().lower()
    if level not in TRUST_LEVELS:
        raise ValidationError(f"unknown trust class {args.level!r}: use one of agent, tool, "
                              "external, operator")
    with open_store(args) as store:
        current = _require(store, args.id).trust
        raising = TRUST_LEVELS[level] > TRUST_LEVELS[current]
        via = "cli"
        if not raising:
            before = store.set_trust(args.id, level, via=via)
    if raising:
        with operator_store(args, f"raise the trust of {args.id} from {current} to {level}") as (
                store, via):
            before = store.set_trust(args.id, level, via=via)
    result = {"id": args.id, "from": before, "to": level, "trust_via": via}
    emit(args, result, f"{args.id}: trust {before} -> {level}")
    return 0
