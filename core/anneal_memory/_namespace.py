"""Namespaces: the isolation boundary of governed memory.

A namespace is (tenant, user, project, agent). ``project`` may be None: such a record
is user-level and is visible in every project of that same tenant, user and agent. A
record with a project is visible only in that project. Every other field must match
exactly; there is no wildcard.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._inputs import storable_text
from ._lazy import sha256_hex
from .errors import IdentityError, ValidationError

FIELDS = ("tenant", "user", "project", "agent")
#: the fields a namespace always has (project may be None: a user-level record)
REQUIRED = ("tenant", "user", "agent")
_MAX = 200


#: Characters that show nothing but are not whitespace (Unicode format characters are
#: found by category): Hangul fillers, the braille blank, the combining grapheme joiner
#: and the variation selectors.
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f"
                    + "".join(chr(c) for c in range(0xFE00, 0xFE10)))


def invisible(ch: str) -> bool:
    """Whether a character shows nothing: a format character (zero-width space, joiners,
    word joiner, BOM, soft hyphen, direction marks: category Cf), a control character,
    or one of :data:`_BLANKS`."""
    return ch in _BLANKS or unicodedata.category(ch) in ("Cf", "Cc", "Cs")


def identity_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as an identity (a namespace field, a user id), or None.

    The identity rule: an id is a string with something visible in it and nothing
    invisible. Empty, whitespace and invisible-only values are refused (they would name
    nobody, and an adapter must never read them as the root or everyone); so is a value
    that mixes invisible characters with visible ones (``"a\u200b"`` displays as ``"a"``
    but would be another user's memory)."""
    if not isinstance(value, str):
        return f"must be a string id, not {type(value).__name__} {value!r}"
    if not value.strip():
        return f"must be a non-empty string, not {value!r}: an empty id names nobody"
    hidden = sorted({f"U+{ord(c):04X}" for c in value if invisible(c)})
    if hidden and all(invisible(c) or c.isspace() for c in value):
        return (f"{value!r} is made only of invisible characters ({', '.join(hidden)}): it "
                "names nobody")
    if hidden:
        shown = "".join(c for c in value if not invisible(c))
        return (f"{value!r} holds invisible characters ({', '.join(hidden)}): it would display "
                f"as {shown!r} and be another memory; pass the plain id")
    return None


