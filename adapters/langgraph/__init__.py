"""anneal-memory for LangGraph (``pip install 'anneal-memory[langgraph]'``).

- :class:`AnnealMiddleware`: an ``AgentMiddleware`` for ``langchain.agents.create_agent``:
  continuity + recall injected into each model request (never into saved state), the
  user's request, model steps, tool results and the final answer recorded in the run's
  own memory (its namespace from the run context), and the wrap through the agent's model.
- :class:`AnnealStore`: a LangGraph ``BaseStore`` over the store's item collections, so
  ``create_agent(store=...)``, ``compile(store=...)`` and ``runtime.store`` keep their
  items in the same database; vector search (``index=``, ``fields`` or ``text_fields``)
  and expiry (``ttl=``, ``put(..., ttl=...)``, the TTL sweeper) as LangGraph's own stores.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("langgraph", "langgraph", "langchain.agents.middleware", "langgraph.store.base")

from anneal_memory.adapters.langchain import from_tuple, identity_of, model_compressor  # noqa: E402

from ._middleware import LOGGER_NAME, AnnealMiddleware  # noqa: E402
from ._store import COLLECTION, AnnealStore, matches  # noqa: E402

__all__ = ["COLLECTION", "LOGGER_NAME", "AnnealMiddleware", "AnnealStore", "from_tuple",
           "identity_of", "matches", "model_compressor"]
