"""anneal-memory for LangChain (``pip install 'anneal-memory[langchain]'``).

Three native LangChain extension points, built on ``langchain-core`` only:

- :class:`AnnealRetriever`: a ``BaseRetriever`` over scored recall (and the continuity),
  with :func:`format_memory_documents` to put its documents in a prompt as labelled data.
- :class:`AnnealCallbackHandler`: records the root run's input and answer, tool results
  (``trust="tool"``) and, optionally, every model step; it can wrap at the end.
- :class:`AnnealChatMessageHistory`: a ``BaseChatMessageHistory`` whose transcript lives
  in the store's database and whose messages become memory through the core session.

Each takes the run's identity (``user_id`` ... in the run's metadata or configurable, or
``namespace=``) so one user's memory never answers another's run.
"""

from __future__ import annotations

from anneal_memory.adapters import require_extra

require_extra("langchain", "langchain", "langchain_core")

from ._callbacks import LOGGER_NAME, AnnealCallbackHandler  # noqa: E402
from ._history import COLLECTION, AnnealChatMessageHistory  # noqa: E402
from ._identity import from_tuple, identity_of, is_template  # noqa: E402
from ._messages import message_text, model_acompressor, model_compressor  # noqa: E402
from ._retriever import AnnealRetriever, format_memory_documents  # noqa: E402

__all__ = [
    "COLLECTION",
    "LOGGER_NAME",
    "AnnealCallbackHandler",
    "AnnealChatMessageHistory",
    "AnnealRetriever",
    "format_memory_documents",
    "from_tuple",
    "identity_of",
    "is_template",
    "message_text",
    "model_acompressor",
    "model_compressor",
]
