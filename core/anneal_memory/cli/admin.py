"""Store administration: status, stats, graph, diff, export, import, migrate, serve."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fileio import sidecar_path
from .._seam import roles_of
from ..errors import AnnealMemoryError, ValidationError
from ..types import StoreStatusDict
from .common import (
    SHOWN,
    Progress,
    add_verbose,
    brief,
    command,
    db_path,
    emit,
    ensure_folder,
    group,
    new_store_undone,
    open_store,
    read_json,
    read_store,
    read_store_writable,
    require_store,
    sidecar,
    tier_home,
)

if TYPE_CHECKING:
    from ..store import Store
    from .common import Subcommands


class StatusDocument(StoreStatusDict):
    """``status --json``: the library's status, then 1.0.2's grouped keys beside it."""

    read_only: bool
    audit: dict[str, object]
    baton_holder: str | None
    baton_readable: bool
    schema: str
    sections: list[str]
    association_formation: Mapping[str, object]
    association_stats: Mapping[str, object]


class ServeUnavailable(AnnealMemoryError):
    """``serve`` without the mcp extra installed."""


# The agent-instruction snippets (CLI and MCP) change when the workflow they teach
# changes. Each entry is (version, what an installed snippet should now say).
SNIPPET_CHANGES: list[tuple[int, str]] = [
    (1, "Baseline workflow: load the continuity at session start, record typed episodes, "
        "recall before decisions, prepare-wrap then save-continuity at session end."),
    (2, "A store made by init or serve needs the consolidation baton to wrap: the operator "
        "runs 'anneal-memory baton claim NAME' once; until then a wrap is capture-only."),
    (3, "Affect tags are accepted and ignored, and saves form no association links: drop "
        "instructions that ask the agent to tag affect or to strengthen links."),
    (4, "Relayed content: record tool or web output with --trust tool / external and name "
        "summaries' sources with --derived-from; use --state-key for facts that change."),
]
SNIPPETS_VERSION = SNIPPET_CHANGES[-1][0]


def register(sub: Subcommands) -> None:
    p = command(sub, "status", "counts and health of the store", cmd_status)
    from .semantic import add_embedder_option

    add_embedder_option(p)

    command(sub, "namespaces", "the namespaces holding memory, with their counts "
            "(open one with --namespace)", cmd_namespaces)

    p = command(sub, "stats", "detailed analytics: types, trust, wraps, patterns, tiers", cmd_stats)

    p = command(sub, "graph", "association graph (none are formed since 1.0.2)", cmd_graph)
    p.add_argument("--format", choices=("dot", "json"), default="dot",
                   help="Graphviz dot (default) or JSON")
    p.add_argument("--min-strength", type=float, default=0.0, help="accepted (no links exist)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the graph to FILE")

    for name, what in (("associations", "episode"), ("pattern-associations", "pattern")):
        p = command(sub, name, f"{what} association links (none are formed since 1.0.2)",
                    cmd_associations)
        p.add_argument("--stats", action="store_true", help="the link statistics")
        p.add_argument("--limit", type=int, default=20, help="most links to list")
        p.add_argument("--min-strength", type=float, default=0.0,
                       help="only links at least this strong")
        p.add_argument("--episode" if what == "episode" else "--name", dest="subject",
                       help=f"only links of this {what}")

    p = command(sub, "diff", "wrap metric progression over the last N wraps", cmd_diff)
    p.add_argument("--wraps", type=int, default=5, metavar="N",
                   help="how many of the newest saved wraps to compare (default 5)")

    p = command(sub, "export", "the whole store as one document (json, markdown or sqlite)",
                cmd_export)
    p.add_argument("--format", "-f", choices=("json", "markdown", "sqlite"), default="json",
                   help="json (re-importable, the default), markdown (to read) or sqlite (a "
                   "consistent copy of the database)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write to FILE instead of standard output (sqlite: default "
                   "<stem>-export-<time>.db beside the store)")

    p = command(sub, "import", "load an export (all or nothing)", cmd_import)
    p.add_argument("file", help="an export file, or - for standard input")
    p.add_argument("--restore", action="store_true",
                   help="restore a backup into a new store: also its continuities, wrap "
                   "history, items and governed records (operator-only)")
    add_verbose(p)

    _, msub = group(sub, "migrate", "instruction snippets after an upgrade (never edits files)")
    for name, text in (("check", "what changed in the agent instructions since your last ack "
                                 "(and what upgrading a 1.0.2 store did)"),
                       ("ack", "record that your instructions are up to date"),
                       ("store", "upgrade a store written by anneal-memory 1.0.2 in place "
                                 "(a backup is kept) and report what was upgraded")):
        p = command(msub, name, text, cmd_migrate)
        p.set_defaults(migrate_view=name)
        if name == "ack":
            p.add_argument("version", nargs="?", type=int,
                           help="the snippet version your instructions follow (default: this "
                           "package's)")

    text = ("run the MCP server on stdio, or with --http on streamable HTTP for many users "
            "(needs anneal-memory[mcp])")
    p = sub.add_parser("serve", help=text, description=text[:1].upper() + text[1:] + ".")
    p.add_argument("--session-id", help="the session this server wraps as (baton holder)")
    p.add_argument("--http", metavar="HOST:PORT",
                   help="serve MCP over HTTP at http://HOST:PORT/mcp (e.g. 127.0.0.1:8765), "
                        "each request with a bearer token from 'token create'")
    p.add_argument("--rate-limit", metavar="RATE",
                   help="with --http: the most requests each token may make, e.g. 20/s, "
                        "1200/min (the default), or off; more are answered 429")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="with --http: a browser page's origin allowed besides this host's and "
                        "localhost's, e.g. https://app.example.com (repeatable)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="with --http: serve from N processes sharing the port and the store "
                        "(default 1; e.g. the machine's cores)")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-audit", action="store_true", help="run without the audit trail")
    p.add_argument("--verify-audit", action="store_true",
                   help="verify the audit chain first and refuse to start on a broken one")
    p.add_argument("--audit-retention-days", type=int, help=argparse.SUPPRESS)

    p.set_defaults(func=cmd_serve)


def cmd_namespaces(args: argparse.Namespace) -> int:
    with read_store(args) as store:
        rows = store.namespaces()
    data = [{"namespace": r["namespace"].to_dict(), "label": r["namespace"].label(),
             "episodes": r["episodes"], "wraps": r["wraps"], "records": r["records"],
             "pending_reviews": r["pending_reviews"]} for r in rows]
    lines = [f"{d['label']}: {d['episodes']} episode(s), {d['wraps']} wrap(s), "
             f"{d['records']} governed record(s), {d['pending_reviews']} pending review(s)"
             for d in data] or ["no namespaces yet: record with --namespace user=NAME"]
    emit(args, {"namespaces": data, "count": len(data)}, "\n".join(lines))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..continuity.schema import NAMED_SCHEMAS
    from ..wrap.baton import baton_status
    from .semantic import embedder_of

    # read-write (a read-only handle reports its own audit as off), on an existing store
    with read_store_writable(args, embedder=embedder_of(args)) as store:
        base = store.status().to_dict()
        read_only = bool(store.read_only)
        schema = store.section_schema
        try:  # this namespace's baton (a view's own), else the root's
            holder, readable = baton_status(store).get("holder"), True
        except AnnealMemoryError:
            holder, readable = None, False
    chars = base["continuity_chars"]
    # 1.0.2's grouped keys beside ours
    st: StatusDocument = {
        **base, "read_only": read_only,
        "audit": {"enabled": base["audit_enabled"], "entry_count": base["audit_entry_count"],
                  "write_failures": base["audit_write_failures"],
                  "last_failure": base["audit_last_failure"],
                  "log_path": str(sidecar_path(db_path(args), ".audit.jsonl")),
                  "retention_days": None},
        "baton_holder": holder, "baton_readable": readable,
        "schema": next((n for n in ("default", "partnership") if [dict(x) for x in schema]
                        == [dict(x) for x in NAMED_SCHEMAS[n]]), "custom"),
        "sections": [s["heading"] for s in schema],
        "association_formation": RETIRED_FORMATION, "association_stats": EMPTY_LINK_STATS}
    lines = [f"store: {st['path']}" + (" (read-only)" if st["read_only"] else "")]
    if st["namespace"]:
        lines.append("namespace: " + ", ".join(f"{k}={v}" for k, v in st["namespace"].items()
                                               if v is not None))
    lines += [f"episodes: {st['total_episodes']} ({st['episodes_since_wrap']} since the last wrap)",
             "by type: " + (", ".join(f"{k} {v}" for k, v in sorted(st["episodes_by_type"].items()))
                            or "none"),
             f"wraps: {st['total_wraps']}, last {st['last_wrap_at'] or 'never'}"
             + (f"; one open since {st['wrap_started_at']}" if st["wrap_in_progress"] else ""),
             f"continuity: {f'{chars} chars' if chars is not None else 'none yet'}",
             f"superseded: {st['superseded_count']}, tombstones: {st['tombstone_count']}",
             f"audit: {'on' if st['audit_enabled'] else 'off'}, {st['audit_entry_count']} entries"
             + (f", {st['audit_write_failures']} mirror failure(s)" if st["audit_write_failures"] else ""),
             f"baton required: {'yes' if st['consolidate_requires_baton'] else 'no'}"]
    if st["embedder"]:
        lines.append(f"embedder: {st['embedder']} ({st['embedding_dims'] or '?'} dims), "
                     f"{st['embedded_episodes']} of {st['total_episodes']} episodes embedded")
    lines += [f"vectors: {v['episodes']} episode(s) of {v['model']} ({v['dims']} dims)"
              for v in st["vectors"]]
    every = st["all_namespaces"]
    if every and every["namespaces"]:  # the root's own wraps and continuity above; everyone's here
        lines = [x + " (the root's own)" if x.startswith(("wraps: ", "continuity: ")) else x
                 for x in lines]
        lines.append(f"all namespaces: {every['namespaces']} namespace(s); {every['wraps']} wrap(s), "
                     f"last {every['last_wrap_at'] or 'never'}; {every['open_wraps']} open; "
                     f"{every['continuities']} continuity file(s) saved")
    emit(args, st, "\n".join(lines))
    return 0


_AGES = (("<1h", 1 / 24), ("1-24h", 1), ("1-7d", 7), ("7-30d", 30))


def _by_age(store: Store) -> dict[str, int]:
    """Episodes by age bucket, as 1.0.2's stats counts them."""
    from datetime import timedelta

    from ..clock import iso, utcnow

    now, out, before = utcnow(), {}, 0
    for name, days in _AGES:
        n = store.recall(since=iso(now - timedelta(days=days)), limit=0,
                         include_superseded=True).total_matching
        out[name], before = n - before, n
    out[">30d"] = store.recall(limit=0, include_superseded=True).total_matching - before
    return out


