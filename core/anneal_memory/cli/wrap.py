"""Wrap commands: prepare-wrap, save-continuity, wrap-cancel, baton, set-schema, probe."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..continuity.schema import NAMED_SCHEMAS
from ..errors import BatonError, SchemaError, ValidationError
from .common import (
    cli_hint,
    command,
    emit,
    group,
    open_store,
    parse_json,
    read_store,
    read_text,
    require_store,
    sidecar,
)

if TYPE_CHECKING:
    from ..wrap.baton import Target
    from ..wrap.save import SaveResult
    from .common import Subcommands

# What a save result lists, in the order an operator wants to read it.
_LISTED = ("demoted_patterns", "bare_demoted_patterns", "level_capped", "uncorroborated", "carried_forward",
           "omitted_patterns", "cross_session_collisions", "supersessions_rejected")


def register(sub: Subcommands) -> None:
    p = command(sub, "prepare-wrap", "open the wrap and print the compression package", cmd_prepare)
    p.add_argument("--session-id", help="the session wrapping (needed on a baton-gated store)")
    p.add_argument("--max-chars", type=int, metavar="N",
                   help="target size of the continuity in characters")
    p.add_argument("--staleness-days", type=int, default=7, metavar="N",
                   help="a pattern not confirmed for N days counts as stale (default 7)")
    p.add_argument("--crystal", action="store_true",
                   help="put the crystal cue index (and crystals to re-check) in the package")

    p = command(sub, "save-continuity", "validate and save the compressed continuity", cmd_save)
    p.add_argument("file", help="the continuity markdown, or - for standard input")
    p.add_argument("--session-id", help="the session that prepared the wrap")
    p.add_argument("--wrap-token", help="the token prepare-wrap printed")
    p.add_argument("--allow-shrink", action="store_true",
                   help="accept a deliberate large shrink of the felt layer or patterns")
    p.add_argument("--affect-tag", help=argparse.SUPPRESS)  # retired layer: accepted, ignored
    p.add_argument("--affect-intensity", type=float, help=argparse.SUPPRESS)
    p.add_argument("--today", metavar="DATE",
                   help="the wrap's date, YYYY-MM-DD (default: the day prepare-wrap gave)")
    p.add_argument("--crystal", action="store_true",
                   help="move Proven lines marked [crystallize] into the crystal store")
    p.add_argument("--allow-unlinked", action="store_true",
                   help="accepted for 1.0.2 scripts (a save never needs links)")
    p.add_argument("--require-rederive", action="store_true", help=argparse.SUPPRESS)

    p = command(sub, "wrap-cancel", "abandon the open wrap; its episodes go to the next one", cmd_cancel)
    p.add_argument("--wrap-token", help="cancel only the wrap this token opened")
    p.add_argument("--session-id", help="the session that prepared the wrap")
    p.add_argument("--force", action="store_true", help="cancel a gated wrap without its token")
    p.add_argument("--partial", action="store_true",
                   help="clear only a half-written wrap state (refused when a whole wrap is open)")

    _, bsub = group(sub, "baton", "the single-consolidator gate: who may wrap this store")
    p = command(bsub, "claim", "make NAME the consolidating session", cmd_baton_claim)
    p.add_argument("name", help="the session id that will wrap (as given to --session-id)")
    p.add_argument("--take", action="store_true", help="take it from the session holding it")
    p = command(bsub, "status", "who holds the baton", cmd_baton_status)
    p = command(bsub, "release", "give the baton back", cmd_baton_release)
    p.add_argument("name", nargs="?", default=None, help="release only if NAME holds it")

    p = command(sub, "set-schema", "change the continuity section schema", cmd_set_schema)
    p.add_argument("schema", help="default, partnership, or a JSON file of {heading, role} specs")

    _, psub = group(sub, "probe", "drift probes: what must survive consolidation")
    p = command(psub, "add", "declare a probe", cmd_probe_add)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--pattern", metavar="NAME", help="a pattern that must keep its level")
    what.add_argument("--fact", metavar="TEXT", help="words that must stay in one sentence")
    p.add_argument("--min-level", type=int, help="pattern probes: level to hold (default: current)")
    p.add_argument("--section", metavar="HEADING", help="fact probes: look only in this section")
    p.add_argument("--note", help="why this must survive")
    for name, text in (("status", "each probe's verdict at the last save"),
                       ("list", "the declared probes")):
        p = command(psub, name, text, cmd_probe_list)
        p.set_defaults(probe_view=name)
        p.add_argument("--all", action="store_true",
                       help="accepted for 1.0.2 scripts (retired probes are removed)")
    p = command(psub, "retire", "stop checking a probe", cmd_probe_retire)
    p.add_argument("id", help="the probe's id (see probe list)")


def cmd_prepare(args: argparse.Namespace) -> int:
    from ..wrap.prepare import prepare_wrap
    from ..wrap.render import render_package

    with open_store(args) as store:
        crystals = None
        if args.crystal:
            from ..crystal import CrystalStore

            crystals = CrystalStore(store)
        result = prepare_wrap(store, max_chars=args.max_chars, crystal_store=crystals,
                              staleness_days=args.staleness_days, session_id=args.session_id)
    if args.json:
        # 1.0.2 prints the package itself, with the token; status and message ride along
        emit(args, {**(result["package"] or {}), **{k: v for k, v in result.items()
                                                     if k != "package"}})
    elif result["status"] == "ready" and result["package"] is not None:
        print(render_package(result["package"]))
        print()
        print(f"Wrap token: {result['wrap_token']}")
    else:
        print(f"[{result['status']}] {result['message']}")
    return 0


def _summary(result: SaveResult) -> str:
    lines = [f"Saved {result['chars']} chars from {result['episodes_compressed']} episode(s) "
             f"to {result['path']}",
             f"graduations validated: {result['graduations_validated']}, "
             f"demoted: {result['graduations_demoted']}"]
    listed: Mapping[str, object] = result
    for key in _LISTED:
        value = listed.get(key)
        items = value if isinstance(value, list) else []
        if items:
            names = [str(i.get("name") or f"{i.get('old_id')}->{i.get('new_id')}")
                     if isinstance(i, dict) else str(i) for i in items]
            lines.append(f"{key.replace('_', ' ')}: {', '.join(names)}")
    if result.get("supersessions_recorded"):
        lines.append(f"supersessions recorded: {result['supersessions_recorded']}")
    counts = (result.get("drift") or {}).get("counts") or {}
    if counts:
        lines.append("drift probes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return "\n".join(lines)


def cmd_save(args: argparse.Namespace) -> int:
    from ..wrap.save import validated_save_continuity

    if args.require_rederive:
        raise ValidationError("--require-rederive: this package does not re-derive the "
                              "continuity at load, so nothing can be required; drop the flag")
    require_store(args)  # a missing store is named before the file is read
    text = read_text(args.file, "continuity")
    with open_store(args) as store:
        crystals = None
        if args.crystal:
            from ..crystal import CrystalStore

            crystals = CrystalStore(store)
        result = validated_save_continuity(store, text, today=args.today,
                                           wrap_token=args.wrap_token,
                                           allow_shrink=args.allow_shrink,
                                           session_id=args.session_id, crystal_store=crystals)
    emit(args, {"saved": True, **result}, _summary(result))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    with open_store(args) as store, cli_hint(
            BatonError, "pass --wrap-token TOKEN, --session-id NAME, or --force"):
        done = store.wrap_cancelled(wrap_token=args.wrap_token, session_id=args.session_id,
                                    force=args.force, expect_partial=args.partial)
    # 1.0.2's keys: what was cancelled (all null when no wrap was open)
    emit(args, {"cancelled": bool(done), "status": "cancelled" if done else "idle",
                "cancelled_token": done.token, "cancelled_started_at": done.started_at,
                "cancelled_episode_ids": done.episode_ids, "partial_state": done.partial_state},
         "Wrap cancelled; its episodes go to the next wrap" if done else "No wrap was open")
    return 0


def _baton_of(args: argparse.Namespace) -> Target:
    """Whose baton: the store's, or with --namespace that namespace's own."""
    from .common import namespace_of, tier_home

    return tier_home(args) if namespace_of(args) is not None else sidecar(args)


def cmd_baton_claim(args: argparse.Namespace) -> int:
    from ..wrap.baton import claim_baton

    with cli_hint(BatonError, f"anneal-memory baton claim {args.name} --take"):
        claimed = claim_baton(_baton_of(args), args.name, take=args.take)
    prev = claimed["previous"]
    result = dict(claimed, session_id=args.name, previous_holder=prev)  # 1.0.2's keys too
    emit(args, result, f"{args.name} holds the baton" + (f" (taken from {prev})"
                                                         if prev and prev != args.name else ""))
    return 0


def cmd_baton_status(args: argparse.Namespace) -> int:
    from ..wrap.baton import baton_status

    with read_store(args) as store:
        required = store.consolidate_requires_baton()
        waiting = store.status().episodes_since_wrap
    st = dict(baton_status(_baton_of(args)), required=required)
    st.update(baton_holder=st["holder"], baton_readable=True, episodes_since_wrap=waiting,
              consolidate_requires_baton=required)  # 1.0.2's keys
    who = st["holder"] or "nobody"
    emit(args, st, f"holder: {who}" + (f" (since {st['claimed_at']})" if st["holder"] else "")
         + f"\nbaton required for wraps: {'yes' if required else 'no'}")
    return 0


def cmd_baton_release(args: argparse.Namespace) -> int:
    from ..wrap.baton import release_baton

    done = release_baton(_baton_of(args), args.name)
    if not done and args.name:
        raise ValidationError(f"session {args.name!r} does not hold the baton: nothing was "
                              "released (see anneal-memory baton status)")
    emit(args, {"released": done, "session_id": args.name},
         "Baton released" if done else "Nobody held the baton")
    return 0


def cmd_set_schema(args: argparse.Namespace) -> int:
    require_store(args)
    if args.schema in NAMED_SCHEMAS:
        schema: Any = NAMED_SCHEMAS[args.schema]
    elif args.schema.endswith(".json") or Path(args.schema).exists():
        text = read_text(args.schema, "schema")  # a missing file is named as missing
        schema = parse_json(text, args.schema, "schema file",
                            'write a list of {"heading", "role"} objects')
    else:
        raise SchemaError(f"unknown schema {args.schema!r}: use default, partnership, or the "
                          "path of a .json file")
    with open_store(args) as store:
        store.set_section_schema(schema)
        spec = store.section_schema
        continuity = store.load_continuity()
    from ..continuity.parse import parse_sections

    headings = [s["heading"] for s in spec]
    name = next((n for n in ("default", "partnership") if [dict(x) for x in spec]
                 == [dict(x) for x in NAMED_SCHEMAS[n]]), "custom")
    present = {(s.spec or {}).get("heading") for s in
               parse_sections(continuity, spec, require=False).sections} if continuity else set()
    missing = [s["heading"] for s in spec if s["heading"] not in present
               and not s.get("optional")]
    # 1.0.2's shape: the schema's name, its sections, the ones the continuity lacks yet
    emit(args, {"schema": name, "sections": headings, "missing_sections": missing},
         "Sections: " + ", ".join(headings))
    return 0


def cmd_probe_add(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        pid = store.add_drift_probe(pattern=args.pattern, min_level=args.min_level,
                                    fact=args.fact, section=args.section, note=args.note)
    emit(args, {"id": pid}, f"Probe {pid} added")
    return 0


def cmd_probe_retire(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        if not store.retire_drift_probe(args.id):
            raise ValidationError(f"no drift probe {args.id!r}: see anneal-memory probe list")
    emit(args, {"retired": int(args.id) if args.id.isdigit() else args.id},
         f"Probe {args.id} retired")
    return 0


def cmd_probe_list(args: argparse.Namespace) -> int:
    from ..immune.probes import list_probes

    with read_store(args) as store:
        rows = list_probes(store)
    lines = []
    for r in rows:
        target = (f"pattern {r['pattern']} >= {r['min_level']}x" if r["kind"] == "pattern"
                  else f"fact {r['fact']!r}" + (f" in {r['section']}" if r["section"] else ""))
        if args.probe_view == "status":
            lines.append(f"{r['id']}  {r['last_status'] or 'not yet checked':<16} {target}"
                         + (f"  ({r['last_detail']})" if r["last_detail"] else ""))
        else:
            lines.append(f"{r['id']}  {target}  (added {r['created_at'][:10]})")
    data: Any = rows  # probe list --json: the list itself, as 1.0.2
    if args.probe_view == "status":
        with read_store(args) as store:
            data = store.drift_status()  # 1.0.2's shape: the last save's verdicts, worklist
        counts: dict[str, int] = {}
        for r in rows:
            key = r["last_status"] or "unchecked"
            counts[key] = counts.get(key, 0) + 1
        data.update(counts=counts, declared=rows)
        # the worklist since the operator last marked it reviewed (every wrap, not only
        # the last save's "graduated"), to judge for truth
        from ..immune.review import review_worklist

        with read_store(args) as store:
            items = review_worklist(store)
        data["worklist"] = [it.to_dict() for it in items]
        lines.append(f"worklist: {len(items)} graduation(s) to judge"
                     + (": " + ", ".join(f"{it.name} {it.level}x (wrap {it.wrap_id})"
                                         for it in items) if items else "")
                     + (" (anneal-memory worklist)" if items else ""))
    emit(args, data, "\n".join(lines) or "(no drift probes)")
    return 0
