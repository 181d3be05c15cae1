"""What more clients buy: PostgreSQL scale-out, and SQLite writers across processes.

    python bench/scale_out.py [--dsn URL] [--clients 1,4,16] [--sqlite-procs 1,2,4]
                              [--seconds 2] [--rounds 3] [--sqlite-rounds 5] [--out DIR]

PostgreSQL (a private server started by scripts/pg_server.py unless ``--dsn`` or
``ANNEAL_TEST_PG_DSN`` names one): 1, 4 and 16 clients on one server, each client one
Store as separate hosts would have it, in three layouts:

- ``processes``: one process per client, one Store each;
- ``threads``: one thread per client, one Store each;
- ``shared``: one thread per client, all on one Store (its group commit batches them).

Two phases per client count: ``write`` (every client makes durable single ``record()``
calls, each acknowledged on its own) and ``mixed`` (every client follows each record with
one keyword recall, a two-word phrase and ranked words in turn, so each client's recalls
run while the other clients write).

SQLite: 1, 2 and 4 processes on one file, each with its own Store, making durable single
``record()`` calls (the issue's goal: the aggregate never falls below one process's).

Client counts are interleaved in rounds (1, 4, 16, 1, 4, 16, ...) with every client kept
open between them, so a noisy neighbour on a shared machine hits every count alike. Each
figure is the median over rounds of its ratio to the same round's 1-client figure.
Writes ``scale_out.json`` and ``scale_out.md`` to ``--out`` (bench/results).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import pg_bench  # noqa: E402
from workload import percentile  # noqa: E402

PREFILL = 2000
LAYOUTS = ("processes", "threads", "shared")
PHASES = ("write", "mixed")
START_DELAY = {"threads": 0.05, "processes": 0.2}  # time to hand out the start signal
#: the figures of one slice, as the tables name them
FIGURES = {
    "records_per_s": "records/s, all clients",
    "per_client_records_per_s": "records/s per client",
    "slowest_client_share": "slowest / fastest client",
    "record_p95_ms": "record() p95",
    "record_max_ms": "record() max",
    "cpu_ms_per_record": "client CPU per record",
    "phrase_p95_ms": "phrase recall p95",
    "words_p95_ms": "ranked-words recall p95",
    "recalls_per_s": "recalls/s, all clients",
}


# ---------------------------------------------------------------- arithmetic (tested)
def ratio(value: float | None, base: float | None) -> float | None:
    """``value / base``, or None when either is missing or the base is zero."""
    if value is None or not base:
        return None
    return value / base


def slice_summary(results: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The figures of one timed slice from its clients' raw results.

    Each result holds ``elapsed`` (seconds from the common start to its last
    completed call), the per-call latencies in seconds: ``record_s``, and in the
    mixed phase ``phrase_s`` and ``words_s``, and optionally ``cpu_s``, the CPU time of
    the client's own thread. A client's rate is its records over its own elapsed time;
    the aggregate is the sum of the clients' rates.
    """
    if not results:
        raise ValueError("a slice needs at least one client")
    rates = [len(r["record_s"]) / r["elapsed"] for r in results]
    records = [x for r in results for x in r["record_s"]]
    if not records:
        raise ValueError("no record() call completed in the slice: raise --seconds")
    out = {
        "clients": float(len(results)),
        "records_per_s": sum(rates),
        "per_client_records_per_s": sum(rates) / len(rates),
        "slowest_client_share": min(rates) / max(rates) if max(rates) else 0.0,
        "record_p95_ms": percentile(records, 95) * 1e3,
        "record_max_ms": max(records) * 1e3,
    }
    if all("cpu_s" in r for r in results):
        out["cpu_ms_per_record"] = sum(r["cpu_s"] for r in results) / len(records) * 1e3
    phrase = [x for r in results for x in r.get("phrase_s", ())]
    words = [x for r in results for x in r.get("words_s", ())]
    if phrase and words:
        out["phrase_p95_ms"] = percentile(phrase, 95) * 1e3
        out["words_p95_ms"] = percentile(words, 95) * 1e3
        out["recalls_per_s"] = sum((len(r.get("phrase_s", ())) + len(r.get("words_s", ())))
                                   / r["elapsed"] for r in results)
    return out


