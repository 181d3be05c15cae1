"""Commands that bring their own store: demo, eval, migrate-store."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from .common import Progress, command, emit, open_store, shown_location

if TYPE_CHECKING:
    from ..store import Store
    from .common import Subcommands

DEMO_FACTS = [
    ("The nightly import job times out when the connection pool has 5 connections", "observation"),
    ("Raised the connection pool to 20 connections for the import job", "decision"),
    ("Import job finished in 4 minutes with the larger connection pool", "outcome"),
    ("Should the pool size come from configuration instead of code?", "question"),
    ("Faster imports versus memory use of idle connections", "tension"),
]


def register(sub: Subcommands) -> None:
    command(sub, "demo", "record, recall and wrap a demo store, print the continuity "
            "(a temporary store unless --db names a new or empty one)", cmd_demo)
    e = command(sub, "eval", "run the governed-memory evaluation (five deterministic "
                "experiments)", cmd_eval)
    e.add_argument("--output", "-o", default="anneal-memory-eval", metavar="DIR",
                   help="folder for the JSON, Markdown and JSONL trace reports "
                        "(default: ./anneal-memory-eval)")
    m = command(sub, "migrate-store", "copy a store between SQLite and PostgreSQL, verified",
                cmd_migrate_store)
    m.add_argument("src", help="the store to copy: a .db path or a postgresql:// URL")
    m.add_argument("dst", help="a new, empty store: a .db path or a postgresql:// URL")


# ---------------------------------------------------------------------- migrate-store

def cmd_migrate_store(args: argparse.Namespace) -> int:
    from ..store_copy import migrate

    bar = Progress()

    def moving(table: str, done: int, total: int) -> None:
        bar.update(f"copying {table:<16} {done:,} / {total:,} rows", force=done >= total)

    try:
        result = migrate(args.src, args.dst, progress=moving)
    finally:
        bar.done()
    governed = " (with its governed memory)" if result["governed"] else ""
    emit(args, result, f"copied {sum(result['copied'].values())} rows from {result['source']} "
         f"to {result['destination']}{governed}; audit chain verified "
         f"({result['audit_entries']} entries)")
    return 0


# ---------------------------------------------------------------------- eval

def cmd_eval(args: argparse.Namespace) -> int:
    from ..governance_eval import FILES, run

    doc = run(args.output)
    files = [str(Path(args.output) / name) for name in FILES]
    data = {"output": args.output, "files": files, "safety_ok": doc["safety_ok"],
            "safety": doc["safety"]}
    emit(args, data, "\n".join(files))
    if not doc["safety_ok"]:
        print("anneal-memory: error: a safety count is not zero: see "
              f"{Path(args.output) / 'governance-eval.md'}", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------- demo

def cmd_demo(args: argparse.Namespace) -> int:
    args.project_name = args.project_name or "DemoAgent"
    if args.db:  # told where: a new or empty store only, never over someone's memory
        with open_store(args, create=True) as store:
            _check_demo_target(store, shown_location(args))
            data, text = _run_demo(store)
        emit(args, {"store": shown_location(args), "temporary": False, **data},
             f"store: {shown_location(args)} (kept)\n{text}")
        return 0
    from ..store import Store

    with tempfile.TemporaryDirectory(prefix="anneal-demo-") as tmp:
        with Store(Path(tmp) / "demo.db", project_name=args.project_name) as store:
            data, text = _run_demo(store)
    emit(args, {"store": None, "temporary": True, **data},
         f"store: a temporary one, deleted again (pass --db NEW_PATH to keep it)\n{text}")
    return 0


def _check_demo_target(store: Store, where: str) -> None:
    st = store.status()
    if st.total_episodes or st.total_wraps or st.tombstone_count or st.continuity_chars:
        raise StoreError(
            f"the store at {where} is not empty ({st.total_episodes} episode(s), "
            f"{st.total_wraps} wrap(s)): demo would add its episodes and replace the "
            "continuity; run it without --db (a temporary store) or with a new path")
    if store.consolidate_requires_baton():
        raise StoreError(
            f"the store at {where} requires the consolidation baton (made by init or serve), "
            "and demo wraps without a session: run it without --db (a temporary store) or "
            "with a new path")


def _run_demo(store: Store) -> tuple[dict[str, Any], str]:
    from ..testing import scripted_compress
    from ..wrap.prepare import prepare_wrap
    from ..wrap.render import render_package
    from ..wrap.save import validated_save_continuity

    for content, kind in DEMO_FACTS:
        store.record(content, kind)
    hits = store.recall(keyword="connection pool")
    wrap = prepare_wrap(store)
    if wrap["status"] != "ready" or wrap["package"] is None:
        raise StoreError(f"the demo store could not be wrapped ({wrap['status']}: "
                         f"{wrap['message']}): run demo without --db")
    result = validated_save_continuity(store, scripted_compress(render_package(wrap["package"])),
                                       wrap_token=wrap["wrap_token"])
    continuity = store.load_continuity() or ""
    data = {"recorded": len(DEMO_FACTS), "recalled": [e.content for e in hits.episodes],
            "wrap": result, "continuity": continuity}
    lines = [f"recorded {len(DEMO_FACTS)} episodes",
             f"recall 'connection pool': {hits.total_matching} match(es)"]
    lines += [f"  - [{e.type}] {e.content}" for e in hits.episodes]
    lines += [f"wrap saved: {result['chars']} chars from {result['episodes_compressed']} episodes",
              "", continuity]
    return data, "\n".join(lines)
