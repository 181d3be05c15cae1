"""anneal-memory for AutoGen AgentChat (``autogen-agentchat`` / ``pyautogen`` 0.10).

::

    from anneal_memory.adapters.autogen import AnnealMemory

    memory = AnnealMemory("memory.db", model_client=client)
    agent = AssistantAgent("assistant", model_client=client, memory=[memory],
                           model_context=memory.model_context())

``AnnealMemory`` is a full ``autogen_core.memory.Memory``; the model context records every
message, because the agent never calls ``Memory.add`` itself. See docs/integrations/autogen.md.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import autogen_core.memory  # noqa: F401
    import autogen_core.model_context  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("autogen", "autogen") from exc

from ._context import RecordingChatCompletionContext
from ._memory import MEMORY_SOURCE, AnnealMemory, AnnealMemoryConfig

__all__ = ["MEMORY_SOURCE", "AnnealMemory", "AnnealMemoryConfig", "RecordingChatCompletionContext"]
