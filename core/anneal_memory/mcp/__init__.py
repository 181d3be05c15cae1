"""The MCP server: ``anneal-memory [--db PATH] [--project-name NAME] serve [--session-id S]``.

Needs the ``mcp`` extra (``pip install 'anneal-memory[mcp]'``) only to serve: importing
this package, the tool definitions and the integrity manifest works without it.
"""

from __future__ import annotations

from .server import run_server
from .tools import TOOL_NAMES, TOOLS

__all__ = ["TOOLS", "TOOL_NAMES", "run_server"]
