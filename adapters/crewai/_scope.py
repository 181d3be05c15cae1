"""CrewAI's scope tree, and whose memory a scope is.

A CrewAI scope is a path (``/crew/research/user/bob/notes``); a prefix holds itself and
everything below it (``/user/bob`` holds ``/user/bob/notes``, not ``/user/bobby``). Paths
are normalised as CrewAI's own backend does (``"app"`` is ``/app``, ``"tenant1/"`` is
``/tenant1``, repeated slashes collapse).

The identity a scope names: each ``tenant``/``tenants`` and ``user``/``users`` segment
followed by its id, anywhere in the path, gives that namespace field. Only these owner
fields are read, so a user's whole subtree is one memory (their continuity, recall and
wrap), and the scope prefix narrows within it.

The identity rule: an owner segment must be followed by a real id. ``/user/`` (an empty
uid: CrewAI would read it as the whole user tree), ``/user//notes`` (which would collapse
to the user "notes"), ``/user/ /x`` and ``/user/\u200b`` are refused (IdentityError) naming the
scope path, never everyone's memory.
"""

from __future__ import annotations

import re
from typing import Any

from anneal_memory.adapters._base import check_identity, identity

_OWNER_LABELS = {"tenant": "tenant", "tenants": "tenant", "user": "user", "users": "user"}


def normalize(path: str | None) -> str:
    """``/a/b`` form of a scope path (``"/"`` for none)."""
    if path is None:
        return "/"
    text = re.sub(r"/+", "/", str(path).strip())
    text = text.rstrip("/")
    if not text:
        return "/"
    return text if text.startswith("/") else "/" + text


def check_owner_ids(path: str | None) -> None:
    """Every ``user``/``tenant`` segment of ``path`` is followed by an id that obeys the
    identity rule (checked before repeated slashes collapse: call it on the path as
    given, where a run names its scope)."""
    if path is None:
        return
    raw = path.strip().split("/")
    for number, part in enumerate(raw):
        field = _OWNER_LABELS.get(part.lower())
        if field is not None:
            after = raw[number + 1] if number + 1 < len(raw) else ""
            check_identity(after, f"the scope path {path!r}", field)


def join(root: str | None, inner: str | None) -> str:
    """``inner`` under ``root`` (either may be missing)."""
    base = normalize(root) if root else "/"
    rest = normalize(inner) if inner else "/"
    if base == "/":
        return rest
    if rest == "/":
        return base
    return base + rest


def key_prefix(scope: str | None) -> str:
    """The item-key prefix holding a scope and everything below it."""
    path = normalize(scope)
    return "/" if path == "/" else path + "/"


def within(scope: str | None, prefix: str | None) -> bool:
    """Whether ``scope`` is ``prefix`` or below it."""
    return key_prefix(scope).startswith(key_prefix(prefix))


def identity_of(scope: str | None) -> dict[str, str] | None:
    """The namespace (tenant / user) a scope path names, or None (an owner segment
    without a real id after it is an IdentityError)."""
    check_owner_ids(scope)
    parts = [p for p in normalize(scope).split("/") if p]
    found: dict[str, str] = {}
    for label, value in zip(parts, parts[1:], strict=False):
        field = _OWNER_LABELS.get(label.lower())
        if field is not None and field not in found:
            found[field] = value
    return identity(f"the scope path {scope!r}", **found)


def scope_of_agent(agent: Any) -> str | None:
    """The scope the memory of an agent's crew works in (a ``memory.scope(...)`` view's
    root, else the memory's ``root_scope``), or None."""
    memory = getattr(agent, "memory", None)
    if memory is None or isinstance(memory, bool):
        memory = getattr(getattr(agent, "crew", None), "_memory", None)
    if memory is None:
        return None
    root = getattr(memory, "root_path", None) or getattr(memory, "root_scope", None)
    return normalize(root) if isinstance(root, str) else "/"
