"""Record and recall on PostgreSQL beside SQLite, at 10k and 100k episodes.

    python bench/pg_bench.py [--sizes 10000,100000] [--dsn postgresql://...]

Without ``--dsn`` (or ``ANNEAL_TEST_PG_DSN``) a private server is started with
scripts/pg_server.py and stopped at the end; needs the ``postgres`` extra. For each size:
bulk load (one transaction), single durable records (each acknowledged on its own),
phrase recall and ranked word recall; prints times and the PostgreSQL/SQLite ratio.
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--dsn", default=os.environ.get("ANNEAL_TEST_PG_DSN"))
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    with server(args.dsn) as dsn:
        show(run(dsn, sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
