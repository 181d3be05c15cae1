"""OpenAI Agents SDK adapter: run hooks, memory instructions and a store-backed ``Session``.

::

    from anneal_memory import Store
    from anneal_memory.adapters.openai_agents import AnnealMemory, AnnealSession

    memory = AnnealMemory(Store("memory.db"), wrap_on_end=True)
    agent = Agent(name="helper", instructions=memory.instructions("You are helpful."),
                  hooks=memory.agent_hooks)
    result = await Runner.run(agent, "hello")

Install with ``pip install 'anneal-memory[openai-agents]'``.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("openai-agents", "openai-agents") from exc

from .hooks import AnnealMemory, model_compressor
from .items import item_text
from .transcript import AnnealSession

__all__ = ["AnnealMemory", "AnnealSession", "item_text", "model_compressor"]
