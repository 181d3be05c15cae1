"""Record and recall on PostgreSQL beside SQLite, at 10k and 100k episodes.

    python bench/pg_bench.py [--sizes 10000,100000] [--dsn postgresql://...]

Without ``--dsn`` (or ``ANNEAL_TEST_PG_DSN``) a private server is started with
scripts/pg_server.py and stopped at the end; needs the ``postgres`` extra. For each size:
bulk load (one transaction), single durable records (each acknowledged on its own),
phrase recall and ranked word recall; prints times and the PostgreSQL/SQLite ratio.

    python bench/pg_bench.py --goals54 [--quick] [--dsn postgresql://...]

Issue 54 goal 6 (PostgreSQL hosts that scale), see ``goal6``: the statements and round
trips of one durable record (pg_stat_statements, a private server started with it
preloaded), how long each record holds the audit chain's lock (from the lock granted to
the commit returned) and waits for it, the client's and the server's CPU per record, and
records/s of 1 and 16 processes; from these, a model of the ceiling. Writes
``bench/results/goals54/postgres.json`` and ``postgres.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
WORDS = ("deploy cache schema migration latency budget review outage rollback token "
         "queue worker index vacuum replica failover quota alert metric trace span "
         "release branch feature flag canary shard tenant backup restore audit").split()
SINGLE = 300
QUERIES = 40


def _text(rng: random.Random, i: int) -> str:
    return f"episode {i}: " + " ".join(rng.choice(WORDS) for _ in range(12))


def _ms(seconds: list[float]) -> float:
    return 1000 * statistics.median(seconds)


def measure(location: str, n: int) -> dict[str, float]:
    from anneal_memory import Store

    rng = random.Random(n)
    out: dict[str, float] = {}
    with Store(location, audit=True) as s:
        t = time.perf_counter()
        with s.batch():
            for i in range(n):
                s.record(_text(rng, i), "observation")
        out["bulk_load_s"] = time.perf_counter() - t
        times = []
        for i in range(SINGLE):
            t = time.perf_counter()
            s.record(_text(rng, n + i), "observation")
            times.append(time.perf_counter() - t)
        out["record_ms"] = _ms(times)
        for kind, make in (("phrase_ms", lambda: f"{rng.choice(WORDS)} {rng.choice(WORDS)}"),
                           ("words_ms", lambda: f"{rng.choice(WORDS)}s and {rng.choice(WORDS)}ing")):
            times = []
            for _ in range(QUERIES):
                q = make()
                t = time.perf_counter()
                s.recall(keyword=q, limit=10)
                times.append(time.perf_counter() - t)
            out[kind] = _ms(times)
    return out


def _schema_dsn(dsn: str) -> tuple[str, str]:
    import psycopg

    schema = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in dsn else "?"
    return schema, f"{dsn}{sep}options={quote(f'-csearch_path={schema}')}"


def run(dsn: str, sizes: list[int]) -> list[dict[str, Any]]:
    import psycopg

    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            os.environ["ANNEAL_MEMORY_SIDECAR_DIR"] = d
            lite = measure(os.path.join(d, "bench.db"), n)
            schema, loc = _schema_dsn(dsn)
            try:
                pg = measure(loc, n)
            finally:
                with psycopg.connect(dsn, autocommit=True) as c:
                    c.execute(f"DROP SCHEMA {schema} CASCADE")
        rows.append({"n": n, "sqlite": lite, "postgres": pg})
    return rows


def show(rows: list[dict[str, Any]]) -> None:
    print(f"{'episodes':>9} {'metric':<12} {'sqlite':>10} {'postgres':>10} {'pg/sqlite':>10}")
    for r in rows:
        for key in ("bulk_load_s", "record_ms", "phrase_ms", "words_ms"):
            a, b = r["sqlite"][key], r["postgres"][key]
            print(f"{r['n']:>9} {key:<12} {a:>10.3f} {b:>10.3f} {b / a if a else float('inf'):>9.2f}x")


@contextlib.contextmanager
def server(dsn: str | None) -> Iterator[str]:
    """``dsn`` itself, or else a private server's DSN (started by scripts/pg_server.py
    and always stopped, its files removed)."""
    if dsn:
        yield dsn
        return
    sys.path.insert(0, str(REPO / "scripts"))
    import pg_server

    base = Path(tempfile.mkdtemp(prefix="anneal-pgbench-"))
    try:
        yield pg_server.start(base)
    finally:
        pg_server.stop(base)
        subprocess.run(["rm", "-rf", str(base)], check=False)


# ---------------------------------------------------------------- issue 54, goal 6
GOAL_RATIO = 4.0
#: processes of the scale-out figure (the issue's 16 against one)
PROCS = (1, 16)


def hold_model(t_record_ms: float, hold_ms: float, cpu_ms: float, cores: int,
               procs: int = 16) -> dict[str, float]:
    """The ceiling of ``procs`` writers from one writer's figures.

    Every record holds the chain's lock for ``hold_ms`` (the serial part: no two
    records can be inside it at once), so writers together never exceed
    ``1000 / hold_ms`` records/s, however many cores; and the machine's ``cores`` never
    run more than ``cores * 1000 / cpu_ms`` (client and server CPU per record). One
    writer makes ``1000 / t_record_ms``. Returns records/s for each bound and the
    ratio of ``procs`` writers to one where only the lock bounds (a machine with the
    cores) and where the cores bound too (this machine)."""
    if t_record_ms <= 0 or hold_ms <= 0 or cpu_ms <= 0 or cores < 1 or procs < 1:
        raise ValueError("times, cores and processes must be positive")
    one = 1000.0 / t_record_ms
    lock = 1000.0 / hold_ms
    cpu = cores * 1000.0 / cpu_ms
    with_cores = min(procs * one, lock)
    here = min(with_cores, cpu)
    return {"one_writer_per_s": one, "lock_bound_per_s": lock, "cpu_bound_per_s": cpu,
            "ratio_with_cores": with_cores / one, "ratio_here": here / one}


def statement_rows(rows: list[tuple[str, int, float]], records: int) -> list[dict[str, Any]]:
    """pg_stat_statements rows (query, calls, total ms) of a run of ``records`` records:
    those run at least once per record, with their calls and milliseconds per record."""
    out = []
    for query, calls, total in rows:
        if records and calls >= records:
            out.append({"statement": " ".join(str(query).split())[:160],
                        "per_record": calls / records, "ms_per_record": total / records})
    return sorted(out, key=lambda r: -r["per_record"])


@contextlib.contextmanager
def stats_server(dsn: str | None) -> Iterator[tuple[str, bool]]:
    """A server with pg_stat_statements loaded: a private one (restarted once with the
    library preloaded), or ``dsn`` when given (statements counted if it has the library)."""
    import psycopg

    if dsn:
        yield dsn, _stats_ready(dsn)
        return
    sys.path.insert(0, str(REPO / "scripts"))
    import pg_server

    base = Path(tempfile.mkdtemp(prefix="anneal-pggoal6-"))
    try:
        dsn = pg_server.start(base)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        pg_server.stop(base)
        dsn = pg_server.start(base)
        yield dsn, _stats_ready(dsn)
    finally:
        pg_server.stop(base)
        subprocess.run(["rm", "-rf", str(base)], check=False)


def _stats_ready(dsn: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            c.execute("SELECT pg_stat_statements_reset()")
        return True
    except psycopg.Error:
        return False


def _server_cpu_s() -> float | None:
    """CPU seconds of every ``postgres`` process on this machine (None off Linux)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name.startswith("postgres"):
            fields = stat[stat.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _instrument() -> dict[str, Any]:
    """Time, in this process, each record's hold of the chain's lock (from the lock
    granted, the audit tip's read returning, to the commit returned) and its wait for it,
    and count the round trips to the server (each ``execute`` of a connection)."""
    import threading

    import psycopg

    from anneal_memory.storage import postgres as pg

    got: dict[str, Any] = {"hold": [], "wait": [], "commit": [], "trips": 0}
    local = threading.local()
    tip, tx = pg.PostgresBackend._locked_tip, pg.PostgresBackend.transaction

    def locked_tip(self: Any) -> Any:
        # a record takes the chain's lock with its first audit append, where it reads
        # the tip in the same round trip (None: no lock taken here)
        t0 = time.perf_counter()
        out = tip(self)
        if out is not None:
            local.locked_at = time.perf_counter()
            got["wait"].append(local.locked_at - t0)
        return out

    @contextlib.contextmanager
    def transaction(self: Any, **kw: Any) -> Iterator[None]:
        with tx(self, **kw):
            yield
        at = getattr(local, "locked_at", None)
        if at is not None and not self.in_transaction:
            got["hold"].append(time.perf_counter() - at)
            local.locked_at = None

    execute, many = psycopg.Connection.execute, psycopg.Cursor.executemany

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        got["trips"] += 1
        if not (a and a[0] == "COMMIT" and getattr(local, "locked_at", None) is not None):
            return execute(self, *a, **k)
        t0 = time.perf_counter()  # the commit inside the lock: its WAL flush
        try:
            return execute(self, *a, **k)
        finally:
            got["commit"].append(time.perf_counter() - t0)

    def counted_many(self: Any, *a: Any, **k: Any) -> Any:
        got["trips"] += 1
        return many(self, *a, **k)

    pg.PostgresBackend._locked_tip = locked_tip  # type: ignore[method-assign]
    pg.PostgresBackend.transaction = transaction  # type: ignore[method-assign]
    psycopg.Connection.execute = counted  # type: ignore[method-assign]
    psycopg.Cursor.executemany = counted_many  # type: ignore[method-assign]
    return got


def _writer(location: str, cid: int, conn: Any) -> None:
    """One writer process: on each (start, seconds) it records until the time is up."""
    from anneal_memory import Store

    got = _instrument()
    rng = random.Random(cid)
    with Store(location) as s:
        for i in range(5):
            s.record(f"writer {cid} warm up {i}", "observation")
        conn.send("ready")
        while (msg := conn.recv()) is not None:
            start, seconds = msg
            for k in ("hold", "wait", "commit"):
                got[k].clear()
            got["trips"] = 0
            time.sleep(max(0.0, start - time.time()))
            n, cpu, t0 = 0, time.process_time(), time.perf_counter()
            lat = []
            while time.perf_counter() - t0 < seconds:
                a = time.perf_counter()
                s.record(f"writer {cid} " + _text(rng, n), "observation")
                lat.append(time.perf_counter() - a)
                n += 1
            conn.send({"records": n, "elapsed": time.perf_counter() - t0,
                       "cpu_s": time.process_time() - cpu, "record_s": lat,
                       "hold_s": list(got["hold"]), "wait_s": list(got["wait"]),
                       "commit_s": list(got["commit"]),
                       "trips": got["trips"]})


def _slices(location: str, seconds: float, rounds: int) -> dict[int, list[dict[str, Any]]]:
    """records/s, holds and waits of 1 and 16 writer processes, interleaved in rounds."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    most = max(PROCS)
    pipes, procs = [], []
    for cid in range(most):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_writer, args=(location, cid, child), daemon=True)
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    try:
        for p in pipes:
            if not p.poll(120):
                raise RuntimeError("a writer process did not start")
            p.recv()
        out: dict[int, list[dict[str, Any]]] = {n: [] for n in PROCS}
        for _ in range(rounds):
            for n in PROCS:
                cpu0 = _server_cpu_s()
                start = time.time() + 0.3
                for p in pipes[:n]:
                    p.send((start, seconds))
                res = [p.recv() for p in pipes[:n]]
                cpu1 = _server_cpu_s()
                records = sum(r["records"] for r in res)
                holds = [x for r in res for x in r["hold_s"]]
                waits = [x for r in res for x in r["wait_s"]]
                commits = [x for r in res for x in r["commit_s"]]
                lat = [x for r in res for x in r["record_s"]]
                fig = {"records_per_s": sum(r["records"] / r["elapsed"] for r in res),
                       "records": records,
                       "record_ms_median": 1000 * statistics.median(lat),
                       "hold_ms_median": 1000 * statistics.median(holds),
                       "hold_ms_mean": 1000 * statistics.fmean(holds),
                       "wait_ms_median": 1000 * statistics.median(waits),
                       "commit_ms_median": 1000 * statistics.median(commits),
                       "client_cpu_ms_per_record": 1000 * sum(r["cpu_s"] for r in res) / records,
                       "round_trips_per_record": sum(r["trips"] for r in res) / records}
                if cpu0 is not None and cpu1 is not None:
                    fig["server_cpu_ms_per_record"] = 1000 * (cpu1 - cpu0) / records
                out[n].append(fig)
                print(f"  {n:>2} processes: {fig['records_per_s']:,.0f} records/s, hold "
                      f"{fig['hold_ms_median']:.2f} ms, wait {fig['wait_ms_median']:.2f} ms",
                      flush=True)
        return out
    finally:
        for p in pipes:
            with contextlib.suppress(Exception):
                p.send(None)
        for proc in procs:
            proc.join(10)


def _statements(location: str, dsn: str, records: int) -> list[dict[str, Any]]:
    """pg_stat_statements over ``records`` durable records of one Store."""
    import psycopg

    from anneal_memory import Store

    with Store(location) as s:
        s.record("warm up", "observation")
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("SELECT pg_stat_statements_reset()")
        rng = random.Random(6)
        for i in range(records):
            s.record(_text(rng, i), "observation")
        with psycopg.connect(dsn, autocommit=True) as c:
            rows = c.execute("SELECT query, calls, total_exec_time FROM pg_stat_statements "
                             "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = "
                             "current_database())").fetchall()
    return statement_rows([(q, int(n), float(t)) for q, n, t in rows], records)


def goal6(args: argparse.Namespace) -> int:
    """Issue 54 goal 6's figures and model; writes the contract's JSON and table."""
    import json

    import psycopg

    seconds, rounds, records = (2.0, 2, 200) if args.quick else (4.0, 3, 1000)
    with stats_server(args.dsn) as (dsn, stats):
        schema, loc = _schema_dsn(dsn)
        try:
            print("PostgreSQL, per-record statements:", flush=True)
            statements = _statements(loc, dsn, records) if stats else []
            print("PostgreSQL, 1 and 16 writer processes:", flush=True)
            slices = _slices(loc, seconds, rounds)
            with psycopg.connect(dsn, autocommit=True) as c:
                version = c.execute("SHOW server_version").fetchone()[0]
        finally:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute(f"DROP SCHEMA {schema} CASCADE")
    res = goal6_result(slices, statements, version, seconds, rounds, records)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "postgres.json").write_text(json.dumps(res, indent=2) + "\n")
    (out / "postgres.md").write_text(goal6_markdown(res))
    print(goal6_markdown(res))
    return 0


def _med(figs: list[dict[str, Any]], key: str) -> float | None:
    vals = [f[key] for f in figs if f.get(key) is not None]
    return statistics.median(vals) if vals else None


def goal6_result(slices: dict[int, list[dict[str, Any]]], statements: list[dict[str, Any]],
                 version: str, seconds: float, rounds: int, records: int) -> dict[str, Any]:
    """The contract's JSON: the measured figures, the model and the verdict."""
    import datetime as dt
    import platform
    import sqlite3

    one, many = slices[min(PROCS)], slices[max(PROCS)]
    # one writer's time per record, from its measured rate (records over the slice)
    t_one = 1000.0 / statistics.median(o["records_per_s"] for o in one)
    ratios = [m["records_per_s"] / o["records_per_s"] for o, m in zip(one, many)]
    ratio = statistics.median(ratios)
    cores = os.cpu_count() or 1
    cpu = (_med(one, "client_cpu_ms_per_record") or 0) + (_med(one, "server_cpu_ms_per_record") or 0)
    model = hold_model(t_one, _med(many, "hold_ms_median") or 0,
                       cpu, cores, max(PROCS))
    model_one_hold = hold_model(t_one,
                                _med(one, "hold_ms_median") or 0, cpu, cores, max(PROCS))
    # were the commit's WAL flush outside the lock (the lock released at the commit,
    # the acknowledgement after the flush), the lock would cover the hold less the commit
    hold, commit = _med(many, "hold_ms_median") or 0, _med(many, "commit_ms_median") or 0
    model_no_flush = hold_model(t_one,
                                max(hold - commit, 0.01), cpu, cores, max(PROCS))
    # one writer alone holds the lock without waiting for a core: what a machine with
    # the cores would see of the hold
    hold1, commit1 = _med(one, "hold_ms_median") or 0, _med(one, "commit_ms_median") or 0
    model_no_flush_alone = hold_model(t_one,
                                      max(hold1 - commit1, 0.01), cpu, cores, max(PROCS))
    per_record = sum(s["per_record"] for s in statements)
    met = ratio >= GOAL_RATIO
    bound = (f"on {cores} cores the {max(PROCS)} writers and the server share the CPU: "
             f"{cpu:.2f} ms of CPU per record (client + server) caps this machine at "
             f"{model['cpu_bound_per_s']:,.0f} records/s; the chain's lock, held "
             f"{_med(many, 'hold_ms_median'):.2f} ms per record under load "
             f"({_med(one, 'hold_ms_median'):.2f} ms alone: the commit's WAL flush is "
             f"inside it), caps any machine at {model['lock_bound_per_s']:,.0f} records/s, "
             f"{model['ratio_with_cores']:.1f}x one writer's "
             f"{model['one_writer_per_s']:,.0f}/s; the commit alone is "
             f"{commit:.2f} ms of the hold: with the flush outside the lock the same "
             f"figures give {model_no_flush['ratio_with_cores']:.1f}x "
             f"({model_no_flush_alone['ratio_with_cores']:.1f}x from one writer's "
             f"uncontended hold, {hold1:.2f} ms of which the commit is {commit1:.2f})")
    return {
        "area": "postgres",
        "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"nproc {cores}, python {platform.python_version()}, sqlite "
                   f"{sqlite3.sqlite_version}, postgresql {version}",
        "goals": [{
            "goal": "PostgreSQL: records/s of 16 processes >= 4x one process",
            "figure": f"{statistics.median(m['records_per_s'] for m in many):,.0f} against "
                      f"{statistics.median(o['records_per_s'] for o in one):,.0f} records/s: "
                      f"{ratio:.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f}x) on this "
                      f"{cores}-core machine; the lock-hold model gives "
                      f"{model['ratio_with_cores']:.1f}x on a machine with the cores",
            "target": ">= 4x (on a machine with the cores)",
            "verdict": "met" if met else "missed",
            "bound": "" if met else bound}],
        "figures": {"seconds_per_slice": seconds, "rounds": rounds, "slices": slices,
                    "ratio_16_to_1": ratios, "statements_run_of": records,
                    "statements_per_record": per_record, "statements": statements,
                    "round_trips_per_record": _med(one, "round_trips_per_record"),
                    "model_hold_under_load": model, "model_hold_alone": model_one_hold,
                    "model_flush_outside_lock": model_no_flush,
                    "model_flush_outside_lock_hold_alone": model_no_flush_alone},
    }


def goal6_markdown(res: dict[str, Any]) -> str:
    f = res["figures"]
    g = res["goals"][0]
    lines = [f"# Issue 54 goal 6: PostgreSQL hosts that scale ({res['measured_at']})", "",
             f"Machine: {res['machine']}. The 2 cores are shared by the writers "
             "and the server itself (and whatever else ran): each ratio is taken inside one "
             "round.", "", "| goal | figure | target | verdict |", "|---|---|---|---|",
             f"| {g['goal']} | {g['figure']} | {g['target']} | {g['verdict']} |", ""]
    if g["bound"]:
        lines += [f"What bounds it (measured): {g['bound']}.", ""]
    lines += [f"One durable record: {f['statements_per_record']:.1f} statements besides "
              f"BEGIN and COMMIT (pg_stat_statements over {f['statements_run_of']} records; "
              "the lock and the tip's read are two statements of one round trip), "
              f"{f['round_trips_per_record'] or 0:.1f} round trips:", "",
              "| statement | per record | server ms per record |", "|---|---:|---:|"]
    for s in f["statements"]:
        lines.append(f"| `{s['statement'][:110]}` | {s['per_record']:.2f} | "
                     f"{s['ms_per_record']:.3f} |")
    lines += ["", "| processes | records/s | record p50 ms | lock hold ms (median) | commit "
              "ms, in the hold (median) | lock wait ms (median) | client CPU ms/record | "
              "server CPU ms/record |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, figs in f["slices"].items():
        for fig in figs:
            lines.append(f"| {n} | {fig['records_per_s']:,.0f} | {fig['record_ms_median']:.2f} | "
                         f"{fig['hold_ms_median']:.2f} | {fig['commit_ms_median']:.2f} | "
                         f"{fig['wait_ms_median']:.2f} | "
                         f"{fig['client_cpu_ms_per_record']:.2f} | "
                         f"{fig.get('server_cpu_ms_per_record', float('nan')):.2f} |")
    m = f["model_hold_under_load"]
    lines += ["", "Model: a record holds the chain's lock from its grant to the commit's "
              "return (the commit's WAL flush inside), so writers together make at most "
              "1000 / hold records/s; the cores make at most cores x 1000 / (client + "
              f"server CPU per record). One writer: {m['one_writer_per_s']:,.0f}/s; lock "
              f"bound {m['lock_bound_per_s']:,.0f}/s; CPU bound here "
              f"{m['cpu_bound_per_s']:,.0f}/s. 16 writers against one: "
              f"{m['ratio_with_cores']:.1f}x with the cores, {m['ratio_here']:.1f}x here. "
              "Were the commit's WAL flush outside the lock (the lock released when the "
              "commit record is written, the caller acknowledged after the flush, which "
              "PostgreSQL then shares between waiting commits), the lock would cover the "
              "hold less the commit: "
              f"{f['model_flush_outside_lock']['lock_bound_per_s']:,.0f}/s, "
              f"{f['model_flush_outside_lock']['ratio_with_cores']:.1f}x with the cores "
              "(from one writer's uncontended hold: "
              f"{f['model_flush_outside_lock_hold_alone']['lock_bound_per_s']:,.0f}/s, "
              f"{f['model_flush_outside_lock_hold_alone']['ratio_with_cores']:.1f}x)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--dsn", default=os.environ.get("ANNEAL_TEST_PG_DSN"))
    p.add_argument("--goals54", action="store_true",
                   help="issue 54 goal 6: per-record statements, lock hold, 1 vs 16 processes")
    p.add_argument("--quick", action="store_true", help="with --goals54: shorter slices")
    p.add_argument("--out-dir", default=str(REPO / "bench" / "results" / "goals54"))
    args = p.parse_args(argv)
    if args.goals54:
        return goal6(args)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    with server(args.dsn) as dsn:
        show(run(dsn, sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
