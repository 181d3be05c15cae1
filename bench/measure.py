"""One benchmark phase against whichever ``anneal_memory`` this interpreter imports.

Run by ``run.py`` as ``python bench/measure.py PHASE [options] --out FILE`` inside our
venv and inside the published package's venv; it uses only the public API, so the same
file measures both. Each phase runs in a fresh process so its peak RSS is its own.

Phases: ``load`` (durable single-record or batch load, then keyword and scored recall
at that size, bytes on disk), ``wrap`` (prepare + scripted compress + save),
``locomo`` (retrieval quality), ``fsync-probe`` (a fixed write burst for strace),
``ceiling`` (raw sqlite3 durable inserts: the disk's limit for a record).
"""

from __future__ import annotations  # noqa: I001  (anneal_memory is first- or third-party by venv)

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from typing import Any

import anneal_memory as am
import workload as wl

BATCH_CHUNK = 1000


def _package_info() -> dict[str, Any]:
    return {"file": am.__file__, "version": getattr(am, "__version__", None)}


def _batch_method(store: Any) -> str:
    if hasattr(store, "record_many"):
        return f"store.record_many(items), {BATCH_CHUNK} per call"
    if hasattr(store, "batch"):
        return f"with store.batch(): record() x {BATCH_CHUNK}"
    return "loop of store.record() (no batch API)"


def _chunks(items: Iterator[dict], size: int) -> Iterator[list[dict]]:
    chunk: list[dict] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _load(store: Any, items: Iterator[dict], mode: str, deadline: float
          ) -> tuple[int, float, list[float]]:
    """Record ``items``; returns (count, seconds inside the API, per-call latencies).

    Only the library calls are timed: generating the synthetic text is the harness's
    cost, and at batch speeds it would otherwise be a visible share of the figure.
    """
    count, spent, lat = 0, 0.0, []
    batch = mode == "batch" and (hasattr(store, "record_many") or hasattr(store, "batch"))
    for chunk in _chunks(items, BATCH_CHUNK):
        if not batch:
            for item in chunk:
                t0 = time.perf_counter()
                store.record(**item)
                lat.append(time.perf_counter() - t0)
            spent += sum(lat[-len(chunk):])
        else:
            t0 = time.perf_counter()
            if hasattr(store, "record_many"):
                store.record_many(chunk)
            else:
                with store.batch():
                    for item in chunk:
                        store.record(**item)
            spent += time.perf_counter() - t0
        count += len(chunk)
        if time.perf_counter() > deadline:
            break
    return count, spent, lat


def _time_calls(call: Any, args: list[str], deadline: float) -> tuple[list[float], int]:
    """Per-call latencies of ``call(arg)``, stopping early at ``deadline``."""
    lat, hits = [], 0
    for arg in args:
        t0 = time.perf_counter()
        hits += call(arg)
        lat.append(time.perf_counter() - t0)
        if time.perf_counter() > deadline:
            break
    return lat, hits


def phase_load(args: argparse.Namespace) -> dict[str, Any]:
    vocab = wl.Vocabulary.from_texts(wl.locomo_texts(args.locomo_dir))
    tmp = tempfile.mkdtemp(prefix="anneal-bench-", dir=args.workdir)
    try:
        store = am.Store(os.path.join(tmp, "bench.db"), project_name="bench")
        method = "loop of store.record(), one durable commit each" if args.mode == "single" \
            else _batch_method(store)
        count, secs, lat = _load(store, wl.episodes(vocab, args.size), args.mode,
                                 time.perf_counter() + args.max_seconds)
        out: dict[str, Any] = {"size_requested": args.size, "size": count, "mode": args.mode,
                               "method": method, "load_seconds": secs,
                               "load_per_second": count / secs if secs else None}
        if lat:
            out["record_latency"] = wl.latency_summary(lat)
        if args.queries:
            out.update(_recall(store, vocab, count, args))
        if args.tail_records:
            out["tail_records"] = _tail_records(store, vocab, count, args.tail_records,
                                                time.perf_counter() + args.max_seconds / 4)
        store.close()
        files = wl.dir_bytes(tmp)
        out["disk_bytes"] = sum(files.values())
        out["disk_files"] = files
        stored = count + int(_get_n(out.get("tail_records")))
        out["bytes_per_episode"] = out["disk_bytes"] / stored if stored else None
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


