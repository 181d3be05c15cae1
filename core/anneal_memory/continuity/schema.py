"""Section schemas: the ordered headings of a continuity file and the role of each.

Roles: ``live-state`` (volatile focus, never graduates), ``durable`` (facts kept by
mechanism), ``graduating`` (pattern lines the immune system governs), ``decisions``,
``narrative`` (rewritten each wrap), ``narrative-timeless`` (the felt layer, carried
forward; its presence arms the catastrophic-shrink gate), ``frozen`` (kept verbatim).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TypedDict

from ..errors import SchemaError

ROLES = ("live-state", "durable", "graduating", "decisions", "narrative",
         "narrative-timeless", "frozen")


class SectionSpec(TypedDict, total=False):
    heading: str
    role: str
    optional: bool


DEFAULT_SCHEMA: list[SectionSpec] = [
    {"heading": "State", "role": "live-state"},
    {"heading": "Durable Facts", "role": "durable", "optional": True},
    {"heading": "Patterns", "role": "graduating"},
    {"heading": "Decisions", "role": "decisions"},
    {"heading": "Context", "role": "narrative"},
]

FLOW_SCHEMA: list[SectionSpec] = [
    {"heading": "State", "role": "live-state"},
    {"heading": "Active Threads", "role": "live-state"},
    {"heading": "Durable Facts", "role": "durable", "optional": True},
    {"heading": "Patterns", "role": "graduating"},
    {"heading": "Decisions", "role": "decisions"},
    {"heading": "Context", "role": "narrative"},
    {"heading": "Understanding", "role": "narrative-timeless"},
]

NAMED_SCHEMAS: dict[str, list[SectionSpec]] = {"default": DEFAULT_SCHEMA, "partnership": FLOW_SCHEMA,
                                                "flow": FLOW_SCHEMA}

_BASE_BUDGET = 20000
_BASELINE_FREE = {"live-state": 1, "graduating": 1, "decisions": 1, "narrative": 1}
_EXTRA_BY_ROLE = {"live-state": 1500, "graduating": 2500, "decisions": 1500, "narrative": 2500,
                  "narrative-timeless": 4000, "frozen": 1000}
DURABLE_BUDGET_FRACTION = 0.15
HARD_BOUND_FACTOR = 1.25


def heading_key(text: str) -> str:
    """Normalised heading for matching: case-folded, punctuation dropped, spaces folded."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def validate_schema(schema: object) -> list[SectionSpec]:
    """Check a schema and return it normalised; raise SchemaError naming the fix."""
    if isinstance(schema, (str, bytes)) or not isinstance(schema, Sequence) or not schema:
        raise SchemaError("a section schema is a non-empty list of {heading, role} dicts")
    out: list[SectionSpec] = []
    seen: dict[str, str] = {}
    for i, spec in enumerate(schema):
        if not isinstance(spec, Mapping):
            raise SchemaError(f"schema entry {i} must be a dict with 'heading' and 'role'")
        unknown = set(spec) - {"heading", "role", "optional"}
        if unknown:
            raise SchemaError(f"schema entry {i} has unknown key(s) {sorted(unknown)}")
        heading = spec.get("heading")
        role = spec.get("role")
        if not isinstance(heading, str) or not heading_key(heading):
            raise SchemaError(f"schema entry {i} needs a non-empty 'heading'")
        if "\n" in heading or len(heading) > 80:
            raise SchemaError(f"schema heading {heading!r} must be one short line")
        if role not in ROLES:
            raise SchemaError(f"schema entry {heading!r} has role {role!r}: use one of "
                              + ", ".join(ROLES))
        optional = spec.get("optional", False)
        if not isinstance(optional, bool):
            raise SchemaError(f"schema entry {heading!r}: 'optional' must be true or false")
        if optional and role != "durable":
            raise SchemaError(f"schema entry {heading!r}: only a durable section may be optional")
        key = heading_key(heading)
        if key in seen:
            raise SchemaError(f"schema has the heading {heading!r} twice: headings must be unique")
        for other in seen:
            if key.startswith(other + " ") or other.startswith(key + " "):
                raise SchemaError(f"schema headings {seen[other]!r} and {heading!r} are ambiguous: "
                                  "one is the other plus trailing words")
        seen[key] = heading
        item: SectionSpec = {"heading": heading.strip(), "role": role}
        if optional:
            item["optional"] = True
        out.append(item)
    if not any(s["role"] == "graduating" for s in out):
        raise SchemaError("the schema has no graduating section: add one (e.g. "
                          "{'heading': 'Patterns', 'role': 'graduating'}) so patterns can be governed")
    if sum(1 for s in out if s["role"] == "durable") > 1:
        raise SchemaError("a schema may have at most one durable section")
    return out


def default_max_chars(schema: Sequence[Mapping[str, object]]) -> int:
    """The size a composer is asked to stay within (durable section not counted)."""
    if isinstance(schema, (str, bytes, Mapping)) or not isinstance(schema, Sequence) or not all(
            isinstance(s, Mapping) and "role" in s for s in schema):
        raise SchemaError("a section schema is a list of {heading, role} dicts "
                          "(e.g. DEFAULT_SCHEMA)")
    budget = _BASE_BUDGET
    used: dict[str, int] = {}
    for s in schema:
        role = str(s["role"])
        if role == "durable":
            continue
        used[role] = used.get(role, 0) + 1
        if used[role] > _BASELINE_FREE.get(role, 0):
            budget += _EXTRA_BY_ROLE.get(role, 0)
    return budget


def hard_max_chars(schema: Sequence[Mapping[str, object]]) -> int:
    """A save above this size (durable section excluded) is refused."""
    return math.ceil(HARD_BOUND_FACTOR * default_max_chars(schema))


def durable_budget(schema: Sequence[Mapping[str, object]]) -> int:
    """The durable section's own budget, on top of the default size."""
    return int(default_max_chars(schema) * DURABLE_BUDGET_FRACTION)


def schema_role_warning(schema: Sequence[Mapping[str, object]]) -> str | None:
    """Warn when a schema drifts off the role a named schema gives a heading, or has no
    graduating section."""
    try:
        specs = [dict(s) for s in schema]
    except TypeError:
        return "the section schema is not a list of sections"
    if not any(s.get("role") == "graduating" for s in specs):
        return ("the schema has no graduating section: patterns cannot be governed; add "
                "{'heading': 'Patterns', 'role': 'graduating'}")
    reference = {heading_key(s["heading"]): s["role"] for s in FLOW_SCHEMA}
    for s in specs:
        key = heading_key(str(s.get("heading", "")))
        expected = reference.get(key)
        if expected and s.get("role") != expected:
            return (f"section {s.get('heading')!r} has role {s.get('role')!r} where the named "
                    f"schemas give it {expected!r}: set its role to {expected!r}"
                    + (" (as narrative it loses the felt-layer checks and the shrink gate)"
                       if expected == "narrative-timeless" else ""))
    return None


def has_felt_layer(schema: Sequence[Mapping[str, object]]) -> bool:
    return any(s["role"] == "narrative-timeless" for s in schema)
