"""``autogen_core.memory.Memory`` backed by an anneal-memory store.

AutoGen's ``AssistantAgent`` calls ``update_context`` before each reply (recall) but never
``add``, so recording happens in :class:`~._context.RecordingChatCompletionContext`, which
:meth:`AnnealMemory.model_context` hands out already wired to this memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from autogen_core import CancellationToken, Component, ComponentModel
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import ChatCompletionClient, SystemMessage, UserMessage
from pydantic import BaseModel
from typing_extensions import Self

from anneal_memory import Store
from anneal_memory.adapters import attach_memory, check_memory_role, hook_guard
from anneal_memory.errors import ValidationError
from anneal_memory.recall import retrieve_relevant
from anneal_memory.session import MemorySession, WrapOutcome

LOGGER_NAME = "anneal_memory.adapters.autogen"
logger = logging.getLogger(LOGGER_NAME)
_safe = hook_guard(LOGGER_NAME)

#: ``source`` of the message this memory injects; the recording context skips it.
MEMORY_SOURCE = "anneal_memory"

Compress = Callable[[str], "str | Awaitable[str]"]
_TEXT_MIMES = {MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value, "text/plain", "text/markdown"}


class AnnealMemoryConfig(BaseModel):
    """What ``dump_component`` saves: the database path and the options."""

    store: str
    name: str | None = None
    project_name: str | None = None
    session_id: str | None = None
    recall_limit: int = 5
    max_content_chars: int = 4000
    memory_role: Literal["user", "system"] = "user"
    wrap_on_end: bool = False
    record_tool_calls: bool = False
    model_client: ComponentModel | None = None


class AnnealMemory(Memory, Component[AnnealMemoryConfig]):
    """Durable, governed memory for AutoGen agents (``AssistantAgent(memory=[...])``).

    ``model_client`` writes the continuity at the wrap (normally the agent's own client);
    ``compress`` overrides it with any ``prompt -> text`` callable (sync or async).
    ``wrap_on_end`` (default False) wraps each time the agent gives a text answer; otherwise
    call :meth:`awrap`. ``clear()`` never deletes stored episodes: see :meth:`clear`.
    ``store`` is a path (opened and owned: :meth:`close` closes it), a Store, or a ready
    MemorySession (then the session options go to it).
    """

    component_type = "memory"
    component_provider_override = "anneal_memory.adapters.autogen.AnnealMemory"
    component_config_schema = AnnealMemoryConfig

    def __init__(
        self,
        store: Store | MemorySession | str | os.PathLike[str],
        *,
        name: str | None = None,
        project_name: str | None = None,
        session_id: str | None = None,
        model_client: ChatCompletionClient | None = None,
        compress: Compress | None = None,
        wrap_on_end: bool = False,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
        memory_role: Literal["user", "system"] = "user",
        record_tool_calls: bool = False,
        strict: bool | None = None,
    ) -> None:
        check_memory_role(memory_role)
        if model_client is not None and not isinstance(model_client, ChatCompletionClient):
            raise ValidationError("model_client must be an autogen_core ChatCompletionClient, "
                                  f"got {type(model_client).__name__}")
        if wrap_on_end and compress is None and model_client is None:
            raise ValidationError("wrap_on_end=True needs a model to write the continuity: pass "
                                  "model_client= (usually the agent's own) or compress=<callable>")
        attach_memory(self, store, LOGGER_NAME, compress=compress, wrap_on_end=wrap_on_end,
                      project_name=project_name, session_id=session_id, recall_limit=recall_limit,
                      max_content_chars=max_content_chars, strict=strict)
        self._name = name or "anneal_memory"
        self.project_name = project_name
        self.model_client = model_client
        self.memory_role = memory_role
        self.record_tool_calls = record_tool_calls

    @property
    def name(self) -> str:
        return self._name

    @property
    def store(self) -> Store:
        return self.session.store

    @property
    def recall_limit(self) -> int:
        return self.session.recall_limit

    def model_context(self, inner: ChatCompletionContext | None = None) -> ChatCompletionContext:
        """A model context that records every message into this memory (pass it as
        ``AssistantAgent(model_context=...)``); ``inner`` keeps your own context's policy."""
        from ._context import RecordingChatCompletionContext

        return RecordingChatCompletionContext(self, inner)

    # --- the Memory protocol ---------------------------------------------------------
    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recall for the latest user message; inject continuity + recall once per query."""
        results = await self._inject_memory(model_context)
        return UpdateContextResult(memories=MemoryQueryResult(results=results or []))

    @_safe
    async def _inject_memory(self, model_context: ChatCompletionContext) -> list[MemoryContent]:
        messages = await model_context.get_messages()
        query = _latest_user_text(messages)
        block = self.session.memory_block(query)
        # the injected message stays in the context for later turns: do not stack copies
        if not block or any(getattr(m, "content", None) == block for m in messages):
            return []
        if self.memory_role == "system":
            await model_context.add_message(SystemMessage(content=block))
        else:
            await model_context.add_message(UserMessage(content=block, source=MEMORY_SOURCE))
        results = [MemoryContent(content=block, mime_type=MemoryMimeType.MARKDOWN,
                                 metadata={"kind": "memory_block"})]
        results.extend(MemoryContent(content=item, mime_type=MemoryMimeType.TEXT,
                                     metadata={"kind": "recalled"})
                       for item in self.session.recall_items(query or ""))
        return results

    async def query(self, query: str | MemoryContent = "",
                    cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """Scored recall. ``limit=`` overrides ``recall_limit``; an empty query returns the
        newest episodes (like ``ListMemory`` returning everything)."""
        text = _content_text(query) if isinstance(query, MemoryContent) else str(query or "")
        limit = int(kwargs.get("limit") or self.recall_limit)
        if text.strip():
            # context=False: an item store's query answers matches, not their neighbours
            found = retrieve_relevant(self.store, self.session.crystal_store, text,
                                      max_episodes=limit, max_patterns=0, context=False)
            return MemoryQueryResult(results=self._to_contents(found.episodes))
        episodes = self.store.recall(limit=limit).episodes
        return MemoryQueryResult(results=[_episode_content(e) for e in episodes])

    async def add(self, content: MemoryContent,
                  cancellation_token: CancellationToken | None = None) -> None:
        """Record one episode. ``metadata`` may carry ``type`` (default observation), ``trust``
        and ``source``; JSON content is stored as its JSON text. Images and bytes are refused."""
        mime = _mime(content)
        if mime not in _TEXT_MIMES and mime != MemoryMimeType.JSON.value:
            raise ValidationError(f"AnnealMemory stores text: a {mime} MemoryContent cannot be "
                                  "recorded; describe it in text and add that instead")
        metadata = dict(content.metadata or {})
        episode_type = metadata.pop("type", "observation")
        trust = metadata.pop("trust", "agent")
        source = metadata.pop("source", None)
        self.session.record(_content_text(content), episode_type, trust=trust, source=source,
                            metadata=metadata or None)

    async def clear(self) -> None:
        """Start a fresh memory session; the stored episodes stay.

        The store is the agent's durable memory, so ``clear`` only drops this conversation's
        session state (its record de-duplication), and logs a warning saying so. Episodes the
        current session recorded still go to the next wrap. To remove episodes use
        :meth:`delete` (one id) or the store itself.
        """
        logger.warning("AnnealMemory.clear() keeps the stored episodes (durable memory) and only "
                       "starts a fresh session; use AnnealMemory.delete(episode_id) to remove one.")
        old = self.session
        self.session = MemorySession(old.store, session_id=old.session_id,
                                     crystal_store=old.crystal_store,
                                     recall_limit=old.recall_limit,
                                     max_content_chars=old.max_content_chars, strict=old.strict,
                                     logger=old.log)
        self.session.owns_store = old.owns_store

    async def close(self) -> None:
        """Close the store if this memory opened it."""
        self.session.close()

    # --- beyond the protocol --------------------------------------------------------
    async def delete(self, episode_id: str) -> bool:
        """Delete one episode by id; False when there was no such episode."""
        return self.store.delete(episode_id)

    async def awrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Compress the session's episodes into the continuity (never loses episodes)."""
        return await self.session.awrap_first(
            compress, self.compress, self._client_compress if self.model_client is not None else None)

    def wrap(self, compress: Compress | None = None) -> WrapOutcome:
        """Sync :meth:`awrap`, for code outside an event loop."""
        return asyncio.run(self.awrap(compress))

    async def _client_compress(self, prompt: str) -> str:
        assert self.model_client is not None  # awrap offers this compressor only with a client
        result = await self.model_client.create([UserMessage(content=prompt, source=MEMORY_SOURCE)])
        if not isinstance(result.content, str):
            raise ValidationError("the model answered the wrap prompt with tool calls, not text")
        return result.content

    def _to_contents(self, scored: list[Any] | None) -> list[MemoryContent]:
        return [MemoryContent(content=s.content, mime_type=MemoryMimeType.TEXT, metadata={
            "id": s.id, "type": str(s.type), "trust": s.trust, "source": s.source,
            "timestamp": s.timestamp, "score": s.score}) for s in scored or []]

    # --- component config ------------------------------------------------------------
    def _to_config(self) -> AnnealMemoryConfig:
        return AnnealMemoryConfig(
            store=os.fspath(self.store.path), name=self._name, project_name=self.project_name,
            memory_role=self.memory_role, wrap_on_end=self.wrap_on_end,
            record_tool_calls=self.record_tool_calls, session_id=self.session.session_id,
            recall_limit=self.recall_limit, max_content_chars=self.session.max_content_chars,
            model_client=self.model_client.dump_component() if self.model_client else None)

    @classmethod
    def _from_config(cls, config: AnnealMemoryConfig) -> Self:
        data = config.model_dump(exclude={"model_client"})
        client = (ChatCompletionClient.load_component(config.model_client)
                  if config.model_client is not None else None)
        return cls(data.pop("store"), model_client=client, **data)


def _mime(content: MemoryContent) -> str:
    mime = content.mime_type
    return mime.value if isinstance(mime, MemoryMimeType) else str(mime)


def _content_text(content: MemoryContent) -> str:
    if isinstance(content.content, str):
        return content.content
    if isinstance(content.content, dict):
        return json.dumps(content.content, sort_keys=True, default=str)
    return str(content.content)


def _episode_content(episode: Any) -> MemoryContent:
    return MemoryContent(content=episode.content, mime_type=MemoryMimeType.TEXT, metadata={
        "id": episode.id, "type": str(episode.type), "trust": episode.trust,
        "source": episode.source, "timestamp": episode.timestamp})


def _latest_user_text(messages: list[Any]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, UserMessage) and message.source != MEMORY_SOURCE:
            return message.content if isinstance(message.content, str) else " ".join(
                part for part in message.content if isinstance(part, str))
    return None