#: query classes: (name, queries builder, recall call); every class gets p50/p95/p99
def _query_classes(store: Any, vocab: wl.Vocabulary, size: int, args: argparse.Namespace
                   ) -> list[tuple[str, list[str], Any]]:
    spans = wl.queries(vocab, size, args.queries)
    n = max(20, args.queries // 2)

    def kw(**extra: Any) -> Any:
        return lambda q: len(store.recall(keyword=q, limit=10, **extra).episodes)

    return [
        ("keyword", spans, kw()),  # a span of a stored episode: the phrase path
        ("keyword_decision", spans, kw(episode_type="decision")),
        ("keyword_words", wl.word_queries(vocab, size, n), kw()),  # ranked words
        ("keyword_words_decision", wl.word_queries(vocab, size, n), kw(episode_type="decision")),
        ("keyword_question", wl.locomo_questions(args.locomo_dir, n), kw()),
        ("keyword_miss", wl.miss_queries(n), kw()),
        # issue 35's mixed workload: 1-3 vocabulary words, about one in nine absent
        ("keyword_mixed", wl.mixed_queries(vocab, size, args.queries), kw()),
        ("keyword_mixed_decision", wl.mixed_queries(vocab, size, args.queries),
         kw(episode_type="decision")),
        # scored recall is costlier in both packages: a quarter of the queries
        ("retrieve_relevant", spans[:max(20, len(spans) // 4)], lambda q: len(
            am.retrieve_relevant(store, None, q, max_episodes=10).episodes)),
    ]


def _recall(store: Any, vocab: wl.Vocabulary, size: int, args: argparse.Namespace
            ) -> dict[str, Any]:
    classes = _query_classes(store, vocab, size, args)
    for q in classes[0][1][:5]:  # warm the page cache and any lazy statements
        store.recall(keyword=q, limit=10)
    out: dict[str, Any] = {}
    for name, qs, call in classes:
        # Each class gets its own share of the bound, so one slow class cannot starve the rest.
        lat, hits = _time_calls(call, qs, time.perf_counter() + args.max_seconds / len(classes))
        summary: dict[str, Any] = wl.latency_summary(lat)
        summary["mean_results"] = hits / len(lat)
        out[f"recall_{name}"] = summary
    return out


def _get_n(summary: Any) -> int:
    return int(summary.get("n", 0)) if isinstance(summary, dict) else 0


def _tail_records(store: Any, vocab: wl.Vocabulary, start: int, count: int,
                  deadline: float) -> dict[str, Any]:
    """Durable single records into the store as loaded: what a record costs at this size."""
    lat: list[float] = []
    for item in wl.episodes(vocab, count, start=start):
        t0 = time.perf_counter()
        store.record(**item)
        lat.append(time.perf_counter() - t0)
        if time.perf_counter() > deadline:
            break
    out: dict[str, Any] = wl.latency_summary(lat)
    out["records_per_second"] = len(lat) / sum(lat)
    return out


def _scripted_compress(package: dict[str, Any], cited: list[Any]) -> str:
    """A valid continuity built from the wrap package, standing in for a model."""
    instructions = str(package.get("instructions", ""))
    m = re.search(r"`(# [^`\n]+)`", instructions)
    title = m.group(1) if m else "# bench — Memory (v1)"
    today = str(package.get("today"))
    a, b = cited
    shared = [w for w in wl.words(a.content) if w in set(wl.words(b.content))
              and w not in wl.QUERY_SKIP and len(w) > 3][:4]
    why = " ".join(shared) or "both are recorded benchmark decisions"
    return "\n".join([
        title, "",
        "## State",
        f"Benchmark wrap over {package.get('episode_count')} episodes.", "",
        "## Patterns",
        f"- benchmark_recurring_theme | 2x ({today}) [evidence: {a.id}, {b.id} "
        f"\"both mention {why}\"]",
        f"- benchmark_first_sighting | 1x ({today})", "",
        "## Decisions",
        f"- Keep the decision recorded as {a.id}.", "",
        "## Context",
        "A scripted compressor wrote this file; it stands in for the agent's model.", "",
    ])


def phase_wrap(args: argparse.Namespace) -> dict[str, Any]:
    vocab = wl.Vocabulary.from_texts(wl.locomo_texts(args.locomo_dir))
    runs: list[dict[str, float]] = []
    for rep in range(args.repeats):
        tmp = tempfile.mkdtemp(prefix="anneal-wrap-", dir=args.workdir)
        try:
            store = am.Store(os.path.join(tmp, "wrap.db"), project_name="bench")
            eps = [store.record(**item) for item in
                   wl.episodes(vocab, args.size, start=rep * args.size)]
            t0 = time.perf_counter()
            prep = am.prepare_wrap(store)
            t1 = time.perf_counter()
            if prep["status"] != "ready":
                raise RuntimeError(f"prepare_wrap returned status {prep['status']!r}")
            text = _scripted_compress(prep["package"], eps[:2])
            t2 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the level-cap warning is expected
                res = am.validated_save_continuity(store, text, wrap_token=prep["wrap_token"])
            t3 = time.perf_counter()
            if res.get("episodes_compressed") != args.size:
                raise RuntimeError(f"wrap compressed {res.get('episodes_compressed')} "
                                   f"episodes, expected {args.size}")
            runs.append({"prepare_s": t1 - t0, "save_s": t3 - t2,
                         "total_s": (t1 - t0) + (t3 - t2), "chars": res.get("chars")})
            store.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def med(key: str) -> float:
        vals = sorted(r[key] for r in runs)
        return vals[len(vals) // 2] * 1000.0

    totals = [r["total_s"] * 1000.0 for r in runs]
    return {"size": args.size, "repeats": len(runs), "prepare_ms": med("prepare_s"),
            "save_ms": med("save_s"), "total_ms": med("total_s"),
            "total_min_ms": min(totals), "total_p95_ms": wl.percentile(totals, 95),
            # the process's first wrap: it loads whatever the package defers to its use
            "total_first_ms": totals[0]}


def phase_locomo(args: argparse.Namespace) -> dict[str, Any]:
    import locomo
    return locomo.run(am, args.locomo_dir, args.workdir)


#: the raw-SQLite ceiling's schema: one row table and one FTS5 index over its text
CEILING_SCHEMA = (
    "CREATE TABLE ep (id INTEGER PRIMARY KEY, content TEXT NOT NULL, type TEXT NOT NULL, "
    "ts TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE ep_fts USING fts5(content, content='ep', content_rowid='id')",
)


def phase_ceiling(args: argparse.Namespace) -> dict[str, Any]:
    """What the disk allows a durable record: raw sqlite3, WAL, synchronous=FULL, one FTS5
    index, one INSERT + COMMIT per record, the same episodes as the load phase. No
    library is involved, so the figure is the same in either venv (issue 35's ceiling)."""
    import sqlite3

    vocab = wl.Vocabulary.from_texts(wl.locomo_texts(args.locomo_dir))
    tmp = tempfile.mkdtemp(prefix="anneal-ceiling-", dir=args.workdir)
    try:
        conn = sqlite3.connect(os.path.join(tmp, "raw.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        for stmt in CEILING_SCHEMA:
            conn.execute(stmt)
        lat: list[float] = []
        deadline = time.perf_counter() + args.max_seconds
        for item in wl.episodes(vocab, args.size):
            t0 = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute("INSERT INTO ep (content, type, ts) VALUES (?, ?, "
                               "strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                               (item["content"], item["episode_type"]))
            conn.execute("INSERT INTO ep_fts (rowid, content) VALUES (?, ?)",
                         (cur.lastrowid, item["content"]))
            conn.execute("COMMIT")
            lat.append(time.perf_counter() - t0)
            if time.perf_counter() > deadline:
                break
        conn.close()
        return {"size_requested": args.size, "size": len(lat),
                "method": "raw sqlite3: WAL, synchronous=FULL, one FTS5 index, "
                          "INSERT + COMMIT per record",
                "load_per_second": len(lat) / sum(lat), "sqlite": sqlite3.sqlite_version,
                "record_latency": wl.latency_summary(lat)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def phase_fsync_probe(args: argparse.Namespace) -> dict[str, Any]:
    """Records a burst between two markers that strace sees as writes to /dev/null."""
    tmp = tempfile.mkdtemp(prefix="anneal-fsync-", dir=args.workdir)
    try:
        store = am.Store(os.path.join(tmp, "probe.db"))
        for i in range(5):
            store.record(f"warm up {i}", "observation")
        with open(os.devnull, "w") as null:
            null.write("ANNEAL_BENCH_START")
            null.flush()
            for i in range(args.size):
                store.record(f"probe episode {i}", "observation")
            null.write("ANNEAL_BENCH_END")
            null.flush()
        store.close()
        return {"records": args.size}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def phase_info(args: argparse.Namespace) -> dict[str, Any]:
    """Which batch API the package has, so the driver can skip a duplicate loop run."""
    tmp = tempfile.mkdtemp(prefix="anneal-info-", dir=args.workdir)
    try:
        store = am.Store(os.path.join(tmp, "info.db"))
        out = {"batch_method": _batch_method(store),
               "has_batch": hasattr(store, "record_many") or hasattr(store, "batch")}
        store.close()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PHASES = {"info": phase_info, "load": phase_load, "wrap": phase_wrap, "locomo": phase_locomo,
          "fsync-probe": phase_fsync_probe, "ceiling": phase_ceiling}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=sorted(PHASES))
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--mode", choices=("single", "batch"), default="single")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--tail-records", type=int, default=0,
                   help="after the load, time this many durable single records")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--max-seconds", type=float, default=600.0)
    p.add_argument("--locomo-dir", required=True)
    p.add_argument("--workdir", default=None)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    result = PHASES[args.phase](args)
    result["phase"] = args.phase
    result["wall_seconds"] = time.perf_counter() - t0
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result["package"] = _package_info()
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
