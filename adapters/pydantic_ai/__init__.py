"""Pydantic AI adapter: anneal memory as a capability on any ``pydantic_ai.Agent``.

::

    from anneal_memory import Store
    from anneal_memory.adapters.pydantic_ai import AnnealMemory

    memory = AnnealMemory(Store("memory.db"), namespace=lambda ctx: {"user": ctx.deps.user_id})
    agent = Agent(model, deps_type=Deps, capabilities=[memory])

Install with ``pip install 'anneal-memory[pydantic-ai]'``.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("pydantic-ai", "pydantic-ai", "pydantic_ai.capabilities")

from ._capability import LOGGER_NAME, AnnealMemory, model_compressor  # noqa: E402

__all__ = ["LOGGER_NAME", "AnnealMemory", "model_compressor"]
