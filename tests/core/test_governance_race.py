"""Racing first writes: exactly one winner, across threads and across processes.

The serialisation comes from the database transaction (BEGIN IMMEDIATE), not from an
in-process lock, so the same guarantee holds for separate processes on one file.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.governance import (
    Authority,
    MemoryCandidate,
    MemoryNamespace,
    MemoryRuntime,
    SourceRef,
)

NS = MemoryNamespace(tenant="acme", user="alice", agent="coder")
T0 = datetime(2026, 8, 1, 9, 0, tzinfo=timezone.utc)
LANGS = ["Python", "TypeScript", "Go", "Rust", "Kotlin", "Ruby"]


def _candidate(i: int) -> MemoryCandidate:
    return MemoryCandidate(f"writer-{i}", NS, "semantic", "preferred_language",
                           f"Prefer {LANGS[i]} for code examples",
                           SourceRef(f"device-{i}#m1", "user_message"))


def _first_write(db: str, i: int, barrier, via_ledger: bool) -> tuple[str, str]:
    store = Store(db)
    try:
        rt = MemoryRuntime(store, clock=lambda: T0)
        c = _candidate(i)
        barrier.wait(timeout=60)
        if via_ledger:
            res = rt.ledger.commit(c, Authority.USER_EXPLICIT, created_at=rt.now(),
                                   expected_record_id=None, first=True)
        else:
            res = rt.write(c)
        return res.outcome, res.reason
    finally:
        store.close()


def _process_worker(db: str, i: int, barrier, via_ledger: bool, out) -> None:
    out.put((i, *_first_write(db, i, barrier, via_ledger)))


def _check_one_winner(db: Path, results: list[tuple[str, str]], strict: bool) -> None:
    outcomes = [o for o, _r in results]
    assert outcomes.count("written") == 1, results
    losers = [r for o, r in results if o != "written"]
    if strict:  # every loser reached the ledger, so the ledger's reason is the answer
        assert set(losers) == {"memory_id_conflict"}, results
    else:  # a loser that read after the commit is stopped by the gate instead
        assert set(losers) <= {"memory_id_conflict", "conflict_requires_correction"}, results
    with Store(db) as s:
        rt = MemoryRuntime(s)
        versions = rt.versions(NS, "semantic", "preferred_language")
        assert [v.version for v in versions] == [1]
        assert rt.current(NS, "semantic", "preferred_language") == versions[0]


def _touch_schema(db: Path) -> None:
    with Store(db) as s:
        MemoryRuntime(s)


@pytest.mark.parametrize("via_ledger", [True, False])
def test_threads_racing_first_writes_have_one_winner(db: Path, via_ledger: bool) -> None:
    _touch_schema(db)
    n = 4
    barrier = threading.Barrier(n)
    results: list[tuple[str, str]] = [("", "")] * n

    def run(i: int) -> None:
        results[i] = _first_write(str(db), i, barrier, via_ledger)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    _check_one_winner(db, results, strict=via_ledger)


@pytest.mark.slow
@pytest.mark.parametrize("via_ledger", [True, False])
def test_processes_racing_first_writes_have_one_winner(db: Path, via_ledger: bool) -> None:
    _touch_schema(db)
    ctx = mp.get_context("spawn")
    n = 4
    barrier = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(str(db), i, barrier, via_ledger, out))
             for i in range(n)]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in range(n)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    _check_one_winner(db, [(o, r) for _i, o, r in sorted(got)], strict=via_ledger)


def test_stale_correctors_racing_one_winner(db: Path) -> None:
    with Store(db) as s:
        v1 = MemoryRuntime(s, clock=lambda: T0).write(_candidate(0)).record
    n = 4
    barrier = threading.Barrier(n)
    results: list[str] = [""] * n

    def run(i: int) -> None:
        store = Store(db)
        try:
            rt = MemoryRuntime(store, clock=lambda: T0)
            c = MemoryCandidate(f"fix-{i}", NS, "semantic", "preferred_language",
                                f"Prefer {LANGS[i + 1]} for code examples",
                                SourceRef(f"fix-{i}", "user_message"))
            barrier.wait(timeout=60)
            results[i] = rt.correct(c, expected_record_id=v1.record_id).reason
        finally:
            store.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert results.count("accepted") == 1, results
    assert set(results) - {"accepted"} == {"stale_expected_record"}
    with Store(db) as s:
        assert [v.version for v in MemoryRuntime(s).versions(NS, "semantic",
                                                             "preferred_language")] == [1, 2]
