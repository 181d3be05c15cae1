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

from anneal_memory.adapters import require_extra

require_extra("smolagents", "smolagents", "smolagents", "smolagents.memory")

from ._memory import LOGGER_NAME, AnnealMemory, RunContext, model_compressor  # noqa: E402

__all__ = ["LOGGER_NAME", "AnnealMemory", "RunContext", "model_compressor"]
