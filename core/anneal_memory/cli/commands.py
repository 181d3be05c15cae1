"""Subcommands. Each is a thin translation onto library calls."""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from .common import emit


def register(sub: Any) -> None:
    d = sub.add_parser("demo", help="record, recall and wrap a small demo store, print the continuity")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo)
    e = sub.add_parser("eval", help="run the governed-memory evaluation (five deterministic experiments)")
    e.add_argument("--output", "-o", default="anneal-memory-eval",
                   help="folder for the JSON, Markdown and JSONL trace reports")
    e.set_defaults(func=cmd_eval)
    m = sub.add_parser("migrate-store", help="copy a store between SQLite and PostgreSQL, verified")
    m.add_argument("src", help="the store to copy: a .db path or a postgresql:// URL")
    m.add_argument("dst", help="a new, empty store: a .db path or a postgresql:// URL")
    m.set_defaults(func=cmd_migrate_store)


def cmd_migrate_store(args: argparse.Namespace) -> int:
    from ..migrate_store import main as migrate_main

    return migrate_main([args.src, args.dst])


def cmd_eval(args: argparse.Namespace) -> int:
    from ..eval import main as eval_main

    return eval_main(["--output", args.output])


def cmd_demo(args: argparse.Namespace) -> int:
    from .. import Store, prepare_wrap, validated_save_continuity
    from ..testing import scripted_compress
    from ..wrap.render import render_package

    path = args.db or os.path.join(tempfile.mkdtemp(prefix="anneal-demo-"), "demo.db")
    with Store(path, project_name=args.project_name or "DemoAgent") as store:
        facts = [
            ("The nightly import job times out when the connection pool has 5 connections", "observation"),
            ("Raised the connection pool to 20 connections for the import job", "decision"),
            ("Import job finished in 4 minutes with the larger connection pool", "outcome"),
            ("Should the pool size come from configuration instead of code?", "question"),
            ("Faster imports versus memory use of idle connections", "tension"),
        ]
        for text, kind in facts:
            store.record(text, kind)
        hits = store.recall(keyword="connection pool")
        wrap = prepare_wrap(store)
        prompt = render_package(wrap["package"])
        result = validated_save_continuity(store, scripted_compress(prompt),
                                           wrap_token=wrap["wrap_token"])
        text = store.load_continuity() or ""
        data = {"store": str(store.path), "recorded": len(facts),
                "recalled": [e.content for e in hits.episodes], "wrap": result, "continuity": text}
        lines = [f"store: {store.path}", f"recorded {len(facts)} episodes",
                 f"recall 'connection pool': {hits.total_matching} match(es)"]
        lines += [f"  - [{e.type}] {e.content}" for e in hits.episodes]
        lines += [f"wrap saved: {result['chars']} chars from {result['episodes_compressed']} episodes",
                  "", text]
        emit(args, data, "\n".join(lines))
    return 0