def _by_source(store: Store) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in store.recall(limit=10_000_000, include_superseded=True).episodes:
        counts[e.source] = counts.get(e.source, 0) + 1
    return counts


def cmd_stats(args: argparse.Namespace) -> int:
    from ..continuity.parse import extract_pattern_summaries
    from ..crystal import CrystalStore
    from ..immune.probes import list_probes
    from ..spores import SporeStore

    with read_store_writable(args) as store:
        st = store.status().to_dict()
        history = store.wrap_history()
        text = store.load_continuity()
        patterns = extract_pattern_summaries(text, store.section_schema) if text else []
        probes = list_probes(store)
        everything = store.recall(limit=0, include_superseded=True).total_matching
        ages = _by_age(store)
        sources = _by_source(store)
    levels: dict[str, int] = {}
    for p in patterns:
        levels[f"{p.level}x"] = levels.get(f"{p.level}x", 0) + 1
    crystals = CrystalStore(tier_home(args, reading=True))
    episodes = {"total": st["total_episodes"], "since_wrap": st["episodes_since_wrap"],
                "by_type": st["episodes_by_type"], "by_trust": st["trust_counts"],
                "superseded": st["superseded_count"], "tombstones": st["tombstone_count"],
                "by_age": ages, "by_source": sources, "stored": everything}
    avg_chars = (round(sum(w["chars"] or 0 for w in history) / len(history)) if history
                 else None)
    avg_episodes = (round(sum(w["episodes_compressed"] or 0 for w in history) / len(history), 1)
                    if history else None)
    proven = sum(1 for p in patterns if p.level >= 2)
    live, retired = len(crystals.list()), len(crystals.list(status="retired"))
    spores_open = len(SporeStore(crystals.store).list_open())
    data = {
        "episodes": episodes,
        "wraps": {"total": st["total_wraps"], "last_at": st["last_wrap_at"],
                  "open": st["wrap_in_progress"], "avg_chars": avg_chars,
                  "avg_episodes": avg_episodes},
        "patterns": {"total": len(patterns), "by_level": levels, "proven": proven},
        "continuity_chars": st["continuity_chars"],
        "drift_probes": len(probes),
        "crystals": {"live": live, "retired": retired},
        "continuity": {"chars": st["continuity_chars"]},
        "associations": EMPTY_LINK_STATS,
        "spores_open": spores_open,
        "audit_entries": st["audit_entry_count"],
    }
    lines = [
        f"episodes: {st['total_episodes']} ({st['episodes_since_wrap']} since the last wrap)",
        "  by type: " + (", ".join(f"{k} {v}" for k, v in sorted(st["episodes_by_type"].items())) or "none"),
        "  by trust: " + (", ".join(f"{k} {v}" for k, v in sorted(st["trust_counts"].items())) or "none"),
        f"  superseded {st['superseded_count']}, tombstones {st['tombstone_count']}",
        f"wraps: {st['total_wraps']} (avg {avg_chars or 0} chars, "
        f"{avg_episodes or 0} episodes each)",
        f"patterns: {len(patterns)} ({proven} proven) "
        + (", ".join(f"{k} {v}" for k, v in sorted(levels.items())) if levels else ""),
        f"crystals: {live} live, {retired} retired; "
        f"open spores: {spores_open}; drift probes: {len(probes)}",
        f"audit entries: {st['audit_entry_count']}",
    ]
    emit(args, data, "\n".join(lines))
    return 0


