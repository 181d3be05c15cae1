"""Helpers for wrap tests: build a continuity text around given section bodies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from anneal_memory import Store, StoreError, prepare_wrap, validated_save_continuity
from anneal_memory.testing import backend_of


def doc(patterns: str = "- first pattern | 1x", *, state: str = "- working", decisions: str = "- none",
        context: str = "- ctx", durable: str | None = None, extra: str = "") -> str:
    parts = ["# Continuity", f"## State\n{state}"]
    if durable is not None:
        parts.append(f"## Durable Facts\n{durable}")
    parts += [f"## Patterns\n{patterns}", f"## Decisions\n{decisions}", f"## Context\n{context}"]
    if extra:
        parts.append(extra)
    return "\n\n".join(parts) + "\n"


def wrap(store: Store, text: str, **kw: Any) -> dict[str, Any]:
    w = prepare_wrap(store)
    assert w["status"] == "ready", w
    return validated_save_continuity(store, text, wrap_token=w["wrap_token"], **kw)


def fail_commits(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the store's outermost transactions run their body, then refuse to
    commit (as a disk error at COMMIT would): everything they wrote rolls back."""
    backend = backend_of(store)
    real = backend.transaction

    @contextlib.contextmanager
    def commit_fails(**kw: bool) -> Iterator[None]:
        outer = not backend.in_transaction
        with real(**kw):
            yield
            if outer:
                raise StoreError("the commit failed: disk I/O error")

    monkeypatch.setattr(backend, "transaction", commit_fails)
