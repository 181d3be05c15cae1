"""Governed writes racing from several processes (hosts): exactly one winner.

On PostgreSQL the serialisation is the backend's advisory write lock, taken by every
write transaction before its first statement, so the check-then-insert of the ledger
sees every earlier commit, whichever host made it.
"""

from __future__ import annotations

import gov_workers
import pytest
from test_concurrency import PROCS, run_all, verify

from anneal_memory import Store
from anneal_memory.governance import MemoryRuntime


def _versions(location: str) -> list[int]:
    with Store(location) as store:
        assert verify(location, store).valid
        rt = MemoryRuntime(store)
        return [v.version for v in rt.versions(gov_workers.namespace(), "semantic",
                                               "preferred_language")]


@pytest.mark.slow
def test_racing_first_writes_on_a_fresh_store_have_one_winner(location: str) -> None:
    results = run_all(gov_workers.race, location, "first")
    assert sorted(results) == [("rejected", "memory_id_conflict")] * (PROCS - 1) + [
        ("written", "accepted")], results
    assert _versions(location) == [1]


@pytest.mark.slow
def test_racing_retries_of_one_write_commit_it_once(location: str) -> None:
    Store(location).close()
    results = run_all(gov_workers.race, location, "retry")
    assert sorted(results) == [("idempotent", "idempotent")] * (PROCS - 1) + [
        ("written", "accepted")], results
    assert _versions(location) == [1]


@pytest.mark.slow
def test_racing_corrections_of_one_version_have_one_winner(location: str) -> None:
    with Store(location) as store:
        MemoryRuntime(store).write(gov_workers.candidate("seed", "Python"))
    results = run_all(gov_workers.race, location, "correct")
    assert sorted(results) == [("rejected", "stale_expected_record")] * (PROCS - 1) + [
        ("written", "accepted")], results
    assert _versions(location) == [1, 2]
