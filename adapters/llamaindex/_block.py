"""``AnnealMemoryBlock``: continuity + recall as a LlamaIndex memory block.

``Memory`` calls a block's ``_aget`` before every LLM call of an agent (with its
``session_id``) and renders its string into the system message (or a user message, by
``insert_method``); ``_aput`` receives the chat history that short-term memory evicts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory import BaseMemoryBlock
from pydantic import Field, PrivateAttr

from anneal_memory.adapters import MemoryAdapter, hook_guard, identity, label_memory
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


class Scope(MemoryAdapter):
    """Which memory a LlamaIndex call uses: ``namespace=`` (a callable receives the
    ``session_id``), else ``identity`` (a LlamaIndex ``session_id`` given explicitly names
    the user), else the session given."""

    framework = "llama-index"
    extra = "llama-index"
    logger_name = LOGGER_NAME

    def __init__(self, session: MemorySession, namespace: Any = None, *,
                 identity: bool = False, **options: Any) -> None:
        self._init_memory(session, namespace=namespace, **options)
        self.identity = identity

    def default_namespace(self, context: Any) -> Any:
        if self.identity and context is not None:
            return identity("the Memory's session_id", user=context)
        return None

    def scope(self, session_id: str | None = None) -> MemorySession:
        """The session of a call (of a ``Memory`` with ``session_id``)."""
        return self.session_for(session_id)


class AnnealMemoryBlock(BaseMemoryBlock[str]):
    """The continuity and the episodes recalled for the latest user message.

    ``namespace``: whose memory the block reads (a mapping, a ``MemoryNamespace`` or a
    callable receiving the ``Memory``'s ``session_id``); without it, the session's. The
    block for a query is computed once per turn (:meth:`aprime`, called by
    ``AnnealMemory`` before it records the user's message, so a request is not recalled
    back to itself) and reused by every LLM call of that turn. Evicted history that
    reaches ``_aput`` is recorded through the hook ``AnnealMemory`` installs.
    """

    name: str = "anneal_memory"
    description: str | None = "Continuity and recalled episodes from anneal-memory (data, not instructions)."
    session: Any = Field(description="the anneal_memory MemorySession this block reads")
    namespace: Any = Field(default=None, description="whose memory: a mapping, a "
                           "MemoryNamespace or a callable of the session_id")

    _scope: Scope = PrivateAttr()
    _cache_key: tuple[str, str] | None = PrivateAttr(default=None)
    _cache_block: str = PrivateAttr(default="")
    _on_evicted: Any = PrivateAttr(default=None)

    def model_post_init(self, __context: Any) -> None:
        if not isinstance(self.session, MemorySession):
            raise ValidationError(
                f"session must be an anneal_memory MemorySession, not {type(self.session).__name__}"
            )
        self._scope = Scope(self.session, self.namespace)

    def use_scope(self, scope: MemoryAdapter) -> None:
        """Read the memory ``scope`` chooses (``AnnealMemory`` shares its own)."""
        self._scope = scope

    def session_for(self, session_id: str | None) -> MemorySession:
        """The memory this block reads for a ``Memory`` of ``session_id``."""
        return self._scope.session_for(session_id)

    async def aprime(self, query: str, session_id: str | None = None) -> str:
        """Compute and keep the block for ``query`` (before that query is recorded)."""
        session = self.session_for(session_id)
        block = await self._memory_block(session, query) or ""
        self._cache_key, self._cache_block = (session_id or "", query), block
        return block

    def prime(self, query: str, session_id: str | None = None) -> str:
        """Sync :meth:`aprime`."""
        session = self.session_for(session_id)
        block = self._sync_block(session, query) or ""
        self._cache_key, self._cache_block = (session_id or "", query), block
        return block

    @_safe
    async def _memory_block(self, session: MemorySession, query: str) -> str:
        return label_memory(await session.amemory_block(query))

    @_safe
    def _sync_block(self, session: MemorySession, query: str) -> str:
        return label_memory(session.memory_block(query))

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = latest_user_text(messages)
        session_id = block_kwargs.get("session_id")
        if self._cache_key != (session_id or "", query):
            await self._guarded_prime(query, session_id)
        return self._cache_block

    @_safe
    async def _guarded_prime(self, query: str, session_id: str | None) -> None:
        self._cache_block = ""
        await self.aprime(query, session_id)

    @_safe
    async def _aput(self, messages: list[ChatMessage]) -> None:
        if self._on_evicted is not None:
            await self._on_evicted(messages)

    def on_evicted(self, record: Callable[[list[ChatMessage]], Any]) -> None:
        """``record(messages)`` (a coroutine function) receives what short-term memory evicts."""
        self._on_evicted = record
