"""The long-term tiers: crystal, spore, outcome, worth."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..clock import today
from ..crystal import (
    ACTIVATION_MODES,
    ACTIVATIONS,
    PERMANENCE,
    RECALL_MODES,
    RETIRE_KINDS,
    CrystalStore,
    activation_of,
)
from ..errors import ValidationError
from ..spores import (
    ASCEND_KINDS,
    DESCEND_KINDS,
    GERMINATIONS,
    SPORE_TIERS,
    SPORE_TYPES,
    SporeStore,
)
from ..worth import OUTCOMES, OutcomeLog
from .common import command, emit, group, open_store, read_store, tier_home

if TYPE_CHECKING:
    from .common import Subcommands


def register(sub: Subcommands) -> None:
    _, csub = group(sub, "crystal", "the crystallized tier: proven patterns recalled on cue")
    command(csub, "index", "one cue line per live crystal", cmd_crystal_index)
    p = command(csub, "recall", "crystals relevant to a query", cmd_crystal_recall)
    p.add_argument("query", help="a question or prompt text")
    p.add_argument("--max", "--max-patterns", type=int, default=3, dest="max_patterns",
                   metavar="N", help="return at most N crystals (default 3)")
    p.add_argument("--no-associative", action="store_true",
                   help="accepted for 1.0.2 scripts (recall reads no association links)")
    p.add_argument("--mode", choices=RECALL_MODES, default="query",
                   help="query (one shared word is enough) or strict/prompt (whole prompts)")
    p = command(csub, "get", "the full crystal (records a pull in the outcome log)", cmd_crystal_get)
    p.add_argument("name", help="the crystal's name (see crystal index)")
    p.add_argument("--no-record", action="store_true", help="read without recording a pull")
    p = command(csub, "list", "crystals, highest level first", cmd_crystal_list)
    p.add_argument("--status", choices=("live", "retired", "all"), default="live",
                   help="which crystals (default live)")
    p.add_argument("--permanence", choices=PERMANENCE, help="only crystals of this permanence")
    p.add_argument("--activation-mode", choices=ACTIVATION_MODES,
                   help="only crystals recalled this way")
    p.add_argument("--activation", choices=ACTIVATIONS,
                   help="only crystals this recently used: hot, warm, cold or dormant")
    p.add_argument("--tag", help="only crystals with this tag")
    p.add_argument("--verbose", action="store_true", help="the whole text of each crystal")
    p = command(csub, "crystallize", "move a Proven pattern out of the continuity into a "
                "crystal, or (--name --level --explanation) store one directly", cmd_crystallize)
    p.add_argument("pattern", nargs="?", default=None,
                   help="the Proven (2x or higher) pattern's name, to move it out of the continuity")
    p.add_argument("--name", help="store a crystal directly under this name (1.0.2's form)")
    p.add_argument("--level", type=int, help="with --name: its level (2 or higher)")
    p.add_argument("--explanation", help="with --name: what the pattern says")
    p.add_argument("--evidence", help="with --name: comma-separated episode ids")
    p.add_argument("--permanence", choices=PERMANENCE, default="timeless",
                   help="with --name: timeless (default) or phase-specific")
    p.add_argument("--activation-mode", choices=ACTIVATION_MODES, default="just-in-time",
                   help="with --name: just-in-time (default) or catastrophic")
    p.add_argument("--tags", help="comma-separated tags")
    p.add_argument("--source", help="where the pattern came from")
    command(csub, "rewarm", "crystals unused for 90 days: re-exercise, retire or keep",
            cmd_crystal_rewarm)
    p = command(csub, "touch", "mark a crystal as used today", cmd_crystal_touch)
    p.add_argument("name", help="the crystal's name")
    p = command(csub, "update", "change a live crystal's fields", cmd_crystal_update)
    p.add_argument("name", help="the crystal's name")
    p.add_argument("--explanation", help="new text of the pattern")
    p.add_argument("--level", type=int, help="new level (2 or higher)")
    p.add_argument("--evidence", help="comma-separated episode ids (replaces the list)")
    p.add_argument("--permanence", choices=PERMANENCE, help="timeless or phase-specific")
    p.add_argument("--activation-mode", choices=ACTIVATION_MODES,
                   help="just-in-time or catastrophic")
    p.add_argument("--tags", help="comma-separated tags (replaces the list)")
    p.add_argument("--source", help="where the pattern came from")
    p.add_argument("--add-note", help="append a dated note")
    p = command(csub, "retire", "take a crystal out of recall (kept for the record)", cmd_crystal_retire)
    p.add_argument("name", help="the crystal's name")
    p.add_argument("--kind", choices=RETIRE_KINDS, default="obsolete",
                   help="why it is retired (default obsolete)")
    p.add_argument("--reason", help="a note kept with the retirement")
    p = command(csub, "restore", "bring a retired crystal back", cmd_crystal_restore)
    p.add_argument("name", help="the retired crystal's name")
    p = command(csub, "fold-surfaced", "count recall receipts into surfaced counts (once per wrap)",
             cmd_fold_surfaced)
    p.add_argument("--receipts", nargs="+", required=True, metavar="FILE",
                   help="recall receipt files (JSON) written since the last fold")

    _, ssub = group(sub, "spore", "prospective memory: open loops to close")
    p = command(ssub, "add", "open a spore", cmd_spore_add)
    p.add_argument("text", nargs="?", default=None, help="the open loop, in a sentence")
    p.add_argument("--text", dest="text_option", help="the spore's text (1.0.2's form)")
    p.add_argument("--type", choices=SPORE_TYPES, default="task", help="default task")
    _spore_fields(p)
    p = command(ssub, "list", "open spores, ranked (--closed: recently closed)", cmd_spore_list)
    p.add_argument("--type", choices=SPORE_TYPES, help="only this type")
    p.add_argument("--tier", choices=SPORE_TIERS, help="only this tier")
    p.add_argument("--domain", help="only this domain")
    p.add_argument("--germination", choices=GERMINATIONS, help="only spores in this state")
    p.add_argument("--closed", action="store_true", help="recently closed spores instead")
    p.add_argument("--verbose", action="store_true", help="every field of each spore")
    p = command(ssub, "get", "one spore", cmd_spore_get)
    p.add_argument("id", help="the spore id")
    p = command(ssub, "surface", "what deserves attention now", cmd_spore_surface)
    p.add_argument("--limit", type=int, metavar="N", help="show at most N spores")
    p.add_argument("--top-of-mind", action="store_true", help="only the top three")
    p = command(ssub, "touch", "mark a spore seen today", cmd_spore_touch)
    p.add_argument("id", help="the spore id")
    p = command(ssub, "update", "change an open spore's fields", cmd_spore_update)
    p.add_argument("id", help="the spore id")
    p.add_argument("--text", help="new text")
    p.add_argument("--type", choices=SPORE_TYPES, help="new type")
    _spore_fields(p, defaults=False)
    p.add_argument("--clear-next", action="store_true", help="remove the --next date")
    p.add_argument("--note", "--add-note", help="add a dated note")
    for name, help_text in (("descend", "close a spore: the loop ends (done, dropped, answered ...)"),
                            ("ascend", "close a spore: it became something (--ref points at it)")):
        p = command(ssub, name, help_text, cmd_spore_close)
        p.add_argument("id", help="the spore id")
        kinds = DESCEND_KINDS if name == "descend" else ASCEND_KINDS
        p.add_argument("--kind", required=True, help="how it closed, by spore type: " + "; ".join(
            f"{t} {'/'.join(sorted(k))}" for t, k in kinds.items()))
        p.add_argument("--ref", required=name == "ascend", help="what it became (ascend)")
        p.add_argument("--note", help="a closing note")
        p.set_defaults(direction=name)

    p = command(sub, "outcome", "write back what happened after a recall", cmd_outcome)
    p.add_argument("--exposure-id", required=True, metavar="ID",
                   help="the id the harness gave the recall this outcome follows")
    p.add_argument("--item", action="append", default=[], metavar="KIND:REF=LABEL",
                   help="e.g. crystal:retry_rule=followed (repeatable)")
    p.add_argument("--outcome", choices=OUTCOMES, help="how the turn went")
    p.add_argument("--exposed", action="append", default=[], metavar="KIND:REF",
                   help="an item the recall showed (repeatable)")
    p.add_argument("--adopt-unbound", action="store_true",
                   help="accepted for 1.0.2 scripts (the log binds itself to its store)")

    p = command(sub, "worth", "per crystal: retrieved on success vs failure turns", cmd_worth)
    p.add_argument("--episodes", action="store_true", help="also per cited episode")
    p.add_argument("--receipts", nargs="+", metavar="FILE",
                   help="fold these recall receipts into the surfaced counts first")


def _spore_fields(p: argparse.ArgumentParser, defaults: bool = True) -> None:
    p.add_argument("--tier", choices=SPORE_TIERS, default="warm" if defaults else None,
                   help="how close to hand" + (" (default warm)" if defaults else ""))
    p.add_argument("--salience", type=int, default=0 if defaults else None, help="0 to 3")
    p.add_argument("--domain", default="" if defaults else None,
                   help="a free label to group spores by")
    p.add_argument("--next", help="a date (YYYY-MM-DD) it should come back")
    p.add_argument("--pointer", help="where the work lives (path, URL, id)")


# ---------------------------------------------------------------------- crystal

def _crystal_or_fail(cs: CrystalStore, name: str) -> Any:
    c = cs.get(name)
    if c is None:
        raise ValidationError(f"no crystal named {name!r}: see anneal-memory crystal list --status all")
    return c


def cmd_crystal_index(args: argparse.Namespace) -> int:
    cs = CrystalStore(tier_home(args, reading=True))
    index = cs.cue_index()
    emit(args, {"index": index, "crystals": [c.name for c in cs.list()]}, index or "(no crystals)")
    return 0


def cmd_crystal_recall(args: argparse.Namespace) -> int:
    from ..crystal import retrieve_patterns

    with read_store(args) as store:
        found = retrieve_patterns(CrystalStore(store), args.query,
                                  max_patterns=args.max_patterns, mode=args.mode, store=store)
    lines = [f"{m.name} ({m.level}x, score {m.score}, via {'+'.join(m.via)}): {m.text}"
             for m in found]
    # 1.0.2 printed the list itself, each with its explanation
    emit(args, [m.as_mapping() for m in found], "\n".join(lines) or "(no crystal matches)")
    return 0


def cmd_crystal_get(args: argparse.Namespace) -> int:
    c = _crystal_or_fail(CrystalStore(tier_home(args)), args.name)
    if not args.no_record:
        OutcomeLog(tier_home(args)).record_pull(c.name)
    d = c.as_mapping()
    ev = ", ".join(f"{e['id']} \"{e.get('why', '')}\"" for e in c.evidence)
    emit(args, d, f"{c.name} ({c.level}x, {c.status})\n{c.text}\nevidence: {ev or 'none'}")
    return 0


def cmd_crystal_list(args: argparse.Namespace) -> int:
    cs = CrystalStore(tier_home(args, reading=True))
    rows = cs.list(status=args.status)
    if args.permanence or args.activation_mode or args.activation or args.tag:
        keep = {c.name for c in cs.list_crystal(permanence=args.permanence,
                                                activation_mode=args.activation_mode,
                                                tag=args.tag, activation=args.activation)}
        rows = [c for c in rows if c.name in keep]
    if args.verbose and not args.json:
        print("\n\n".join(f"{c.name} ({c.level}x, {c.status})\n{c.text}" for c in rows)
              or "(no crystals)")
        return 0
    emit(args, [dict(c.as_mapping(), activation=activation_of(c, today())) for c in rows],
         "\n".join(f"{c.name} ({c.level}x, {c.status}): {c.cue()}" for c in rows) or "(no crystals)")
    return 0


def _ids(text: str | None) -> list[str] | None:
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def cmd_crystallize(args: argparse.Namespace) -> int:
    if args.name is not None:  # 1.0.2's form: the crystal given on the command line
        if args.pattern is not None:
            raise ValidationError("give either a pattern name to move out of the continuity "
                                  "or --name with --level and --explanation, not both")
        if args.level is None or args.explanation is None:
            raise ValidationError("--name needs --level N (2 or higher) and --explanation TEXT")
        with open_store(args) as store:
            c = CrystalStore(store).crystallize(
                name=args.name, level=args.level, explanation=args.explanation,
                evidence=_ids(args.evidence), permanence=args.permanence,
                activation_mode=args.activation_mode, tags=_ids(args.tags),
                source=args.source, store=store)
        emit(args, c.as_mapping(), f"Crystallized {c.name} ({c.level}x)")
        return 0
    if args.pattern is None:
        raise ValidationError("name the pattern to crystallize out of the continuity, or pass "
                              "--name, --level and --explanation")
    with open_store(args) as store:
        result = CrystalStore(store).crystallize_from_store(store, args.pattern)
    c = result.crystal
    emit(args, {**c.as_mapping(), "crystal": c.as_mapping(),
                "removed_lines": list(result.removed_lines)},
         f"Crystallized {c.name} ({c.level}x); removed {len(result.removed_lines)} line(s) from the continuity")
    return 0


def cmd_crystal_rewarm(args: argparse.Namespace) -> int:
    from ..clock import today_iso
    from ..wrap.prepare import gone_cold

    cold = [c for c in CrystalStore(tier_home(args)).list() if gone_cold(c, today_iso())]
    emit(args, {"rewarm_candidates": [c.as_mapping() for c in cold]},
         "\n".join(f"{c.name} ({c.level}x), last used {c.last_activated_on}" for c in cold)
         or "(no crystal has gone cold)")
    return 0


def cmd_crystal_touch(args: argparse.Namespace) -> int:
    c = CrystalStore(tier_home(args)).touch(args.name)
    emit(args, c.as_mapping(), f"Touched {c.name}")
    return 0


def cmd_crystal_update(args: argparse.Namespace) -> int:
    c = CrystalStore(tier_home(args)).update(
        args.name, explanation=args.explanation, level=args.level, evidence=_ids(args.evidence),
        permanence=args.permanence, activation_mode=args.activation_mode,
        tags=_ids(args.tags), source=args.source, add_note=args.add_note)
    emit(args, c.as_mapping(), f"Updated {c.name}")
    return 0


def cmd_crystal_retire(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        c = CrystalStore(store).retire(args.name, kind=args.kind, reason=args.reason,
                                            store=store)
    emit(args, c.as_mapping(), f"Retired {c.name} ({args.kind})")
    return 0


def cmd_crystal_restore(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        c = CrystalStore(store).restore(args.name, store=store)
    emit(args, c.as_mapping(), f"Restored {c.name}")
    return 0


def cmd_fold_surfaced(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..worth import fold_surfaced

    res = fold_surfaced(CrystalStore(tier_home(args)), args.receipts)
    emit(args, asdict(res), f"Folded {res.receipts_folded} receipt(s): "
         + (", ".join(f"{k} +{v}" for k, v in sorted(res.counts.items())) or "no live crystal surfaced")
         + (f"; unknown names: {', '.join(sorted(res.unknown_names))}" if res.unknown_names else ""))
    return 0


# ---------------------------------------------------------------------- spores

def _spore_line(s: Any) -> str:
    nxt = f" next {s.next}" if s.next else ""
    return f"{s.id} [{s.type}, {s.tier}, s{s.salience}, {s.germination()}{nxt}] {s.text}"


def _show_spores(args: argparse.Namespace, spores: list[Any]) -> None:
    emit(args, [s.to_dict() for s in spores],  # the list itself, as 1.0.2
         "\n".join(_spore_line(s) for s in spores) or "(no spores)")


def _show_spore(args: argparse.Namespace, s: Any, verb: str) -> None:
    emit(args, s.to_dict(), f"{verb} {_spore_line(s)}")


def cmd_spore_add(args: argparse.Namespace) -> int:
    if (args.text is None) == (args.text_option is None):
        raise ValidationError("give the spore's text once: anneal-memory spore add TEXT "
                              "(or --text TEXT)")
    text = args.text if args.text is not None else args.text_option
    s = SporeStore(tier_home(args)).add(type=args.type, text=text, tier=args.tier,
                                      salience=args.salience, domain=args.domain,
                                      next=args.next, pointer=args.pointer)
    _show_spore(args, s, "Added")
    return 0


def cmd_spore_list(args: argparse.Namespace) -> int:
    ss = SporeStore(tier_home(args, reading=True))
    spores = ss.list_closed() if args.closed else ss.list_open(
        type=args.type, tier=args.tier, domain=args.domain, germination=args.germination)
    _show_spores(args, spores)
    return 0


def cmd_spore_get(args: argparse.Namespace) -> int:
    s = SporeStore(tier_home(args, reading=True)).get(args.id)
    if s is None:
        raise ValidationError(f"no spore {args.id!r}: see anneal-memory spore list")
    _show_spore(args, s, "")
    return 0


def cmd_spore_surface(args: argparse.Namespace) -> int:
    _show_spores(args, SporeStore(tier_home(args)).surface(limit=args.limit,
                                                         top_of_mind=args.top_of_mind))
    return 0


def cmd_spore_touch(args: argparse.Namespace) -> int:
    _show_spore(args, SporeStore(tier_home(args)).touch(args.id), "Touched")
    return 0


def cmd_spore_update(args: argparse.Namespace) -> int:
    s = SporeStore(tier_home(args)).update(
        args.id, text=args.text, type=args.type, tier=args.tier, salience=args.salience,
        domain=args.domain, next=args.next, clear_next=args.clear_next, pointer=args.pointer,
        note=args.note)
    _show_spore(args, s, "Updated")
    return 0


def cmd_spore_close(args: argparse.Namespace) -> int:
    ss = SporeStore(tier_home(args))
    if args.direction == "ascend":
        s = ss.ascend(args.id, kind=args.kind, ref=args.ref, note=args.note)
    else:
        s = ss.descend(args.id, kind=args.kind, note=args.note)
    _show_spore(args, s, "Closed")
    return 0


# ---------------------------------------------------------------------- outcomes, worth

def cmd_outcome(args: argparse.Namespace) -> int:
    rec = OutcomeLog(tier_home(args)).record(args.exposure_id, args.item, outcome=args.outcome,
                                           exposed=args.exposed)
    emit(args, rec, f"Recorded outcome for exposure {rec['exposure_id']}: "
         f"{len(rec['items'])} labelled item(s), outcome {rec['outcome'] or 'not given'}")
    return 0


def cmd_worth(args: argparse.Namespace) -> int:
    from ..worth import compute_worth, fold_surfaced

    if args.receipts:
        fold_surfaced(CrystalStore(tier_home(args)), args.receipts)
    report = compute_worth(OutcomeLog(tier_home(args)), CrystalStore(tier_home(args)),
                           episodes=args.episodes)
    rows = list(report.crystals.values()) + list(report.episodes.values())
    head = f"{'kind':<8} {'ref':<28} {'succ':>5} {'fail':>5} {'fol':>4} {'unlab':>6} {'pull':>5}"
    lines = [head] + [f"{w.kind:<8} {w.ref[:28]:<28} {w.success:>5} {w.failure:>5} "
                      f"{w.followed:>4} {sum(w.unlabelled.values()):>6} {w.pulled:>5}" for w in rows]
    lines.append(f"({report.exposures} exposure(s), {report.pulls} pull(s))")
    emit(args, report.to_dict(), "\n".join(lines))
    return 0
