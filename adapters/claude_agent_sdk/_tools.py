"""The memory tools as an in-process SDK MCP server (``create_sdk_mcp_server`` + ``@tool``).

Four tools of our stdio MCP server, with its descriptions, its input schemas and its
handlers (``anneal_memory.mcp.MemoryTools``): the same argument checks, the same
replies, and the same trust ceiling (an agent may label its writes agent, tool or external,
never operator). They act in the memory of the SDK session that is running
(:meth:`AnnealMemory.tool_session`, handed in as ``session_now``: this module knows no
adapter, so the adapter imports it and never the other way round).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import anyio
from claude_agent_sdk import create_sdk_mcp_server, tool

from anneal_memory.errors import AnnealMemoryError
from anneal_memory.mcp import BY_NAME, MemoryTools
from anneal_memory.session import MemorySession

#: The tools offered, in this order.
TOOL_NAMES = ("record", "recall", "prepare_wrap", "save_continuity")


def memory_server(server_name: str, session_now: Callable[[], MemorySession]) -> Any:
    """The SDK MCP server config, named ``server_name``, of tools that act in the
    session ``session_now()`` gives when each call runs (``AnnealMemory.tool_session``)."""
    handlers: weakref.WeakKeyDictionary[MemorySession, MemoryTools] = weakref.WeakKeyDictionary()

    def tools_for(session: MemorySession) -> MemoryTools:
        found = handlers.get(session)
        if found is None:
            found = handlers[session] = MemoryTools(session.store, session.session_id)
        return found

    def make(name: str) -> Any:
        spec = BY_NAME[name]

        async def run(arguments: dict[str, Any]) -> dict[str, Any]:
            try:
                session = session_now()
                text = await anyio.to_thread.run_sync(
                    lambda: tools_for(session).call(name, arguments))
            except AnnealMemoryError as exc:
                return {"content": [{"type": "text", "text": f"{name} refused: {exc}"}],
                        "is_error": True}
            return {"content": [{"type": "text", "text": text}]}

        return tool(name, spec["description"], spec["inputSchema"])(run)

    return create_sdk_mcp_server(server_name, tools=[make(n) for n in TOOL_NAMES])