#: the association layer, retired: what status and stats report for it
RETIRED_FORMATION = {"mode": "disabled", "off_at_wrap": None, "off_by_version": "1.0.2"}
EMPTY_LINK_STATS = {"total_links": 0, "avg_strength": 0, "max_strength": 0, "density": 0.0,
                    "strongest_pairs": [], "local_density": 0.0}

GRAPH_NOTE = ("anneal-memory forms no association links (retired in 1.0.2) and this store "
              "holds none: the graph is empty")


def cmd_graph(args: argparse.Namespace) -> int:
    with read_store(args):
        pass  # a wrong --db still fails here, as every store command does
    if args.json or args.format == "json":
        text = json.dumps({"nodes": [], "edges": [], "note": GRAPH_NOTE, "message": GRAPH_NOTE},
                          indent=2)
    else:
        text = f"// {GRAPH_NOTE}\ndigraph anneal_memory {{\n}}"
    if args.output:
        from .._fileio import atomic_write_text

        atomic_write_text(args.output, text + "\n")
    else:
        print(text)
    return 0


def cmd_associations(args: argparse.Namespace) -> int:
    with read_store(args):
        pass
    emit(args, {"associations": [], "stats": EMPTY_LINK_STATS, "note": GRAPH_NOTE}, GRAPH_NOTE)
    return 0


