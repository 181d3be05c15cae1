"""The MCP server: ``anneal-memory [--db PATH] [--project-name NAME] serve [--session-id S]``.

Needs the ``mcp`` extra (``pip install 'anneal-memory[mcp]'``) only to serve: importing
this package, the tool definitions and the integrity manifest works without it.
``MemoryTools`` (the tools' handlers over a store) and ``BY_NAME`` (each tool's definition)
are what an in-process tool server reuses (the Claude Agent SDK adapter's).
"""

from __future__ import annotations

from .handlers import MemoryTools
from .server import run_server
from .tools import BY_NAME, TOOL_NAMES, TOOLS

__all__ = ["BY_NAME", "TOOLS", "TOOL_NAMES", "MemoryTools", "run_server"]
