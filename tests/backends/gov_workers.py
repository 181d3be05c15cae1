"""Process bodies for the governed-runtime races (each process stands in for a host)."""

from __future__ import annotations

import time
from typing import Any

LANGS = ["Python", "TypeScript", "Go", "Rust", "Kotlin", "Ruby"]


def namespace() -> Any:
    from anneal_memory.governance import MemoryNamespace

    return MemoryNamespace(tenant="acme", user="alice", agent="coder", project="pricing")


def candidate(candidate_id: str, language: str) -> Any:
    from anneal_memory.governance import MemoryCandidate, SourceRef

    return MemoryCandidate(candidate_id, namespace(), "semantic", "preferred_language",
                           f"Prefer {language} for code examples",
                           SourceRef(f"{candidate_id}#msg", "user_message"))


def race(location: str, worker: int, mode: str, start_at: float) -> tuple[str, str]:
    """One racing governed write; returns (outcome, reason).

    ``first``: every host commits its own first version straight into the ledger (the
    gate would stop a late reader before the ledger's own check). ``retry``: every host
    sends the same candidate. ``correct``: every host corrects version 1.
    """
    from anneal_memory import Store
    from anneal_memory.governance import Authority, MemoryRuntime

    # ``first`` also races the creation of the store and of the governance tables.
    if mode == "first":
        time.sleep(max(0.0, start_at - time.time()))
    with Store(location) as store:
        rt = MemoryRuntime(store)
        time.sleep(max(0.0, start_at - time.time()))
        if mode == "first":
            res = rt.ledger.commit(candidate(f"host-{worker}", LANGS[worker]),
                                   Authority.USER_EXPLICIT, created_at=rt.now(),
                                   expected_record_id=None, first=True)
        elif mode == "retry":
            res = rt.write(candidate("shared", "Python"))
        else:
            v1 = rt.versions(namespace(), "semantic", "preferred_language")[0]
            res = rt.correct(candidate(f"fix-{worker}", LANGS[worker + 1]),
                             expected_record_id=v1.record_id)
        return res.outcome, res.reason
