"""anneal-memory for AG2 (``ag2<1``, imported as ``autogen``): ``ConversableAgent.register_hook``.

::

    from anneal_memory.adapters.ag2 import AnnealMemory

    memory = AnnealMemory("memory.db")
    memory.add_to_agent(assistant)   # recall before each reply, record every sent message
    user.initiate_chat(assistant, message="...")   # the memory of (user, assistant)
    memory.wrap()                    # the agent's own LLM writes the continuity

See docs/integrations/ag2.md.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("ag2", "ag2", "autogen", "autogen.agentchat.contrib.capabilities.agent_capability")

from ._capability import MEMORY_NAME, AnnealMemory, ChatContext  # noqa: E402

__all__ = ["MEMORY_NAME", "AnnealMemory", "ChatContext"]
