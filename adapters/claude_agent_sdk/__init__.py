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

from anneal_memory.errors import MissingExtraError

try:
    import claude_agent_sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("claude-agent-sdk", "claude-agent-sdk") from exc

from ._compress import claude_compressor
from ._hooks import CONTEXT_LABEL, AnnealMemory, project_namespace
from ._session_store import AnnealSessionStore

__all__ = ["CONTEXT_LABEL", "AnnealMemory", "AnnealSessionStore", "claude_compressor",
           "project_namespace"]
