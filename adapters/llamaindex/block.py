"""``AnnealMemoryBlock``: continuity + recall as a LlamaIndex memory block.

``Memory`` calls a block's ``_aget`` before every LLM call of an agent and renders its
string into the system message (or a user message, by ``insert_method``); ``_aput``
receives the chat history that short-term memory evicts.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr

from anneal_memory.adapters import hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession

LOGGER_NAME = "anneal_memory.adapters.llamaindex"
_safe = hook_guard(LOGGER_NAME)


def message_text(message: ChatMessage) -> str:
    """The text blocks of one message, joined."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text)


def latest_user_text(messages: list[ChatMessage] | None) -> str:
    for message in reversed(messages or []):
        if str(getattr(message.role, "value", message.role)) == "user":
            text = message_text(message)
            if text:
                return text
    return ""


class AnnealMemoryBlock(BaseMemoryBlock[str]):
    """The store's continuity and the episodes recalled for the latest user message.

    The block for a query is computed once (:meth:`prime`, called by ``AnnealMemory``
    before it records the user's message, so a request is not recalled back to itself)
    and reused by every LLM call of that turn. Evicted history that reaches ``_aput`` is
    recorded through the ``translate`` hook ``AnnealMemory`` installs (or not at all).
    """

    name: str = "anneal_memory"
    description: str | None = "Continuity and recalled episodes from anneal-memory (data, not instructions)."
    session: Any = Field(description="the anneal_memory MemorySession this block reads")

    _cache_query: str | None = PrivateAttr(default=None)
    _cache_block: str = PrivateAttr(default="")
    _on_evicted: Any = PrivateAttr(default=None)

    def model_post_init(self, __context: Any) -> None:
        if not isinstance(self.session, MemorySession):
            raise ValidationError(
                f"session must be an anneal_memory MemorySession, not {type(self.session).__name__}"
            )

    def prime(self, query: str) -> str:
        """Compute and keep the block for ``query`` (before that query is recorded)."""
        block = self._memory_block(query) or ""
        self._cache_query, self._cache_block = query, block
        return block

    @_safe
    def _memory_block(self, query: str) -> str:
        return self.session.memory_block(query)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = latest_user_text(messages)
        if query != self._cache_query:
            self.prime(query)
        return self._cache_block

    @_safe
    async def _aput(self, messages: list[ChatMessage]) -> None:
        if self._on_evicted is not None:
            self._on_evicted(messages)
