"""smolagents adapter: anneal memory around any ``MultiStepAgent`` (``ToolCallingAgent``, ``CodeAgent``).

::

    from anneal_memory import Store
    from anneal_memory.adapters.smolagents import AnnealMemory

    memory = AnnealMemory(Store("memory.db"), namespace={"user": "alice"}, wrap_on_end=True)
    agent = memory.attach(ToolCallingAgent(tools=[...], model=model))
    answer = agent.run("What did we decide about the pump?")

Install with ``pip install 'anneal-memory[smolagents]'``.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import smolagents  # noqa: F401
    import smolagents.memory  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("smolagents", "smolagents") from exc

from ._memory import LOGGER_NAME, AnnealMemory, RunContext, model_compressor

__all__ = ["LOGGER_NAME", "AnnealMemory", "RunContext", "model_compressor"]
