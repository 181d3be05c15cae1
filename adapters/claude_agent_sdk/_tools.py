"""The memory tools as an in-process SDK MCP server (``create_sdk_mcp_server`` + ``@tool``).

Four tools of our stdio MCP server, with its descriptions, its input schemas and its
handlers (``anneal_memory.mcp.MemoryTools``): the same argument checks, the same
replies, and the same trust ceiling (an agent may label its writes agent, tool or external,
never operator). They act in the memory of the SDK session that is running
(:meth:`AnnealMemory.tool_session`).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import anyio
from claude_agent_sdk import create_sdk_mcp_server, tool

from anneal_memory.errors import AnnealMemoryError
from anneal_memory.mcp import BY_NAME, MemoryTools
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from ._hooks import AnnealMemory

#: The tools offered, in this order.
TOOL_NAMES = ("record", "recall", "prepare_wrap", "save_continuity")


def memory_server(memory: AnnealMemory) -> Any:
    """The SDK MCP server config for ``memory``'s tools."""
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
                session = memory.tool_session()
                text = await anyio.to_thread.run_sync(
                    lambda: tools_for(session).call(name, arguments))
            except AnnealMemoryError as exc:
                return {"content": [{"type": "text", "text": f"{name} refused: {exc}"}],
                        "is_error": True}
            return {"content": [{"type": "text", "text": text}]}

        return tool(name, spec["description"], spec["inputSchema"])(run)

    return create_sdk_mcp_server(memory.server_name, tools=[make(n) for n in TOOL_NAMES])
