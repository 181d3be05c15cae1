"""The TypedDicts the MCP handlers read a checked call through (mcp/args.py ARGS_OF) say
what the tools' input schemas (mcp/tools.py) say: the same tools, the same keys, the same
required keys and the same JSON types. The handlers trust them after ``check_call``, so a
schema changed without its TypedDict fails here."""

from __future__ import annotations

import typing

from anneal_memory.mcp.args import ARGS_OF, check_call
from anneal_memory.mcp.tools import BY_NAME, TOOL_NAMES

#: the JSON Schema type of an argument -> the Python type its TypedDict key declares
_PYTHON = {"string": str, "integer": int, "boolean": bool, "array": list[str],
           "object": dict[str, object]}


def _declared(tool: str) -> tuple[dict[str, object], frozenset[str]]:
    """The TypedDict's keys with their types, and its required keys."""
    cls = ARGS_OF[tool]
    return typing.get_type_hints(cls), frozenset(cls.__required_keys__)


def _schema(tool: str) -> tuple[dict[str, object], frozenset[str]]:
    schema = BY_NAME[tool]["inputSchema"]
    return ({k: _PYTHON[v["type"]] for k, v in schema["properties"].items()},
            frozenset(schema.get("required", [])))


def test_every_tool_has_its_arguments_typed() -> None:
    assert sorted(ARGS_OF) == sorted(TOOL_NAMES)


def test_each_typeddict_is_its_tools_schema() -> None:
    differ = {t: (_declared(t), _schema(t)) for t in TOOL_NAMES if _declared(t) != _schema(t)}
    assert not differ


def test_a_checked_call_has_only_the_declared_keys_of_the_declared_types() -> None:
    args = check_call("record", {"content": "x", "episode_type": "observation",
                                 "metadata": {"k": 1}, "supersedes": ["a"], "source": None})
    hints, required = _declared("record")
    assert required <= set(args) <= set(hints)
    for key, value in args.items():
        want = typing.get_origin(hints[key]) or hints[key]
        assert isinstance(want, type) and isinstance(value, want)
