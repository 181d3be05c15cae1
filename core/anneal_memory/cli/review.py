"""The operator's review commands: worklist (graduations to judge, mark reviewed) and
pattern demote / retire (by hand). The console runs the same library calls."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .common import command, emit, group, open_store, read_store

if TYPE_CHECKING:
    from .common import Subcommands


def register(sub: Subcommands) -> None:
    p = command(sub, "worklist", "graduations to judge since you last marked the worklist "
                "reviewed (--mark-reviewed marks it)", cmd_worklist)
    p.add_argument("--since-wrap", type=int, metavar="N",
                   help="list graduations of wraps after wrap N instead")
    p.add_argument("--mark-reviewed", action="store_true",
                   help="record that you judged the list (through the newest wrap, or --through)")
    p.add_argument("--through", type=int, metavar="N",
                   help="with --mark-reviewed: mark wraps up to N reviewed")
    _, psub = group(sub, "pattern", "a pattern by the operator's hand: demote or retire")
    p = command(psub, "demote", "lower a pattern's level in the continuity and the record",
                cmd_pattern_demote)
    p.add_argument("name", help="the pattern's name (the text before its '| Nx' marker)")
    p.add_argument("--to", type=int, metavar="N", help="the new level (default: one lower)")
    p = command(psub, "retire", "take a pattern out of the continuity (it returns as new)",
                cmd_pattern_retire)
    p.add_argument("name", help="the pattern's name (the text before its '| Nx' marker)")


def cmd_worklist(args: argparse.Namespace) -> int:
    from ..immune.review import mark_worklist_reviewed, review_worklist

    if args.mark_reviewed:
        with open_store(args) as store:
            done = mark_worklist_reviewed(store, through_wrap=args.through)
        emit(args, done, f"Worklist marked reviewed through wrap {done['through_wrap']} "
             f"({done['items']} item(s))")
        return 0
    with read_store(args) as store:
        items = review_worklist(store, since_wrap=args.since_wrap)
    lines = []
    for it in items:
        stance = {"contradicts": "contradicts " + ", ".join(it.contradicts),
                  "no-contradicts": "declared no contradiction",
                  "none": "no contradiction stance"}[it.stance]
        lines.append(f"wrap {it.wrap_id}: {it.name} {it.prior or 0}x -> {it.level}x ({stance})")
        lines += [f"    [{c.id}] " + (c.content if c.content is not None else f"({c.removed})")
                  for c in it.cited]
    emit(args, {"items": [it.to_dict() for it in items], "count": len(items)},
         "\n".join(lines) or "(nothing to review)")
    return 0


def cmd_pattern_demote(args: argparse.Namespace) -> int:
    from ..immune.review import demote_pattern

    with open_store(args) as store:
        res = demote_pattern(store, args.name, args.to)
    emit(args, res, f"{res['name']}: {res['from']}x -> {res['to']}x")
    return 0


def cmd_pattern_retire(args: argparse.Namespace) -> int:
    from ..immune.review import retire_pattern

    with open_store(args) as store:
        res = retire_pattern(store, args.name)
    emit(args, res, f"{res['name']}: retired ({res['lines_removed']} line(s) removed)")
    return 0
