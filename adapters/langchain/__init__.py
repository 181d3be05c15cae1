"""anneal-memory for LangChain (``pip install 'anneal-memory[langchain]'``).

Three native LangChain extension points, built on ``langchain-core`` only:

- :class:`AnnealCallbackHandler`: records the root run's input and answer, tool results
  (``trust="tool"``) and, optionally, every model step; it can wrap at the end.
- :class:`AnnealChatMessageHistory`: a ``BaseChatMessageHistory`` whose messages are episodes.
- :class:`AnnealRetriever`: a ``BaseRetriever`` over scored recall, for any LCEL chain.
"""

from __future__ import annotations

from anneal_memory.errors import MissingExtraError

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("langchain", "langchain") from exc

from .callbacks import AnnealCallbackHandler
from .history import AnnealChatMessageHistory
from .messages import chat_model_compress, message_text
from .retriever import AnnealRetriever

__all__ = [
    "AnnealCallbackHandler",
    "AnnealChatMessageHistory",
    "AnnealRetriever",
    "chat_model_compress",
    "message_text",
]
