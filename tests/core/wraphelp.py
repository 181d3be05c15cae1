"""Helpers for wrap tests: build a continuity text around given section bodies."""

from __future__ import annotations

from typing import Any

from anneal_memory import Store, prepare_wrap, validated_save_continuity


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
