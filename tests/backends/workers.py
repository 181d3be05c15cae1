"""Process bodies for the multi-process tests (each process stands in for a host)."""

from __future__ import annotations

import os
import time
from typing import Any


def _wait(start_at: float) -> None:
    time.sleep(max(0.0, start_at - time.time()))


def record_many(location: str, worker: int, n: int, start_at: float) -> list[str]:
    from anneal_memory import Store

    os.environ.setdefault("ANNEAL_MEMORY_SIDECAR_DIR", os.path.dirname(location) or ".")
    with Store(location) as store:
        _wait(start_at)
        return [store.record(f"worker {worker} episode {i}", "observation").id for i in range(n)]


def race_wrap(location: str, worker: int, start_at: float) -> dict[str, Any]:
    """Prepare and save a wrap with no session: the first save wins, the rest find the
    wrap already saved (or a fresh, empty one)."""
    from anneal_memory import Store, prepare_wrap, validated_save_continuity
    from anneal_memory.errors import AnnealMemoryError

    text = ("# Continuity\n\n## State\n- working\n\n## Patterns\n- p | 1x\n\n"
            f"## Decisions\n- worker {worker}\n\n## Context\n- ctx\n")
    with Store(location) as store:
        _wait(start_at)
        try:
            w = prepare_wrap(store)
        except AnnealMemoryError as exc:  # another worker's wrap is in progress
            return {"worker": worker, "outcome": "lost", "error": type(exc).__name__}
        if w["status"] != "ready":
            return {"worker": worker, "outcome": w["status"]}
        try:
            r = validated_save_continuity(store, text, wrap_token=w["wrap_token"])
        except AnnealMemoryError as exc:
            return {"worker": worker, "outcome": "lost", "error": type(exc).__name__}
        return {"worker": worker, "outcome": "saved", "wrap_id": r["wrap_id"],
                "compressed": r["episodes_compressed"]}


def race_prepare(location: str, worker: int, start_at: float) -> str | None:
    """Every process opens the wrap at once: one opens it, the others are refused (a wrap
    is in progress); None for a refused one."""
    from anneal_memory import Store, WrapInProgressError, prepare_wrap

    with Store(location) as store:
        _wait(start_at)
        try:
            return prepare_wrap(store)["wrap_token"]
        except WrapInProgressError:
            return None


def race_first_open(location: str, worker: int, start_at: float) -> str:
    """Every process creates the store at once (schema, store id) and records."""
    from anneal_memory import Store

    _wait(start_at)
    with Store(location) as store:
        store.record(f"first write by {worker}", "observation")
        return store.store_id


def race_claim(location: str, worker: int, start_at: float) -> str:
    from anneal_memory import claim_baton
    from anneal_memory.errors import BatonError

    _wait(start_at)
    try:
        claim_baton(location, f"s{worker}")
        return "claimed"
    except BatonError:
        return "refused"
