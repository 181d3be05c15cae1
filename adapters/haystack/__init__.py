"""anneal-memory for Haystack Agents: hooks on all six points of the Agent's run loop.

::

    from anneal_memory.adapters.haystack import AnnealMemory

    memory = AnnealMemory("memory.db", chat_generator=generator, wrap_on_end=True)
    agent = Agent(chat_generator=generator, tools=tools, hooks=memory.hooks())
    agent.run(messages=[...], hook_context={"user_id": "alice"})   # alice's memory

See docs/integrations/haystack.md.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("haystack", "haystack", "haystack.hooks", "haystack.components.agents.state.state")

from ._memory import HOOK_POINTS, IDENTITY_KEYS, AnnealMemory, AnnealMemoryHook  # noqa: E402

__all__ = ["HOOK_POINTS", "IDENTITY_KEYS", "AnnealMemory", "AnnealMemoryHook"]
