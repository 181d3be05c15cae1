"""Several processes against one store at once: nothing lost, one chain, one winner."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from typing import Any

import pytest
import workers

from anneal_memory import AuditTrail, Store

PROCS = 4


def run_all(fn: Callable[..., Any], location: str, *args: Any) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    start_at = time.time() + 3.0  # every process connected before any starts
    with ctx.Pool(PROCS) as pool:
        jobs = [pool.apply_async(fn, (location, w, *args, start_at)) for w in range(PROCS)]
        return [j.get(timeout=300) for j in jobs]


def verify(location: str, store: Store) -> Any:
    return AuditTrail.verify(location if location.startswith("postgres") else store.path)


@pytest.mark.slow
def test_concurrent_records_lose_nothing(location: str) -> None:
    Store(location).close()
    ids = run_all(workers.record_many, location, 25)
    flat = [i for chunk in ids for i in chunk]
    assert len(flat) == len(set(flat)) == PROCS * 25
    with Store(location) as store:
        assert store.status().total_episodes == PROCS * 25
        assert set(store.get_many(flat)) == set(flat)
        assert store.recall(keyword="worker 3 episode").total_matching == 25
        res = verify(location, store)
        assert res.valid and res.total_entries == PROCS * 25, res


@pytest.mark.slow
def test_racing_wraps_have_one_winner(location: str) -> None:
    with Store(location) as store:
        for i in range(6):
            store.record(f"episode {i} to wrap", "observation")
    results = run_all(workers.race_wrap, location)
    saved = [r for r in results if r["outcome"] == "saved"]
    assert len(saved) == 1, results
    assert saved[0]["compressed"] == 6
    assert all(r["outcome"] in ("saved", "lost", "empty") for r in results), results
    with Store(location) as store:
        st = store.status()
        assert st.total_wraps == 1 and st.episodes_since_wrap == 0 and not st.wrap_in_progress
        assert f"worker {saved[0]['worker']}" in (store.load_continuity() or "")
        assert verify(location, store).valid


@pytest.mark.slow
def test_racing_first_writes_have_one_winner(location: str) -> None:
    store_ids = run_all(workers.race_first_open, location)
    assert len(set(store_ids)) == 1, store_ids  # one store created, whoever came first
    with Store(location) as store:
        assert store.status().total_episodes == PROCS and verify(location, store).valid
    tokens = run_all(workers.race_prepare, location)
    opened = [t for t in tokens if t]
    assert len(opened) == 1, tokens  # one wrap opened; every other prepare was refused
    claims = run_all(workers.race_claim, location)
    assert sorted(claims) == ["claimed"] + ["refused"] * (PROCS - 1), claims
