"""Whose memory a LangChain / LangGraph run is: the identity the run already carries.

Both frameworks pass per-run values the same ways: LangGraph's ``runtime.context`` (a
dataclass, a TypedDict or any object), ``config["configurable"]``, and the run
``metadata`` callbacks and retrievers receive (LangChain copies simple configurable values
into it). An id under ``user_id``, ``tenant_id``, ``project_id`` or ``agent_id`` there (or
LangGraph Platform's ``langgraph_auth_user_id``) names the namespace; none names none.

The identity rule of every adapter holds: an id that is there but empty, whitespace or
invisible (``user_id=""``, ``"\u200b"``, ``"a\u200b"``) is an ``IdentityError`` naming the
source (never the root memory, never a fall-through to the next source).

A LangGraph-style namespace tuple (``("users", "{user_id}")``, as LangMem writes them) is
filled from the same values and read by label: ``users``/``user``, ``tenants``/``tenant``,
``projects``/``project``, ``agents``/``agent`` each followed by its id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from anneal_memory.adapters._base import NAMESPACE_FIELDS as FIELDS
from anneal_memory.adapters._base import check_identity, identity
from anneal_memory.errors import ValidationError

_LABELS = {f: f for f in FIELDS} | {f"{f}s": f for f in FIELDS}


def _get(source: Any, name: str) -> Any:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def identity_of(*sources: Any, names: Sequence[str] = ()) -> dict[str, str] | None:
    """The namespace the first of ``sources`` that carries an id gives (each a mapping or
    an object), from ``<field>_id`` values; None when none carries one. ``names`` name the
    sources for refusals (default "the run's metadata"): a value that is there but empty,
    blank or invisible is an IdentityError, not a reason to look further."""
    for number, source in enumerate(sources):
        values: dict[str, Any] = {}
        for field in FIELDS:
            value = _get(source, f"{field}_id")
            if value is None and field == "user":
                value = _get(source, "langgraph_auth_user_id")
            values[field] = value
        name = names[number] if number < len(names) else "the run's metadata"
        found = identity(name, **values)
        if found:
            return found
    return None


def is_template(namespace: Any) -> bool:
    """A LangGraph-style namespace tuple (a tuple of labels, perhaps with ``{name}``s)."""
    return isinstance(namespace, tuple) and bool(namespace) and all(
        isinstance(p, str) for p in namespace)


def from_tuple(labels: Sequence[str], *sources: Any) -> dict[str, str]:
    """A namespace from a LangGraph namespace tuple: ``{name}`` parts filled from
    ``sources`` (mappings or objects, first that has it), then ``(label, id)`` pairs read."""
    filled: list[str] = []
    for part in labels:
        if part.startswith("{") and part.endswith("}"):
            name = part[1:-1]
            value = next((v for s in sources if (v := _get(s, name)) is not None), None)
            where = (f"the namespace {tuple(labels)}'s {part} (from the run's runtime context "
                     "or config['configurable'])")
            if value is None:
                raise ValidationError(f"{where}: the run has no {name!r}; pass it in the "
                                      "run's context or configurable")
            filled.append(check_identity(value, where, name.removesuffix("_id")))
        else:
            filled.append(part)
    found: dict[str, str] = {}
    for label, value in zip(filled, filled[1:], strict=False):
        field = _LABELS.get(label)
        if field is not None and field not in found:
            found[field] = check_identity(value, f"the namespace {tuple(labels)}", field)
    if not found:
        raise ValidationError(f"the namespace tuple {tuple(filled)} names no user, tenant, "
                              "project or agent: write it as ('users', '{user_id}') or pass "
                              "a mapping")
    return found