_DIFF_KEYS = ("chars", "episodes_compressed", "graduations_validated", "graduations_demoted",
              "level_capped", "uncorroborated", "citation_reuse_max", "citation_spread")


def cmd_diff(args: argparse.Namespace) -> int:
    if args.wraps < 1:
        raise ValidationError("--wraps must be 1 or more")
    with read_store(args) as store:
        history = list(reversed(store.wrap_history(args.wraps)))
    from ..legacy.formats import wrap_record

    rows = []
    prev: dict[str, Any] | None = None
    for w in history:
        row = {**wrap_record(w), "wrap_id": w["id"], "session_id": w["session_id"]}
        for k in _DIFF_KEYS:
            row[k] = w.get(k) if k in ("chars", "episodes_compressed") else w["metrics"].get(k)
        if prev is not None and row["chars"] is not None and prev["chars"] is not None:
            row["chars_delta"] = row["chars"] - prev["chars"]
        rows.append(row)
        prev = row
    head = f"{'wrap':>5} {'saved':<19} {'chars':>7} {'Δchars':>7} {'eps':>4} {'valid':>5} {'demot':>5} {'capped':>6}"
    lines = [head] + [
        f"{r['wrap_id']:>5} {str(r['wrapped_at'])[:19]:<19} {r['chars'] or 0:>7} "
        f"{r.get('chars_delta', ''):>7} {r['episodes_compressed'] or 0:>4} "
        f"{r['graduations_validated'] or 0:>5} {r['graduations_demoted'] or 0:>5} "
        f"{r['level_capped'] or 0:>6}" for r in rows]
    emit(args, {"wraps": rows}, "\n".join(lines) if rows else "(no saved wraps yet)")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "sqlite":
        return _export_sqlite(args)
    with read_store(args) as store:
        if args.format == "markdown":
            text = _markdown(store)
            if args.output:
                from .._fileio import atomic_write_text

                atomic_write_text(args.output, text)
        else:
            text = store.export_json(args.output)
        count = store.status().total_episodes
    if args.output:
        emit(args, {"path": args.output, "episodes": count},
             f"Exported {count} episode(s) to {args.output}")
    else:
        print(text)
    return 0


