"""OpenAI Agents SDK adapter: run hooks, memory instructions and a store-backed ``Session``.

::

    from anneal_memory import Store
    from anneal_memory.adapters.openai_agents import AnnealMemory

    memory = AnnealMemory(Store("memory.db"))
    agent = Agent(name="helper", instructions=memory.instructions("You are helpful."),
                  hooks=memory.agent_hooks)
    result = await Runner.run(agent, "hello", session=memory.conversation("user-42"),
                              run_config=memory.run_config())

Install with ``pip install 'anneal-memory[openai-agents]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("openai-agents", "openai-agents", "agents")

from ._hooks import LOGGER_NAME, AnnealMemory, model_compressor, split_memory  # noqa: E402
from ._items import item_text  # noqa: E402
from ._session import COLLECTION, AnnealSession  # noqa: E402

__all__ = ["COLLECTION", "LOGGER_NAME", "AnnealMemory", "AnnealSession", "item_text",
           "model_compressor", "split_memory"]
