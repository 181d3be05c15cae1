"""Claude Agent SDK adapter: hooks, in-process memory tools and a store-backed SessionStore.

::

    from claude_agent_sdk import query
    from anneal_memory import Store
    from anneal_memory.adapters.claude_agent_sdk import AnnealMemory, claude_compressor

    memory = AnnealMemory(Store("memory.db"), compress=claude_compressor())
    async for message in query(prompt="hello", options=memory.options()):
        ...

Install with ``pip install 'anneal-memory[claude-agent-sdk]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("claude-agent-sdk", "claude-agent-sdk", "claude_agent_sdk")

from ._compress import claude_compressor  # noqa: E402
from ._hooks import CONTEXT_LABEL, AnnealMemory, project_namespace  # noqa: E402
from ._session_store import AnnealSessionStore  # noqa: E402

__all__ = ["CONTEXT_LABEL", "AnnealMemory", "AnnealSessionStore", "claude_compressor",
           "project_namespace"]
