"""Checking a tool call's arguments against its input schema.

Only the small JSON Schema subset ``tools.py`` uses (object, string, integer, boolean,
array of strings, enum, min/max, required, no extra properties). Done here rather than
by the SDK so every refusal reads the same on every SDK version and names the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from ..errors import ValidationError
from .tools import BY_NAME, IGNORED_ARGUMENTS, TOOL_NAMES

_JSON_TYPES = {"string": "a string", "integer": "a whole number", "boolean": "true or false",
               "array": "a list", "object": "an object"}


# bool before int: in Python a bool is an int, in JSON it is not.
_KINDS = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
          (list, "array"), (dict, "object"))


def _kind(value: Any) -> str:
    """The JSON type name of a decoded argument."""
    if value is None:
        return "null"
    return next((n for t, n in _KINDS if isinstance(value, t)), type(value).__name__)


def _check(tool: str, name: str, value: Any, spec: Mapping[str, Any]) -> None:
    want = spec.get("type")
    got = _kind(value)
    if want and got != want:
        raise ValidationError(f"{tool}: argument {name!r} must be {_JSON_TYPES.get(want, want)}, "
                              f"not {got}")
    if "enum" in spec and value not in spec["enum"]:
        raise ValidationError(f"{tool}: argument {name!r} is {value!r}; use one of "
                              f"{', '.join(map(str, spec['enum']))}")
    if want == "string":
        if len(value) > spec.get("maxLength", len(value)):
            raise ValidationError(
                f"{tool}: argument {name!r} is {len(value):,} characters, over the limit of "
                f"{spec['maxLength']:,}: shorten it or split it into several calls")
        if len(value.strip()) < spec.get("minLength", 0):
            raise ValidationError(f"{tool}: argument {name!r} is empty: give it some text")
    elif want == "integer":
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ValidationError(f"{tool}: argument {name!r} is {value}; use a whole number "
                                  f"from {lo} to {hi}")
    elif want == "array":
        if len(value) > spec.get("maxItems", len(value)):
            raise ValidationError(f"{tool}: argument {name!r} has {len(value)} items, over the "
                                  f"limit of {spec['maxItems']}")
        for i, item in enumerate(value):
            _check(tool, f"{name}[{i}]", item, spec.get("items", {}))


def check_call(tool: str, arguments: Mapping[str, object] | None) -> dict[str, object]:
    """The call's arguments, checked; raises ValidationError naming what to fix."""
    spec = BY_NAME.get(tool)
    if spec is None:
        raise ValidationError(f"unknown tool {tool!r}: the tools are {', '.join(TOOL_NAMES)}")
    args = {k: v for k, v in (arguments or {}).items()
            if k not in IGNORED_ARGUMENTS.get(tool, ())}
    schema = spec["inputSchema"]
    props = schema["properties"]
    extra = sorted(set(args) - set(props))
    if extra:
        hint = (" (the session id comes from the server's --session-id, never from a tool "
                "argument)" if "session_id" in extra and tool != "wrap_cancel" else "")
        allowed = ", ".join(props) or "none"
        raise ValidationError(f"{tool}: unknown argument(s) {', '.join(extra)}{hint}; "
                              f"arguments are: {allowed}")
    missing = [k for k in schema.get("required", []) if args.get(k) is None]
    if missing:
        raise ValidationError(f"{tool}: missing required argument(s) {', '.join(missing)}")
    for name, value in list(args.items()):
        if value is None:  # an explicit null means "not given"
            del args[name]
            continue
        _check(tool, name, value, props[name])
    return args


# ---------------------------------------------------------------------- checked arguments
# What ``check_call`` hands each tool, as the tool's input schema in tools.py declares it
# (its required keys in the base class, the optional ones in the total=False class):
# tests/core/test_mcp_args_types.py holds each class to its schema, key by key and type
# by type, so the handlers may read a checked call through them.


class _RecordRequired(TypedDict):
    content: str
    episode_type: str


class RecordArgs(_RecordRequired, total=False):
    source: str
    metadata: dict[str, object]
    supersedes: list[str]
    state_key: str
    trust: str
    derived_from: list[str]


class RecallArgs(TypedDict, total=False):
    keyword: str
    episode_type: str
    source: str
    since: str
    until: str
    limit: int
    offset: int
    include_superseded: bool
    episode_id: str


class PrepareWrapArgs(TypedDict, total=False):
    max_chars: int
    staleness_days: int


class _SaveContinuityRequired(TypedDict):
    text: str


class SaveContinuityArgs(_SaveContinuityRequired, total=False):
    wrap_token: str
    allow_shrink: bool


class EpisodeIdArgs(TypedDict):
    episode_id: str


class NoArgs(TypedDict):
    """A tool without arguments (status, crystal_index)."""


class WrapCancelArgs(TypedDict, total=False):
    wrap_token: str
    session_id: str
    force: bool
    partial: bool


class _CrystalRecallRequired(TypedDict):
    query: str


class CrystalRecallArgs(_CrystalRecallRequired, total=False):
    mode: str
    max_patterns: int


class _SporeAddRequired(TypedDict):
    type: str
    text: str


class SporeAddArgs(_SporeAddRequired, total=False):
    tier: str
    salience: int
    domain: str
    next: str
    pointer: str


class SporeListArgs(TypedDict, total=False):
    type: str
    tier: str
    domain: str
    germination: str


class SporeSurfaceArgs(TypedDict, total=False):
    limit: int
    top_of_mind: bool


class SporeIdArgs(TypedDict):
    spore_id: str


class SporeUpdateArgs(SporeIdArgs, total=False):
    text: str
    type: str
    tier: str
    salience: int
    domain: str
    next: str
    clear_next: bool
    pointer: str
    add_note: str


class _SporeDescendRequired(SporeIdArgs):
    kind: str


class SporeDescendArgs(_SporeDescendRequired, total=False):
    note: str


class _SporeAscendRequired(SporeIdArgs):
    kind: str
    ref: str


class SporeAscendArgs(_SporeAscendRequired, total=False):
    note: str


#: each tool's checked arguments (the test holds this table to tools.py's schemas)
ARGS_OF: dict[str, type] = {
    "record": RecordArgs, "recall": RecallArgs, "prepare_wrap": PrepareWrapArgs,
    "save_continuity": SaveContinuityArgs, "delete_episode": EpisodeIdArgs, "status": NoArgs,
    "wrap_cancel": WrapCancelArgs, "crystal_recall": CrystalRecallArgs, "crystal_index": NoArgs,
    "spore_add": SporeAddArgs, "spore_list": SporeListArgs, "spore_surface": SporeSurfaceArgs,
    "spore_get": SporeIdArgs, "spore_update": SporeUpdateArgs, "spore_touch": SporeIdArgs,
    "spore_descend": SporeDescendArgs, "spore_ascend": SporeAscendArgs,
}
