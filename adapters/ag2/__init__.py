"""anneal-memory for AG2 (``ag2<1``, imported as ``autogen``): ``ConversableAgent.register_hook``.

::

    from anneal_memory.adapters.ag2 import AnnealMemory

    memory = AnnealMemory("memory.db")
    memory.add_to_agent(assistant)   # recall before each reply, record every sent message
    user.initiate_chat(assistant, message="...")
    memory.wrap()                    # the agent's own LLM writes the continuity

See docs/integrations/ag2.md.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    from autogen import ConversableAgent  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("ag2", "ag2") from exc

from ._capability import MEMORY_NAME, AnnealMemory

__all__ = ["MEMORY_NAME", "AnnealMemory"]