def combine(rounds: Sequence[dict[int, dict[str, float]]], base: int = 1
            ) -> dict[int, dict[str, dict[str, Any]]]:
    """Per client count and figure: the median over rounds of the figure, and of its
    ratio to the same round's ``base``-client figure (with the ratios' min and max)."""
    if not rounds:
        raise ValueError("no rounds to combine")
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for count in rounds[0]:
        figures: dict[str, dict[str, Any]] = {}
        for key in rounds[0][count]:
            if key == "clients":
                continue
            values = [r[count][key] for r in rounds if key in r[count]]
            ratios = [x for x in (ratio(r[count].get(key), r[base].get(key)) for r in rounds)
                      if x is not None]
            figures[key] = {
                "median": statistics.median(values),
                "ratio": statistics.median(ratios) if ratios else None,
                "ratio_min": min(ratios) if ratios else None,
                "ratio_max": max(ratios) if ratios else None,
            }
        out[count] = figures
    return out


# ---------------------------------------------------------------- clients
class Client:
    """One client: a Store (its own, or one shared with other clients) and the loops a
    timed slice runs on it."""

    def __init__(self, store: Any, cid: int) -> None:
        self.store, self.cid, self.n = store, cid, 0
        self.rng = random.Random(cid)

    def run(self, phase: str, start: float, seconds: float) -> dict[str, Any]:
        """Record from ``start`` for ``seconds``; in the mixed phase each record is
        followed by one recall, a two-word phrase and ranked words in turn, as a host
        serving one request after another would."""
        out: dict[str, Any] = {"record_s": [], "phrase_s": [], "words_s": []}
        end = start + seconds
        time.sleep(max(0.0, start - time.monotonic()))
        words, turn, cpu = pg_bench.WORDS, 0, time.thread_time()
        while time.monotonic() < end:
            text = f"client {self.cid} " + pg_bench._text(self.rng, self.n)
            self.n += 1
            t0 = time.perf_counter()
            self.store.record(text, "observation")
            out["record_s"].append(time.perf_counter() - t0)
            if phase != "mixed":
                continue
            a, b = self.rng.choice(words), self.rng.choice(words)
            key, query = ("phrase_s", f"{a} {b}") if turn % 2 == 0 else \
                ("words_s", f"{a}s and {b}ing")
            turn += 1
            t0 = time.perf_counter()
            self.store.recall(keyword=query, limit=10)
            out[key].append(time.perf_counter() - t0)
        out["elapsed"] = time.monotonic() - start
        out["cpu_s"] = time.thread_time() - cpu
        return out


def _process_main(location: str, cid: int, conn: Any) -> None:
    from anneal_memory import Store

    with Store(location) as store:
        client = Client(store, cid)
        conn.send("ready")
        while (msg := conn.recv()) is not None:
            conn.send(client.run(*msg))


Pool = Callable[[int, str, float], list[dict[str, Any]]]


@contextmanager
def clients(layout: str, location: str, most: int) -> Iterator[Pool]:
    """``most`` open clients in ``layout``; yields ``run(count, phase, seconds)``, which
    runs one slice on the first ``count`` of them at once and returns their results."""
    from anneal_memory import Store

    if layout == "processes":
        ctx = multiprocessing.get_context("spawn")
        pipes, procs = [], []
        for cid in range(most):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_process_main, args=(location, cid, child), daemon=True)
            proc.start()
            pipes.append(parent)
            procs.append(proc)

        def recv(pipe: Any, timeout: float) -> Any:
            if not pipe.poll(timeout):
                raise RuntimeError("a client process did not answer in time")
            return pipe.recv()

        try:
            for pipe in pipes:
                if recv(pipe, 120) != "ready":
                    raise RuntimeError("a client process failed to open its store")

            def run_procs(count: int, phase: str, seconds: float) -> list[dict[str, Any]]:
                start = time.monotonic() + START_DELAY["processes"]
                for pipe in pipes[:count]:
                    pipe.send((phase, start, seconds))
                return [recv(pipe, seconds + 120) for pipe in pipes[:count]]

            yield run_procs
        finally:
            for pipe in pipes:
                try:
                    pipe.send(None)
                except OSError:
                    pass
            for proc in procs:
                proc.join(30)
                if proc.is_alive():
                    proc.terminate()
        return
    shared = Store(location) if layout == "shared" else None
    stores = [shared] if shared is not None else [Store(location) for _ in range(most)]
    pool = [Client(stores[0] if shared is not None else stores[cid], cid) for cid in range(most)]
    try:
        def run_threads(count: int, phase: str, seconds: float) -> list[dict[str, Any]]:
            start = time.monotonic() + START_DELAY["threads"]
            results: list[Any] = [None] * count
            errors: list[BaseException] = []

            def one(i: int) -> None:
                try:
                    results[i] = pool[i].run(phase, start, seconds)
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
            return results

        yield run_threads
    finally:
        for s in stores:
            s.close()


