"""Field-by-field comparison of one scenario's observations from 1.0.2 and from us.

The rules encode what "drop-in" means: every field 1.0.2 gives must be there with the same
value (we may add fields); an error 1.0.2 raised must be raised too, and catchable by every
builtin base 1.0.2's error had (ours may add bases and is also an ``AnnealMemoryError``).
Keys starting with ``_`` are context, never compared.
"""

from __future__ import annotations

import json
import re
from typing import Any

Diff = tuple[str, Any, Any]


def _is_error(v: Any) -> bool:
    return isinstance(v, dict) and v.get("raised") is True


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 400 else text[:400] + "..."


def compare(peer: Any, ours: Any, path: str = "") -> list[Diff]:
    """Every place where ``ours`` does not give what ``peer`` gave."""
    if ours == "<any>":  # ours accepts every value (an option without fixed choices)
        return []
    if _is_error(peer) or _is_error(ours):
        if not (_is_error(peer) and _is_error(ours)):
            return [(path or "/", peer, ours)]
        return [(f"{path}/{k}", True, ours.get(k)) for k, v in peer.items()
                if not k.startswith("_") and k != "AnnealMemoryError" and v is True
                and ours.get(k) is not True]
    if isinstance(peer, dict) and isinstance(ours, dict):
        out: list[Diff] = []
        for k, v in peer.items():
            if k.startswith("_") or k.rsplit(".", 1)[-1].startswith("_"):
                continue
            if k not in ours:
                out.append((f"{path}/{k}", v, "<absent>"))
            else:
                out += compare(v, ours[k], f"{path}/{k}")
        return out
    if isinstance(peer, list) and isinstance(ours, list) and len(peer) == len(ours):
        out = []
        for i, (a, b) in enumerate(zip(peer, ours)):
            out += compare(a, b, f"{path}[{i}]")
        return out
    if peer != ours:
        return [(path or "/", peer, ours)]
    return []


def covered(path: str, prefixes: dict[str, str]) -> str | None:
    """The deviation entry that explains ``path``: a listed prefix (segment-wise), or a
    pattern with ``*`` (any run of characters) matching the path or a prefix of it."""
    for p in prefixes:
        if "*" in p:
            rx = re.escape(p).replace(r"\*", ".*")
            if re.fullmatch(rx + r"(?:[/\[].*)?", path):
                return p
        elif path == p or path.startswith(p + "/") or path.startswith(p + "["):
            return p
    return None


def report(diffs: list[Diff]) -> str:
    return "\n".join(f"  {p}\n    1.0.2: {_show(a)}\n    ours:  {_show(b)}" for p, a, b in diffs)
