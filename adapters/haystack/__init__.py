"""anneal-memory for Haystack Agents: hooks on all six points of the Agent's run loop.

::

    from anneal_memory.adapters.haystack import AnnealMemory

    memory = AnnealMemory("memory.db", chat_generator=generator, wrap_on_end=True)
    agent = Agent(chat_generator=generator, tools=tools, hooks=memory.hooks())

See docs/integrations/haystack.md.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import haystack.hooks  # noqa: F401
    from haystack.components.agents.state.state import State  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("haystack", "haystack") from exc

from ._memory import HOOK_POINTS, AnnealMemory, AnnealMemoryHook

__all__ = ["HOOK_POINTS", "AnnealMemory", "AnnealMemoryHook"]
