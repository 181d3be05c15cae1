"""The MCP server over stdio (or streamable HTTP), on the official MCP Python SDK.

``run_server`` is what ``anneal-memory [--db PATH] [--project-name NAME] serve
[--session-id S | --http HOST:PORT]`` calls. The SDK's Server is built in ``sdk``
and imported only when serving, so the rest of the package works without the ``mcp``
extra.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import AnnealMemoryError
from ..store import Store
from . import integrity
from .handlers import MemoryTools
from .sdk import (  # noqa: F401  (re-exported: the names callers know from 1.0.2's layout)
    CONTINUITY_URI,
    INSTRUCTIONS,
    MANIFEST_URI,
    SERVER_NAME,
    build_server,
    call_tool,
    read_resource,
    resources,
)
from .tools import TOOLS

ENV_SESSION = "ANNEAL_MEMORY_SESSION_ID"


def _fail(message: str) -> int:
    print(f"anneal-memory: error: {message}", file=sys.stderr)
    return 1


async def _serve_stdio(tools: MemoryTools) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _serve(tools: MemoryTools) -> None:
    """Block serving stdio until the client disconnects."""
    import anyio

    anyio.run(_serve_stdio, tools)


def run_server(db_path: str | None = None, project_name: str | None = None,
               session_id: str | None = None, skip_integrity: bool = False,
               generate_integrity: bool = False, audit: bool = True,
               http: str | None = None, rate_limit: str | None = None,
               allow_origins: Sequence[str] = (), workers: int = 1) -> int:
    """Serve MCP over stdio until the client closes; returns the exit status.

    ``http`` (``HOST:PORT``): serve streamable HTTP there instead, to every holder of a
    token (``anneal-memory token create``), each in its token's namespace, at most
    ``rate_limit`` requests per token (``N/s``, ``N/min``, ``N/h`` or ``off``; default
    ``edge.DEFAULT_RATE``), browser pages only from this host or ``allow_origins``,
    from ``workers`` processes sharing the port and the store.
    ``generate_integrity`` rewrites the shipped manifest and returns without serving.
    """
    if generate_integrity:
        path = integrity.generate()
        print(f"anneal-memory: wrote the tool integrity manifest ({len(TOOLS)} tools) to {path}",
              file=sys.stderr)
        return 0
    try:
        import mcp  # noqa: F401
    except ImportError:
        return _fail("the MCP server needs the mcp extra: pip install 'anneal-memory[mcp]'")
    if not skip_integrity:
        try:
            integrity.verify()
        except integrity.IntegrityError as exc:
            return _fail(str(exc))
    if http is not None:
        if session_id is not None:
            return _fail("--session-id is for stdio: over HTTP each token wraps as its own "
                         "session (token-ID); leave --session-id out")
        try:
            from .edge import parse_origins, parse_rate
            from .http import check_workers, parse_address

            parse_address(http)  # refuse a bad address before the store is opened
            parse_rate(rate_limit)
            parse_origins(allow_origins)
            check_workers(workers)
        except AnnealMemoryError as exc:
            return _fail(str(exc))
    elif rate_limit is not None or allow_origins or workers != 1:
        return _fail("--rate-limit, --allow-origin and --workers are for --http: leave them "
                     "out over stdio")
    sid = (None if http is not None else session_id if session_id is not None
           else os.environ.get(ENV_SESSION) or None)
    if sid is not None and (not sid.strip() or len(sid) > 200):
        return _fail("--session-id must be a non-empty name of at most 200 characters")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        store = Store(Path(db_path) if db_path else None, project_name=project_name,
                      trust_ceiling="agent", session_id=sid, audit=audit,
                      consolidate_requires_baton_on_create=True)
    except AnnealMemoryError as exc:
        return _fail(str(exc))
    try:
        if http is not None:
            from .edge import DEFAULT_RATE
            from .http import serve_http

            serve_http(store, http, allow_origins=allow_origins, workers=workers,
                       rate_limit=DEFAULT_RATE if rate_limit is None else rate_limit)
        else:
            _serve(MemoryTools(store, sid))
    except AnnealMemoryError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0
