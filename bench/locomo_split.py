"""LoCoMo retrieval quality on a development split and a held-out split, with latency.

``python bench/locomo_split.py --locomo-dir DIR --dev 26,30 --out FILE`` records each
conversation into its own store (as ``locomo.run`` does), asks every question through
``store.recall(keyword=question, limit=10)`` and ``retrieve_relevant``, and reports
recall@5, recall@10 and hit@10 per category for the dev conversations, the held-out
ones and all, plus p50/p95 of the keyword recall call. ``--compare PYTHONPATH`` runs the
same script a second time under another checkout's ``core`` in the same run (turns
recorded by each package itself), one after the other, so the figures are a
before/after pair from one run on the same machine state.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import locomo  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def _pg_location(dsn: str, name: str) -> tuple[str, Any]:
    """A fresh schema on the server ``dsn`` for one conversation, and its cleanup."""
    from urllib.parse import quote

    import psycopg

    schema = f"locomo_{name}_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        c.execute(f"CREATE SCHEMA {schema}")

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options={quote(f'-csearch_path={schema}')}", drop


def evaluate(locomo_dir: str, dev: set[str], passes: int, pg_dsn: str | None = None
             ) -> dict[str, Any]:
    """Score every question; time ``passes`` rounds of the keyword call."""
    import anneal_memory as am

    files = sorted(Path(locomo_dir).glob("*.json"))
    per: list[dict[str, Any]] = []
    lat: list[float] = []
    for path in files:
        conv = locomo.load(path)
        with tempfile.TemporaryDirectory() as tmp:
            drop = None
            location = os.path.join(tmp, "locomo.db")
            if pg_dsn:
                location, drop = _pg_location(pg_dsn, conv.name)
            store = am.Store(location, project_name="locomo")
            try:
                to_dia: dict[str, str] = {}
                with store.batch() if hasattr(store, "batch") else _null():
                    for t in conv.turns:
                        ep = store.record(t.content, "observation", source="conversation",
                                          metadata={"dia_id": t.dia_id}, timestamp=t.timestamp)
                        to_dia[ep.id] = t.dia_id
                for q in conv.questions:
                    kw = [to_dia.get(e.id, e.id)
                          for e in store.recall(keyword=q.text, limit=10).episodes]
                    rr = [to_dia.get(e.id, e.id) for e in am.retrieve_relevant(
                        store, None, q.text, max_episodes=10).episodes]
                    per.append({"conv": conv.name, "q": q.text, "cat": q.category,
                                "evidence": sorted(q.evidence), "keyword": kw, "scored": rr})
                for _ in range(passes):
                    for q in conv.questions:
                        t0 = time.perf_counter()
                        store.recall(keyword=q.text, limit=10)
                        lat.append(1000.0 * (time.perf_counter() - t0))
            finally:
                store.close()
                if drop is not None:
                    drop()
    splits = {"dev": [p for p in per if p["conv"] in dev],
              "held-out": [p for p in per if p["conv"] not in dev], "all": per}
    out: dict[str, Any] = {"package": am.__file__, "dev": sorted(dev), "splits": {},
                           "latency_ms": {"p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95),
                                          "mean": statistics.fmean(lat) if lat else 0.0,
                                          "calls": len(lat)}}
    for name, group in splits.items():
        out["splits"][name] = {
            method: locomo.aggregate([(p["cat"], locomo.score(p[method],
                                                              frozenset(p["evidence"])))
                                      for p in group])
            for method in ("keyword", "scored")}
    out["questions"] = per
    return out


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def _table(results: dict[str, dict[str, Any]], method: str) -> str:
    lines = [f"### {method}", "",
             "| split | category | n | " + " | ".join(
                 f"{lab} {m}" for m in ("R@5", "R@10", "hit@10") for lab in results) + " |",
             "|---|---|---:|" + "---:|" * (3 * len(results))]
    first = next(iter(results.values()))
    for split in first["splits"]:
        cats = ["overall", *first["splits"][split][method]["by_category"]]
        for cat in cats:
            cells = []
            n = 0
            for m in ("recall@5", "recall@10", "hit@10"):
                for res in results.values():
                    agg = res["splits"][split][method]
                    row = agg["overall"] if cat == "overall" else agg["by_category"].get(cat, {})
                    n = int(row.get("questions", 0))
                    cells.append(f"{row.get(m, 0.0):.3f}")
            lines.append(f"| {split} | {cat} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--locomo-dir", required=True)
    p.add_argument("--dev", default="26,30", help="conversation file stems of the dev split")
    p.add_argument("--passes", type=int, default=3, help="timing rounds per question")
    p.add_argument("--rounds", type=int, default=1,
                   help="runs of each package, alternating; latency is the median run's")
    p.add_argument("--out", required=True)
    p.add_argument("--compare", help="PYTHONPATH of the 'before' package (its core dir)")
    p.add_argument("--pg-dsn", help="run on this PostgreSQL server (a schema per conversation)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    dev = {s.strip() for s in args.dev.split(",") if s.strip()}
    if args.child:
        res = evaluate(args.locomo_dir, dev, args.passes, args.pg_dsn)
        Path(args.out).write_text(json.dumps(res), encoding="utf-8")
        return
    runs = {"after": None} if not args.compare else {"before": args.compare, "after": None}
    results: dict[str, dict[str, Any]] = {}
    spread: dict[str, list[dict[str, float]]] = {label: [] for label in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for _round in range(args.rounds):  # alternating, so load drift hits both alike
            for label, path in runs.items():
                env = dict(os.environ)
                if path:
                    env["PYTHONPATH"] = path
                out = os.path.join(tmp, f"{label}.json")
                subprocess.run([sys.executable, __file__, "--child", "--locomo-dir",
                                args.locomo_dir, "--dev", args.dev, "--passes",
                                str(args.passes), "--out", out,
                                *(["--pg-dsn", args.pg_dsn] if args.pg_dsn else [])],
                               check=True, env=env)
                results[label] = json.loads(Path(out).read_text(encoding="utf-8"))
                spread[label].append(results[label]["latency_ms"])
    for label, lats in spread.items():  # the median run's latency, and every run's
        lats.sort(key=lambda x: x["p50"])
        results[label]["latency_ms"] = dict(lats[len(lats) // 2], runs=lats)
    Path(args.out).write_text(json.dumps(results, indent=1), encoding="utf-8")
    for label, res in results.items():
        lat = res["latency_ms"]
        runs = ", ".join(f"{r['p50']:.2f}/{r['p95']:.2f}" for r in lat.get("runs", []))
        print(f"{label}: {res['package']}  recall(keyword=q, limit=10) p50 {lat['p50']:.2f} ms"
              f"  p95 {lat['p95']:.2f} ms  ({lat['calls']} calls; p50/p95 of each run: {runs})")
    print(_table(results, "keyword"))
    print()
    print(_table(results, "scored"))


if __name__ == "__main__":
    main()
