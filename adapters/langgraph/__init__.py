"""anneal-memory for LangGraph (``pip install 'anneal-memory[langgraph]'``).

- :class:`AnnealMiddleware`: an ``AgentMiddleware`` for ``langchain.agents.create_agent``:
  continuity + recall injected into each model request (never into saved state), the
  user's request, model steps, tool results and the final answer recorded, and the wrap
  through the agent's own model.
- :class:`AnnealStore`: a LangGraph ``BaseStore`` over the episodic store, so
  ``create_agent(store=...)``, ``compile(store=...)`` and ``runtime.store`` get anneal memory.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import langchain.agents.middleware  # noqa: F401
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("langgraph", "langgraph") from exc

from .middleware import AnnealMiddleware
from .store import AnnealStore

__all__ = ["AnnealMiddleware", "AnnealStore"]