def _markdown(store: Store) -> str:
    """The store as a document to read: the continuity, then every episode by day."""
    res = store.recall(limit=10_000_000, include_superseded=True)
    lines = [f"# {store.project_name}: memory export", "", "## Continuity", "",
             (store.load_continuity() or "(none yet)").rstrip(), "",
             f"## Episodes ({res.total_matching})", ""]
    day = None
    for e in sorted(res.episodes, key=lambda x: (x.timestamp, x.id)):
        if e.timestamp[:10] != day:
            day = e.timestamp[:10]
            lines += [f"### {day}", ""]
        tail = f" (replaced by {e.superseded_by})" if e.superseded_by else ""
        lines.append(f"- [{e.id}] {e.type.value}: {e.content}{tail}")
    return "\n".join(lines).rstrip() + "\n"


def _export_sqlite(args: argparse.Namespace) -> int:
    """A backup as a new SQLite store: everything ``migrate-store`` copies (episodes,
    links, wraps, every namespace's continuity, items, governed tables, the audit chain
    entry for entry, written out to its files and verified), so the copy opens, verifies
    and restores as the source was. Never a torn copy: one read transaction."""

    from ..clock import now_iso
    from ..store_copy import migrate

    src = db_path(args)
    with read_store(args):
        pass  # a wrong path fails as every store command does
    dest = Path(args.output) if args.output else src.with_name(
        f"{src.stem}-export-{now_iso()[:19].replace(':', '')}.db")
    if dest.exists():
        raise ValidationError(f"{dest} exists: pass another --output")
    result = migrate(str(src), str(dest))  # a failed copy leaves nothing behind
    emit(args, {"path": str(dest), "format": "sqlite", "verified": result["verified"],
                "audit_entries": result["audit_entries"]},
         f"Exported the store to {dest} (audit chain of {result['audit_entries']} entries "
         "verified)")
    return 0


_IMPORT_LISTS = ("skipped_existing", "refused_deleted", "ids")


def import_summary(result: Mapping[str, object], verbose: bool) -> dict[str, object]:
    """The import result with each id list counted and, unless ``verbose``, cut to its
    first few: a re-run import of 50,000 episodes skips them all."""
    out = dict(result)
    lists = {key: _listed(result.get(key)) for key in _IMPORT_LISTS}
    for key, items in lists.items():
        out[f"{key}_count"] = len(items)
        out[key] = items if verbose else items[:SHOWN]
    out["lists_complete"] = verbose or all(len(items) <= SHOWN for items in lists.values())
    return out