def _check(name: str, value: Any, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if value is None:
        raise IdentityError(
            f"namespace {name} is None: an unset {name} names nobody, and is never read as "
            f"the default {name} or anyone's memory. Give the real {name} id, or leave the "
            f"field out of a partial namespace for the documented default")
    if not isinstance(value, str):
        raise ValidationError(
            f"namespace {name} must be a non-empty string, not {value!r}"
            + (" (or None for a user-level record)" if optional else ""))
    problem = identity_problem(value)
    if problem is not None:
        raise IdentityError(f"namespace {name} {problem}"
                            + (" (or None for a user-level record)" if optional else ""))
    if value != value.strip() or len(value) > _MAX:
        raise ValidationError(f"namespace {name} {value!r} has surrounding spaces, control "
                              f"characters or more than {_MAX} characters: pass a plain id")
    storable_text(value, f"namespace {name}")


def digest(*parts: Any) -> str:
    """A canonical SHA-256 digest of JSON-encodable parts (ids, never shown content)."""
    text = json.dumps(list(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(text.encode("utf-8"))


@dataclass(frozen=True)
class MemoryNamespace:
    """Who a memory belongs to and who may read it."""

    tenant: str
    user: str
    agent: str
    project: str | None = None

    def __post_init__(self) -> None:
        _check("tenant", self.tenant)
        _check("user", self.user)
        _check("agent", self.agent)
        _check("project", self.project, optional=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryNamespace:
        """Build from a mapping; unknown fields are refused, not ignored."""
        if isinstance(data, MemoryNamespace):
            return data
        if not isinstance(data, Mapping):
            raise ValidationError("a namespace must be a MemoryNamespace or a dict with "
                                  f"{', '.join(FIELDS)}")
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise ValidationError(f"unknown namespace field(s) {unknown}: the fields are "
                                  f"{', '.join(FIELDS)}")
        missing = [f for f in ("tenant", "user", "agent") if f not in data]
        if missing:
            raise ValidationError(f"namespace is missing {missing}: tenant, user and agent "
                                  "are required; project is optional")
        return cls(tenant=data["tenant"], user=data["user"], agent=data["agent"],
                   project=data.get("project"))

    def to_dict(self) -> dict[str, str | None]:
        return {"tenant": self.tenant, "user": self.user, "project": self.project,
                "agent": self.agent}

    def to_partial(self) -> dict[str, str]:
        """The fields that are not the default: the partial namespace that names this one
        (``coerce_namespace(ns.to_partial(), partial=True) == ns``), for a config or a
        header to carry without spelling out the reserved default."""
        return {k: v for k, v in self.to_dict().items()
                if v is not None and not (k in REQUIRED and v == DEFAULT_FIELD)}

    @property
    def key(self) -> str:
        """Exact identity of this namespace (all four fields)."""
        return json.dumps([self.tenant, self.user, self.project, self.agent],
                          separators=(",", ":"), ensure_ascii=False)

    @property
    def owner(self) -> str:
        """The fields that must always match: tenant, user and agent."""
        return json.dumps([self.tenant, self.user, self.agent], separators=(",", ":"),
                          ensure_ascii=False)

    def can_read(self, record_ns: MemoryNamespace) -> bool:
        """Whether a reader in this namespace may see a record written in ``record_ns``."""
        return (record_ns.owner == self.owner
                and (record_ns.project is None or record_ns.project == self.project))

    def label(self) -> str:
        return f"{self.tenant}/{self.user}/{self.project or '*'}/{self.agent}"


#: What a lifecycle namespace leaves unsaid: ``{"user": "alice"}`` is alice's memory in
#: the default tenant, kept by the default agent.
DEFAULT_FIELD = "default"


def coerce_namespace(value: Any, *, partial: bool = False,
                     allow_default: bool = False) -> MemoryNamespace:
    """A MemoryNamespace from a MemoryNamespace or a mapping.

    ``partial``: the mapping may hold any of the four fields (at least one); tenant,
    user and agent left out are ``"default"``. Otherwise tenant, user and agent are
    required, as governed records need them.

    In a partial mapping, tenant, user and agent given as None, empty or invisible are an
    :class:`IdentityError` (an unset identity is never the shared default), and so is
    ``"default"`` given by name: it is reserved for a field left out, so that no real id
    shares the memory of runs without one. ``allow_default`` accepts it, for namespaces
    read back from the library's own exports and records, which spell the default out.
    """
    if isinstance(value, MemoryNamespace):
        return value
    if partial and isinstance(value, Mapping):
        unknown = sorted(str(k) for k in set(value) - set(FIELDS))
        if unknown:
            raise ValidationError(f"unknown namespace key(s) {unknown}: a namespace holds any "
                                  f"of {', '.join(FIELDS)}")
        for key in REQUIRED:
            if key in value:
                _check(key, value[key])
                if value[key] == DEFAULT_FIELD and not allow_default:
                    raise IdentityError(
                        f"namespace {key} {DEFAULT_FIELD!r} is reserved: it is what a {key} "
                        "left out of a partial namespace means (the shared memory of runs "
                        f"without one), so a real {key} of that name would share it. Leave "
                        f"the field out for the default {key}, or give the real id another "
                        "name")
        given = {k: v for k, v in value.items() if v is not None}
        if not given:
            raise ValidationError("a namespace needs at least one of "
                                  f"{', '.join(FIELDS)} (e.g. {{'user': 'alice'}})")
        return MemoryNamespace.from_dict({
            "tenant": DEFAULT_FIELD, "user": DEFAULT_FIELD, "agent": DEFAULT_FIELD, **given})
    return MemoryNamespace.from_dict(value)


def require_view(view: MemoryNamespace | None, ns: MemoryNamespace) -> MemoryNamespace:
    """``ns`` when it is the view's own namespace (or there is no view, ``None``); else a
    ValidationError naming the first field that differs. What a view was opened for is
    all it may act on: a session, a runtime or a call through it cannot name another."""
    if view is None or view == ns:
        return ns
    diff = next(f for f in FIELDS if getattr(view, f) != getattr(ns, f))
    raise ValidationError(f"namespace {diff} {getattr(ns, diff)!r} does not match the view it "
                          f"is used through ({getattr(view, diff)!r}): pass the parent Store, "
                          "or no namespace")