def prefill(location: str, n: int = PREFILL) -> None:
    """``n`` episodes in one batch, so recall searches a store of a known size."""
    from anneal_memory import Store

    rng = random.Random(n)
    with Store(location) as s:
        s.record_many({"content": pg_bench._text(rng, i), "episode_type": "observation"}
                      for i in range(n))


def measure(layout: str, location: str, counts: Sequence[int], phases: Sequence[str],
            seconds: float, rounds: int) -> dict[str, Any]:
    """Rounds of slices over ``counts`` x ``phases``, combined per phase."""
    raw: dict[str, list[dict[int, dict[str, float]]]] = {p: [] for p in phases}
    with clients(layout, location, max(counts)) as run:
        for r in range(rounds):
            for phase in phases:
                raw[phase].append({})
            for count in counts:
                for phase in phases:
                    summary = slice_summary(run(count, phase, seconds))
                    raw[phase][r][count] = summary
                    print(f"  {layout:<9} round {r + 1} {phase:<5} {count:>2} clients: "
                          f"{summary['records_per_s']:7.0f} records/s", flush=True)
    return {phase: {"rounds": raw[phase], "combined": combine(raw[phase], base=min(counts))}
            for phase in phases}


# ---------------------------------------------------------------- the two backends
def run_postgres(dsn: str, counts: Sequence[int], seconds: float, rounds: int
                 ) -> dict[str, Any]:
    import psycopg

    out: dict[str, Any] = {}
    for layout in LAYOUTS:
        schema, location = pg_bench._schema_dsn(dsn)
        try:
            prefill(location)
            out[layout] = measure(layout, location, counts, PHASES, seconds, rounds)
        finally:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute(f"DROP SCHEMA {schema} CASCADE")
    return out


def run_sqlite(folder: Path, counts: Sequence[int], seconds: float, rounds: int
               ) -> dict[str, Any]:
    path = str(folder / "shared.db")
    prefill(path)
    return measure("processes", path, counts, ("write",), seconds, rounds)


# ---------------------------------------------------------------- report
def _cell(fig: dict[str, Any] | None, unit: str) -> str:
    if fig is None or fig["ratio"] is None:
        return "-"
    value = fig["median"]
    shown = f"{value:.0f}" if unit != " ms" else f"{value:.2f}" if value < 10 else f"{value:.1f}"
    return f"{fig['ratio']:.2f}x ({shown}{unit})"


UNITS = {"records_per_s": "/s", "per_client_records_per_s": "/s", "recalls_per_s": "/s",
         "slowest_client_share": "", "record_p95_ms": " ms", "cpu_ms_per_record": " ms", "record_max_ms": " ms",
         "phrase_p95_ms": " ms", "words_p95_ms": " ms"}


def _table(title: str, combined: dict[int, dict[str, dict[str, Any]]], keys: Sequence[str],
           label: str) -> list[str]:
    lines = [f"| {title} | {label} | " + " | ".join(FIGURES[k] for k in keys) + " |",
             "|---|---:|" + "---:|" * len(keys)]
    for count, figs in combined.items():
        cells = []
        for k in keys:
            f = figs.get(k)
            if k == "slowest_client_share" and f is not None:
                cells.append(f"{f['median']:.2f}")
            else:
                cells.append(_cell(f, UNITS[k]))
        lines.append(f"| | {count} | " + " | ".join(cells) + " |")
    return lines


def verdict(sqlite: dict[str, Any]) -> str:
    """Whether the median cross-process aggregate holds one process's rate."""
    combined = sqlite["write"]["combined"]
    parts, held = [], True
    for count, figs in combined.items():
        if count == min(combined):
            continue
        r = figs["records_per_s"]
        held = held and r["ratio"] >= 1.0
        parts.append(f"{count} processes {r['ratio']:.2f}x "
                     f"(rounds {r['ratio_min']:.2f}-{r['ratio_max']:.2f})")
    return ("holds" if held else "falls below one process") + ": " + ", ".join(parts)