def _listed(value: object) -> list[object]:
    """An id list of the import result as a list (none: empty)."""
    return list(value) if isinstance(value, (list, tuple)) else []


def cmd_import(args: argparse.Namespace) -> int:
    from .common import operator_store

    doc = read_json(args.file, "import")
    if not isinstance(doc, (dict, str)):  # as the import itself refuses it, before any store
        raise ValidationError("the import is not an anneal-memory export: it needs an "
                              "'episodes' list (write one with 'anneal-memory export')")
    episodes = doc.get("episodes") if isinstance(doc, dict) else None
    episodes = episodes if isinstance(episodes, list) else []  # else refused by the import
    n = len(episodes)
    operator = any(isinstance(e, dict) and str(e.get("trust", "")).lower() == "operator"
                   for e in episodes or [])
    bar = Progress()
    bar.update(f"importing {n:,} episode(s) from {args.file} ...", force=True)

    def moving(done: int, total: int) -> None:
        bar.update(f"importing: {done:,} / {total:,} episodes")

    with new_store_undone(args):  # a refused or failed import into a new path leaves nothing
        if operator or args.restore:
            what = ("restore the backup's continuities, wraps, items and governed records"
                    if args.restore else "import episodes labelled trust operator")
            with operator_store(args, what, create=True) as (store, via):
                result = store.import_(doc, via=via, progress=moving,
                                       restore=True if args.restore else False)
        else:
            with open_store(args, create=True) as store:
                result = store.import_(doc, via="cli", progress=moving, restore=False)
    bar.done(f"imported {result['imported']:,} of {n:,} episode(s)")
    skipped, refused = result["skipped_existing"], result["refused_deleted"]
    text = (f"Imported {result['imported']}; skipped {len(skipped)} already present; "
            f"refused {len(refused)} deleted")
    if skipped and args.verbose:
        text += f"\nskipped: {brief(skipped, True)}"
    if refused:
        text += f"\nrefused (deleted here): {brief(refused, args.verbose)}"
    if result.get("tombstones_added"):
        text += f"\nrecorded {result['tombstones_added']} deletion(s) the export carries"
    state = result.get("state") or {}
    if state.get("restored"):
        rows = state.get("rows") or {}
        text += (f"\nrestored {rows.get('continuities', 0)} continuity(ies), "
                 f"{rows.get('wraps', 0)} wrap(s), {rows.get('items', 0)} item(s), "
                 f"{rows.get('gov_records', 0)} governed record version(s)")
    elif args.restore or (isinstance(doc, dict) and (doc.get("state") or doc.get("continuity"))):
        text += f"\nnot restored: {state.get('reason')}" + (
            "" if args.restore else " (pass --restore to restore a backup into a new store)")
    emit(args, import_summary(result, args.verbose), text)
    return 0


def _ack_path(args: argparse.Namespace) -> Any:
    from .._fileio import sidecar_path

    return sidecar_path(sidecar(args), ".instructions-ack.json")


def _store_upgrade(args: argparse.Namespace) -> tuple[dict[str, Any] | None, bool]:
    """(the 1.0.2 upgrade report, whether it ran just now); opening the store upgrades a
    1.0.2 one in place. None for a store that never was a 1.0.2 one (or no store)."""
    from ..legacy.upgrade import upgrade_report

    if args.migrate_view == "store":
        require_store(args)  # a mistyped --db names the problem and creates nothing
    path = db_path(args)
    if not path.exists():
        return None, False
    with open_store(args) as store:
        now = store.legacy_upgrade
        return (now or upgrade_report(roles_of(store).meta)), now is not None


def _upgrade_text(report: dict[str, Any] | None, now: bool) -> str:
    if report is None:
        return "Store: nothing to upgrade (not written by anneal-memory 1.0.2)"
    counts = ", ".join(f"{report.get(k, 0)} {k.replace('_', ' ')}" for k in (
        "episodes", "supersessions", "state_keys", "trust_classes", "derivations",
        "tombstones", "wraps", "drift_probes", "pattern_levels"))
    audit = report.get("audit") or {}
    return (f"Store {'upgraded now' if now else 'was upgraded'} from anneal-memory "
            f"{report.get('from_version')} at {report.get('upgraded_at')}: {counts}; audit "
            f"chain of {audit.get('entries', 0)} entries continued "
            f"({'verified' if audit.get('valid') else 'did NOT verify before the upgrade'}); "
            f"backup: {report.get('backup')}")


