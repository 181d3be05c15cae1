"""The official MCP SDK's low-level Server over our tools, for every transport.

stdio (``server``) and streamable HTTP (``http``) serve the same tools and resources
through :func:`build_server`. The SDK is imported only inside it, so the rest of the
package works without the ``mcp`` extra. Both SDK lines are supported: 2.x registers
handlers in the ``Server`` constructor, 1.x through decorators.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from ..errors import AnnealMemoryError
from ..store import Store
from . import integrity
from .handlers import MemoryTools
from .tools import TOOLS

CONTINUITY_URI = "anneal://continuity"
MANIFEST_URI = "anneal://integrity/manifest"
SERVER_NAME = "anneal-memory"
log = logging.getLogger("anneal_memory.mcp")

INSTRUCTIONS = (
    "anneal-memory is your memory across sessions. At the start read the resource "
    "anneal://continuity. While working, record decisions, observations, tensions, "
    "questions, outcomes and context changes. Recall before decisions that may have prior "
    "context. At the end of the session run prepare_wrap, compress, then save_continuity."
)


def resources() -> list[dict[str, str]]:
    return [
        {"uri": CONTINUITY_URI, "name": "continuity", "mimeType": "text/markdown",
         "description": "The current continuity file: load it at the start of a session."},
        {"uri": MANIFEST_URI, "name": "integrity-manifest", "mimeType": "application/json",
         "description": "SHA-256 of every tool description and input schema, to compare "
                        "with what tools/list delivered."},
    ]


def read_resource(store: Store, uri: str) -> tuple[str, str]:
    """(text, mime type) of one resource; ValueError for an unknown uri."""
    if uri == CONTINUITY_URI:
        text = store.load_continuity()
        return (text or "No continuity yet: it is written by the first wrap "
                "(prepare_wrap, then save_continuity).", "text/markdown")
    if uri == MANIFEST_URI:
        path = integrity.MANIFEST_PATH
        return (path.read_text("utf-8") if path.exists() else "{}", "application/json")
    raise ValueError(f"unknown resource {uri!r}: the resources are {CONTINUITY_URI} and "
                     f"{MANIFEST_URI}")


def call_tool(tools: MemoryTools, name: str, arguments: object) -> tuple[str, bool]:
    """(reply text, is_error). Never raises: a bad call must not stop the server."""
    try:
        if arguments is not None and not isinstance(arguments, dict):
            raise AnnealMemoryError(f"{name}: arguments must be a JSON object")
        return tools.call(name, arguments), False
    except AnnealMemoryError as exc:
        return f"Error: {exc}", True
    except Exception as exc:  # an unexpected failure: log it, keep serving, no traceback out
        log.exception("tool %s failed", name)
        return (f"Error: {name} failed unexpectedly ({type(exc).__name__}: {exc}); the "
                "server's stderr log has the details", True)


class _ToolFailed(Exception):
    """A tool error on the 1.x SDK line: its message is the reply text."""


def build_server(tools: MemoryTools | Callable[[], MemoryTools], *, offload: bool = False) -> Any:
    """The SDK's low-level Server over ``tools``: one MemoryTools (stdio), or a callable
    giving the current request's (HTTP: each token's own view). ``offload`` runs each
    call in a worker thread, so one slow call does not hold up other users' requests."""
    import anyio
    import mcp.types as t
    from mcp.server.lowlevel import Server

    current: Callable[[], MemoryTools] = tools if callable(tools) else (lambda: tools)

    async def run_call(name: str, arguments: Any) -> tuple[str, bool]:
        mine = current()
        if offload:
            got: tuple[str, bool] = await anyio.to_thread.run_sync(call_tool, mine, name,
                                                                   arguments)
            return got
        return call_tool(mine, name, arguments)

    async def run_read(uri: str) -> tuple[str, str]:
        mine = current()
        if offload:
            text: tuple[str, str] = await anyio.to_thread.run_sync(read_resource, mine.store, uri)
            return text
        return read_resource(mine.store, uri)

    def tool_list() -> Any:
        return [t.Tool.model_validate(d) for d in TOOLS]

    def result(text: str, is_error: bool) -> Any:
        return t.CallToolResult.model_validate(
            {"content": [{"type": "text", "text": text}], "isError": is_error})

    def res_list() -> Any:
        return [t.Resource.model_validate(r) for r in resources()]

    version = _version()
    if "on_call_tool" in inspect.signature(Server.__init__).parameters:
        # SDK 2.x: handlers take (ctx, params) and are passed to the constructor.
        async def on_list_tools(ctx: Any, params: Any) -> Any:
            return t.ListToolsResult(tools=tool_list())

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            return result(*await run_call(params.name, params.arguments))

        async def on_list_resources(ctx: Any, params: Any) -> Any:
            return t.ListResourcesResult(resources=res_list())

        async def on_read_resource(ctx: Any, params: Any) -> Any:
            text, mime = await run_read(str(params.uri))
            return t.ReadResourceResult.model_validate(
                {"contents": [{"uri": str(params.uri), "mimeType": mime, "text": text}]})

        return Server(SERVER_NAME, version=version, instructions=INSTRUCTIONS,  # type: ignore[call-arg]
                      on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                      on_list_resources=on_list_resources, on_read_resource=on_read_resource)
    # SDK 1.x: decorators.
    server = Server(SERVER_NAME, version=version, instructions=INSTRUCTIONS)

    @server.list_tools()  # type: ignore[attr-defined,misc,untyped-decorator]
    async def _list_tools() -> Any:
        return tool_list()

    # Our own argument check (args.py) answers bad calls, the same on every SDK version.
    @server.call_tool(validate_input=False)  # type: ignore[attr-defined,misc,untyped-decorator]
    async def _call_tool(name: str, arguments: Any) -> Any:
        text, is_error = await run_call(name, arguments)
        if is_error:
            # Every 1.x release turns an exception into an isError result carrying its
            # message; returning a CallToolResult directly only works in later ones.
            raise _ToolFailed(text)
        return [t.TextContent(type="text", text=text)]

    @server.list_resources()  # type: ignore[attr-defined,misc,untyped-decorator]
    async def _list_resources() -> Any:
        return res_list()

    @server.read_resource()  # type: ignore[attr-defined,misc,untyped-decorator]
    async def _read_resource(uri: Any) -> Any:
        from mcp.server.lowlevel.helper_types import ReadResourceContents

        text, mime = await run_read(str(uri))
        return [ReadResourceContents(content=text, mime_type=mime)]

    return server


def _version() -> str:
    from .._version import __version__

    return __version__