def markdown(res: dict[str, Any]) -> str:
    m = res["meta"]
    lines = [
        "# Scale-out: what more clients buy",
        "",
        f"`python bench/scale_out.py` on {m['cpus']} CPUs ({m['platform']}), "
        f"{m['seconds']} s per slice, client counts interleaved over {m['rounds']} rounds "
        f"(SQLite {m['sqlite_rounds']}); a store prefilled with {m['prefill']} episodes. "
        "Every figure is the median over rounds of its ratio to the same round's 1-client "
        "figure, with the median absolute value in brackets. Records are durable single "
        "`record()` calls, each acknowledged on its own; recall is `recall(keyword=q, "
        "limit=10)`, a two-word phrase and ranked words in turn, one after each record in "
        "the mixed phase, so a client's recalls run while the other clients write. "
        "Clients, their server and the machine's other work share the same CPUs here: "
        "separate hosts would not share the client side. Both backends serialize writers "
        "(PostgreSQL: one advisory lock per write transaction, which a plain record takes "
        "at its audit append; SQLite: the file's write lock), and a Store runs one transaction at a time, so what more clients buy is "
        "the overlap of everything outside the write lock (and group commit's shared "
        "commits, for threads on one Store).",
        "",
    ]
    if "postgres" in res:
        for phase, what in (("write", "writers only"),
                            ("mixed", "each client recalls after each record")):
            lines += [f"## PostgreSQL, one server: {what}", ""]
            keys = ["records_per_s", "per_client_records_per_s", "slowest_client_share",
                    "record_p95_ms"]
            if phase == "write":
                keys.append("cpu_ms_per_record")
            else:
                keys += ["phrase_p95_ms", "words_p95_ms", "recalls_per_s"]
            for layout in LAYOUTS:
                lines += _table(layout, res["postgres"][layout][phase]["combined"], keys,
                                "clients")
                lines.append("")
    if "sqlite" in res:
        lines += ["## SQLite, one file, one Store per process", "",
                  f"Aggregate against one process: {verdict(res['sqlite'])}.", ""]
        lines += _table("one file", res["sqlite"]["write"]["combined"],
                        ["records_per_s", "per_client_records_per_s", "slowest_client_share",
                         "record_p95_ms", "record_max_ms", "cpu_ms_per_record"], "processes")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dsn", default=os.environ.get("ANNEAL_TEST_PG_DSN"))
    p.add_argument("--clients", default="1,4,16")
    p.add_argument("--sqlite-procs", default="1,2,4")
    p.add_argument("--seconds", type=float, default=2.0, help="length of one timed slice")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sqlite-rounds", type=int, default=5)
    p.add_argument("--only", choices=("postgres", "sqlite"))
    p.add_argument("--out", default=str(BENCH / "results"))
    args = p.parse_args(argv)
    counts = sorted({int(x) for x in args.clients.split(",") if x})
    procs = sorted({int(x) for x in args.sqlite_procs.split(",") if x})
    res: dict[str, Any] = {"meta": {
        "cpus": os.cpu_count(), "platform": platform.platform(), "seconds": args.seconds,
        "rounds": args.rounds, "sqlite_rounds": args.sqlite_rounds, "prefill": PREFILL,
        "clients": counts, "sqlite_processes": procs}}
    with tempfile.TemporaryDirectory(prefix="anneal-scale-out-") as d:
        os.environ["ANNEAL_MEMORY_SIDECAR_DIR"] = d
        if args.only != "postgres":
            print("SQLite, one file, processes:", flush=True)
            res["sqlite"] = run_sqlite(Path(d), procs, args.seconds, args.sqlite_rounds)
        if args.only != "sqlite":
            with pg_bench.server(args.dsn) as dsn:
                print("PostgreSQL, one server:", flush=True)
                res["postgres"] = run_postgres(dsn, counts, args.seconds, args.rounds)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale_out.json").write_text(json.dumps(res, indent=2) + "\n", "utf-8")
    text = markdown(res)
    (out / "scale_out.md").write_text(text, "utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