def cmd_migrate(args: argparse.Namespace) -> int:
    from .._fileio import atomic_write_json

    if args.migrate_view == "store":
        report, now = _store_upgrade(args)
        emit(args, {"store_upgrade": report, "upgraded_now": now}, _upgrade_text(report, now))
        return 0

    path = _ack_path(args)
    acked = 0
    if path.exists():
        try:
            acked = int(json.loads(path.read_text("utf-8")).get("acknowledged", 0))
        except (ValueError, AttributeError, TypeError):
            raise ValidationError(f"{path} is unreadable: delete it and run anneal-memory "
                                  "migrate ack after checking your instructions") from None
    if args.migrate_view == "ack":
        from ..clock import now_iso

        version = SNIPPETS_VERSION if args.version is None else args.version
        if not 1 <= version <= SNIPPETS_VERSION:
            raise ValidationError(f"snippet version {version} is not one this package knows "
                                  f"(1 to {SNIPPETS_VERSION})")
        atomic_write_json(path, {"acknowledged": version, "at": now_iso()})
        emit(args, {"acknowledged": version, "previous": acked},
             f"Instructions acknowledged at snippet version {version}")
        return 0
    changes = [{"version": v, "change": c} for v, c in SNIPPET_CHANGES if v > acked]
    report, now = _store_upgrade(args)
    data = {"installed": SNIPPETS_VERSION, "acknowledged": acked or None,
            "up_to_date": not changes, "changes": changes, "store_upgrade": report}
    if changes:
        text = (f"Your instructions were acknowledged at version {acked or 'none'}; this package "
                f"teaches version {SNIPPETS_VERSION}. Update your CLAUDE.md / AGENTS.md snippet:\n"
                + "\n".join(f"  v{c['version']}: {c['change']}" for c in changes)
                + "\nThen run: anneal-memory migrate ack")
    else:
        text = f"Instructions up to date (snippet version {SNIPPETS_VERSION})"
    if report is not None:
        text += "\n" + _upgrade_text(report, now)
    emit(args, data, text)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    if args.http is not None:  # a bad or every-interface address: refused before anything
        from ..mcp.edge import parse_origins, parse_rate
        from ..mcp.http import check_workers, parse_address

        parse_address(args.http)
        parse_rate(args.rate_limit)
        parse_origins(args.allow_origin)
        if args.workers is not None:
            check_workers(args.workers)
    elif args.rate_limit is not None or args.allow_origin or args.workers is not None:
        raise ValidationError("--rate-limit, --allow-origin and --workers are for --http: "
                              "leave them out over stdio")
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ServeUnavailable("the MCP server needs the mcp package, which is not installed: "
                               "pip install 'anneal-memory[mcp]'") from None
    try:
        from ..mcp.server import run_server
    except ImportError as exc:
        raise ValidationError(f"the MCP server is not available in this build ({exc}): "
                              "reinstall anneal-memory[mcp]") from None
    if args.audit_retention_days is not None:
        raise ValidationError("--audit-retention-days: this package keeps the whole audit "
                              "trail (older weeks are sealed and gzipped); drop the flag")
    if args.verify_audit:
        from ..audit import AuditTrail

        result = AuditTrail.verify(db_path(args))
        if not result.valid:
            raise ValidationError(f"the audit chain breaks at entry {result.chain_break_at} "
                                  f"({result.reason}): not serving; see anneal-memory audit-repair")
    edge = ({"rate_limit": args.rate_limit, "allow_origins": args.allow_origin,
             "workers": args.workers or 1} if args.http is not None else {})
    return int(run_server(str(ensure_folder(args)), args.project_name, args.session_id,
                          args.skip_integrity, args.generate_integrity, audit=not args.no_audit,
                          http=args.http, **edge))
