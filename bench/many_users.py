"""Many users in one store: what one user pays as the store fills with other users.

Three figures (issue: many users in one store), each a ratio to a baseline measured in
the same run:

1. one user's keyword recall p95 and ``prepare_wrap`` time in stores of 1, 100 and
   10,000 users holding the same episodes per user (same words for every user: the
   worst case for a full-text index), as a ratio to the store holding that user alone;
2. 100 users' sessions ending at once (threads, then processes): wraps saved of 100 and
   the wall time against the same 100 wraps one after another;
3. event-loop stall: the longest gap a 1 ms ticker sees while 50 async sessions record
   and recall, with the async twins against the sync API called on the loop.

    python bench/many_users.py [--users 1,100,10000] [--per-user 5] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from anneal_memory import MemorySession, Store, prepare_wrap

WORDS = ["invoice", "latency", "queue", "retry", "cache", "deploy", "schema", "vault"]


def _fill(store: Store, users: int, per_user: int) -> None:
    for u in range(users):
        view = store.scoped({"user": f"u{u:05d}"})
        view.record_many({"content": f"u{u:05d} note {i}: the {WORDS[i % 8]} {WORDS[(i + 3) % 8]} "
                          f"issue was seen again", "episode_type": "observation"}
                         for i in range(per_user))


def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def one_user_costs(sizes: list[int], per_user: int, folder: Path,
                   queries: int) -> dict[int, dict[str, float]]:
    """Every store built first, then the queries run round-robin across them, so each
    store's figures see the same machine (a noisy neighbour hits them all alike)."""
    stores = {n: Store(folder / f"users{n}.db") for n in sizes}
    try:
        for n, store in stores.items():
            _fill(store, n, per_user)
        views = {n: s.scoped({"user": "u00000"}) for n, s in stores.items()}
        times: dict[int, list[float]] = {n: [] for n in sizes}
        wraps: dict[int, list[float]] = {n: [] for n in sizes}
        for q in range(queries):
            kw = f"{WORDS[q % 8]} {WORDS[(q + 3) % 8]}"
            for n, me in views.items():
                t = time.perf_counter()
                res = me.recall(keyword=kw, limit=10)
                times[n].append(time.perf_counter() - t)
                assert all(e.content.startswith("u00000") for e in res.episodes)
        for _ in range(max(5, queries // 20)):
            for n, me in views.items():
                t = time.perf_counter()
                w = prepare_wrap(me)
                wraps[n].append(time.perf_counter() - t)
                me.wrap_cancelled(wrap_token=w["wrap_token"])
        return {n: {"recall_p95_ms": _p95(times[n]) * 1e3,
                    "recall_p50_ms": statistics.median(times[n]) * 1e3,
                    "prepare_wrap_ms": statistics.median(wraps[n]) * 1e3} for n in sizes}
    finally:
        for s in stores.values():
            s.close()


def _compress(prompt: str) -> str:
    return "## State\n- ok\n\n## Patterns\n- p | 1x\n\n## Decisions\n- d\n\n## Context\n- c\n"


def _wrap(store: Store, user: str) -> bool:
    return MemorySession(store, namespace={"user": user}).wrap(_compress).saved


def _seed(path: Path, users: list[str]) -> None:
    with Store(path) as s:
        for u in users:
            MemorySession(s, namespace={"user": u}).record_observation(f"{u} saw the queue grow")


def _proc(path: str, users: list[str], q: Any) -> None:
    with Store(path) as s:
        q.put(sum(_wrap(s, u) for u in users))


def concurrent_wraps(folder: Path, n: int = 100) -> dict[str, float]:
    users = [f"w{i:03d}" for i in range(n)]
    out: dict[str, float] = {}
    seq = folder / "seq.db"
    _seed(seq, users)
    with Store(seq) as s:
        t = time.perf_counter()
        saved = sum(_wrap(s, u) for u in users)
        out["sequential_s"], out["sequential_saved"] = time.perf_counter() - t, saved
    thr = folder / "threads.db"
    _seed(thr, users)
    with Store(thr) as s:
        results: list[bool] = []
        threads = [threading.Thread(target=lambda u=u: results.append(_wrap(s, u))) for u in users]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        out["threads_s"], out["threads_saved"] = time.perf_counter() - t, sum(results)
    prc = folder / "procs.db"
    _seed(prc, users)
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_proc, args=(str(prc), users[i::4], q)) for i in range(4)]
    t = time.perf_counter()
    for p in procs:
        p.start()
    saved = sum(q.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    out["processes_s"], out["processes_saved"] = time.perf_counter() - t, saved
    return out


async def _stall(store: Store, use_twins: bool, sessions: int = 50) -> float:
    gaps: list[float] = []
    stop = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def user(i: int) -> None:
        s = MemorySession(store, namespace={"user": f"a{i:03d}"})
        for k in range(5):
            if use_twins:
                await s.arecord_observation(f"a{i:03d} event {k} about the queue")
                await s.acontext_for("queue event")
            else:
                s.record_observation(f"a{i:03d} event {k} about the queue")
                s.context_for("queue event")
            await asyncio.sleep(0)

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    await asyncio.gather(*(user(i) for i in range(sessions)))
    stop = True
    await tick
    return max(gaps) * 1e3


def loop_stall(folder: Path) -> dict[str, float]:
    out = {}
    for name, twins in (("sync_inline_max_gap_ms", False), ("async_twins_max_gap_ms", True)):
        with Store(folder / f"stall-{name}.db") as s:
            out[name] = asyncio.run(_stall(s, twins))
    return out


def concurrent_writers(folder: Path, writers: int = 50, each: int = 40) -> dict[str, float]:
    """Durable record() throughput: one sequential writer against ``writers`` threads on
    one Store (group commit), with the p99 latency of one call."""
    with Store(folder / "seq-writer.db") as s:
        t = time.perf_counter()
        for i in range(writers * each // 4):
            s.record(f"sequential note {i} about the queue", "observation")
        seq_rate = (writers * each // 4) / (time.perf_counter() - t)
    lat: list[float] = []
    lock = threading.Lock()
    with Store(folder / "group-writers.db") as s:
        def run(w: int) -> None:
            mine = []
            for i in range(each):
                t0 = time.perf_counter()
                s.record(f"writer {w} note {i} about the queue", "observation")
                mine.append(time.perf_counter() - t0)
            with lock:
                lat.extend(mine)
        threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        rate = writers * each / (time.perf_counter() - t)
        commits = s._group.commits
    lat.sort()
    return {"sequential_records_per_s": round(seq_rate), "concurrent_records_per_s": round(rate),
            "ratio": round(rate / seq_rate, 2), "writers": writers,
            "p99_latency_ms": round(lat[int(0.99 * (len(lat) - 1))] * 1e3, 2),
            "records_per_commit": round(writers * each / max(commits, 1), 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--users", default="1,100,10000")
    p.add_argument("--per-user", type=int, default=5)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = p.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="anneal-many-users-"))
    res: dict[str, Any] = {"per_user": args.per_user, "users": {}}
    res["users"] = one_user_costs([int(x) for x in args.users.split(",")], args.per_user,
                                  folder, args.queries)
    for n, r in res["users"].items():
        print(f"{n:>6} users: {r}", flush=True)
    base = res["users"][min(res["users"])]
    res["ratios"] = {n: {k: round(v / base[k], 2) for k, v in r.items()} for n, r in res["users"].items()}
    res["concurrent_wraps"] = concurrent_wraps(folder)
    c = res["concurrent_wraps"]
    c["threads_vs_sequential"] = round(c["threads_s"] / c["sequential_s"], 2)
    c["processes_vs_sequential"] = round(c["processes_s"] / c["sequential_s"], 2)
    res["concurrent_writers"] = concurrent_writers(folder)
    print(f"concurrent writers: {res['concurrent_writers']}", flush=True)
    res["loop_stall"] = loop_stall(folder)
    ls = res["loop_stall"]
    ls["ratio"] = round(ls["async_twins_max_gap_ms"] / ls["sync_inline_max_gap_ms"], 3)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "many_users.json").write_text(json.dumps(res, indent=2) + "\n", "utf-8")
    print(json.dumps({"ratios": res["ratios"], "concurrent_wraps": c, "loop_stall": ls,
                      "concurrent_writers": res["concurrent_writers"]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
