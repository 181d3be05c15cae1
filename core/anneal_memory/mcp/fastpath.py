"""The team server's direct path for a plain ``tools/call``: no per-request SDK session.

In stateless mode the MCP SDK builds a transport, memory streams, a dispatcher and a
server task for every POST (~37% of a request's CPU under load, by profile). A
``tools/call`` needs none of it: the call is one JSON-RPC request answered by one JSON
response. ``plan`` picks out exactly the requests the SDK would serve that way and
nothing else (a well-formed single ``tools/call`` with the headers the SDK accepts and a
protocol version it negotiates by handshake); every other request (initialize, lists,
resources, notifications, batches, a malformed body, a header the SDK would refuse) goes
to the SDK unchanged, so its errors and replies stay the SDK's. ``reply`` writes the
response as the SDK writes it (``tests/mcp/test_http_scale.py`` compares the two).
SDK-free: the versions come from the installed SDK when it is there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: what ``tools/call`` params may carry (anything else: the SDK decides)
_PARAMS = frozenset({"name", "arguments", "_meta"})
_MESSAGE = frozenset({"jsonrpc", "id", "method", "params"})


def handshake_versions() -> frozenset[str]:
    """The protocol versions the installed SDK serves through its handshake transport
    (2.x: ``HANDSHAKE_PROTOCOL_VERSIONS``; 1.x: ``SUPPORTED_PROTOCOL_VERSIONS``)."""
    try:
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        return frozenset(HANDSHAKE_PROTOCOL_VERSIONS)
    except ImportError:
        pass
    try:
        from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS

        return frozenset(SUPPORTED_PROTOCOL_VERSIONS)
    except ImportError:  # no SDK: nothing is served directly
        return frozenset()


@dataclass(frozen=True)
class ToolCall:
    """One ``tools/call`` to serve directly: its JSON-RPC id, tool name and arguments."""

    id: int | str
    name: str
    arguments: dict[str, Any] | None


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return False
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return "application/json" in kinds and "text/event-stream" in kinds


def _is_json(content_type: str | None) -> bool:
    parts = [p.strip() for p in (content_type or "").split(";")[0].split(",")]
    return "application/json" in parts


def plan(headers: dict[str, str], body: bytes, versions: frozenset[str]) -> ToolCall | None:
    """The ``tools/call`` this request is, when it can be served directly; None when
    the SDK must serve it (anything unusual, so that the SDK's answer stays the one)."""
    if (not _accepts_json(headers.get("accept")) or not _is_json(headers.get("content-type"))
            or headers.get("mcp-protocol-version") not in versions
            or "mcp-session-id" in headers or not body.startswith(b"{")):
        return None
    try:
        msg = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if (not isinstance(msg, dict) or msg.keys() != _MESSAGE or msg["jsonrpc"] != "2.0"
            or msg["method"] != "tools/call"):
        return None
    rid, params = msg["id"], msg["params"]
    if isinstance(rid, bool) or not isinstance(rid, (int, str)) or not isinstance(params, dict):
        return None
    if not params.keys() <= _PARAMS or not isinstance(params.get("name"), str):
        return None
    args = params.get("arguments")
    meta = params.get("_meta")
    if (args is not None and not isinstance(args, dict)) or (
            meta is not None and not isinstance(meta, dict)):
        return None
    if isinstance(meta, dict) and "progressToken" in meta:  # the SDK may stream progress
        return None
    return ToolCall(rid, params["name"], args)


_HEAD = '{"jsonrpc":"2.0","id":'
_TEXT = ',"result":{"content":[{"type":"text","text":'
_TAIL = {True: '}],"isError":true}}', False: '}],"isError":false}}'}
_dump = json.JSONEncoder(ensure_ascii=False).encode


def reply(call: ToolCall, text: str, is_error: bool) -> bytes:
    """The JSON-RPC response the SDK writes for a tool's text reply: byte for byte
    ``json.dumps`` of ``{"jsonrpc", "id", "result": {"content", "isError"}}`` compact
    and without ASCII escapes, written from its three parts (only the id and the text
    need encoding)."""
    return (_HEAD + _dump(call.id) + _TEXT + _dump(text) + _TAIL[bool(is_error)]
            ).encode("utf-8")
