"""Pydantic AI adapter: anneal memory as a capability on any ``pydantic_ai.Agent``.

::

    from anneal_memory import Store
    from anneal_memory.adapters.pydantic_ai import AnnealMemory

    memory = AnnealMemory(Store("memory.db"), wrap_on_end=True)
    agent = Agent(model, capabilities=[memory])

Install with ``pip install 'anneal-memory[pydantic-ai]'``.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import pydantic_ai.capabilities  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("pydantic-ai", "pydantic-ai") from exc

from .capability import AnnealMemory, model_compressor

__all__ = ["AnnealMemory", "model_compressor"]
