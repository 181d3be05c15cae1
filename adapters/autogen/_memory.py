"""``autogen_core.memory.Memory`` backed by an anneal-memory store.

``AssistantAgent(memory=[memory])`` calls ``update_context`` once per turn, after the turn's
incoming messages are in the model context and before the first inference. That call
recalls for the latest request and puts one labelled memory message into the context
(replacing the one of the turn before, so copies never pile up), and attaches a recorder
to the context (see ``_context.py``), so everything the turn adds is recorded too.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from typing import TYPE_CHECKING, Any, Literal

from autogen_core import CancellationToken, Component, ComponentModel
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext, UnboundedChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from pydantic import BaseModel
from typing_extensions import Self

from anneal_memory import Store, retrieve_relevant
from anneal_memory.adapters import (
    Compress,
    MemoryAdapter,
    from_item_value,
    hook_guard,
    item_value,
    label_memory,
    options_except,
)
from anneal_memory.errors import ValidationError
from anneal_memory.session import MemorySession, WrapOutcome

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from anneal_memory.adapters import MemoryKwargs, MemoryOptions

from ._context import (
    MEMORY_SOURCE,
    ContextState,
    attach_recorder,
    is_memory_message,
    latest_incoming,
    message_text,
    remove_memory_messages,
    trailing_incoming,
)

LOGGER_NAME = "anneal_memory.adapters.autogen"
_safe = hook_guard(LOGGER_NAME)

_TEXT_MIMES = {MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value, "text/plain", "text/markdown"}
_JSON_MIMES = {MemoryMimeType.JSON.value, "application/json"}
#: episode metadata key holding what ``add`` was given (mime type and the caller's metadata)
_ADDED = "memory_content"


class AnnealMemoryConfig(BaseModel):
    """What ``dump_component`` saves: the database path, the namespace and the options."""

    store: str
    name: str | None = None
    namespace: dict[str, Any] | None = None
    project_name: str | None = None
    session_id: str | None = None
    recall_limit: int = 5
    max_content_chars: int = 4000
    memory_role: Literal["user", "system"] = "user"
    wrap_on_end: bool = False
    record_tool_calls: bool = False
    model_client: ComponentModel | None = None


class AnnealMemory(MemoryAdapter, Memory, Component[AnnealMemoryConfig]):
    """Durable, governed memory for AutoGen agents: ``AssistantAgent(memory=[memory])``.

    ``namespace``: whose memory this is (``{"user": "alice"}``, a ``MemoryNamespace``, or a
    callable receiving the turn's incoming ``UserMessage``, whose ``source`` names the
    sender). AutoGen carries no user identity, so give each user their own memory (as with
    autogen-ext's ``Mem0Memory(user_id=...)``); they may share one store. Without it the
    whole store is one memory.

    ``model_client`` writes the continuity at the wrap (normally the agent's own client);
    ``compress`` overrides it with any ``prompt -> text`` callable (sync or async).
    ``wrap_on_end`` (default False) wraps each time the agent gives a text answer; otherwise
    call :meth:`awrap`. ``store`` is a path (opened and owned: :meth:`close` closes it), a
    Store, or a ready MemorySession (then the session options go to it).
    """

    framework = "autogen"
    extra = "autogen"
    logger_name = LOGGER_NAME

    component_type = "memory"
    component_provider_override = "anneal_memory.adapters.autogen.AnnealMemory"
    component_config_schema = AnnealMemoryConfig

    memory_options = options_except("crystal_store")

    def __init__(self, store: Store | MemorySession | str | os.PathLike[str], *,
                 name: str | None = None, model_client: ChatCompletionClient | None = None,
                 record_tool_calls: bool = False, options: MemoryOptions | None = None,
                 **memory: Unpack[MemoryKwargs]) -> None:
        opts = self._memory_options(options, memory)
        if model_client is not None and not isinstance(model_client, ChatCompletionClient):
            raise ValidationError("model_client must be an autogen_core ChatCompletionClient, "
                                  f"got {type(model_client).__name__}")
        if opts.wrap_on_end and opts.compress is None and model_client is None:
            raise ValidationError("wrap_on_end=True needs a model to write the continuity: pass "
                                  "model_client= (usually the agent's own) or compress=<callable>")
        self._init_memory(store, opts)
        self._name = name or "anneal_memory"
        self.project_name = opts.project_name
        self.model_client = model_client
        self.record_tool_calls = record_tool_calls
        self._contexts: weakref.WeakKeyDictionary[ChatCompletionContext, ContextState] = \
            weakref.WeakKeyDictionary()
        self._last: MemorySession | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def store(self) -> Store:
        """The store of this memory's namespace (the whole store without one)."""
        return self.scope().store

    @property
    def recall_limit(self) -> int:
        return self.base_session.recall_limit

    def scope(self, message: UserMessage | None = None) -> MemorySession:
        """The session of this memory's namespace (for a callable namespace: of ``message``,
        else of the last turn)."""
        if message is None and callable(self._anneal.namespace):
            if self._last is None:
                raise ValidationError("this memory's namespace is a callable and no turn has run "
                                      "yet: there is no namespace to act on")
            return self._last
        return self.session_for(message)

    def model_context(self, inner: ChatCompletionContext | None = None) -> ChatCompletionContext:
        """``inner`` (default ``UnboundedChatCompletionContext()``) with the recorder attached
        now, so it records from the first message. Not needed with ``memory=[memory]``,
        which attaches it on the first turn; the context stays the class it is, so
        ``agent.dump_component()`` keeps working."""
        context = inner if inner is not None else UnboundedChatCompletionContext()
        attach_recorder(self._contexts, self._record_message, context)
        return context

    # --- the Memory protocol ---------------------------------------------------------
    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recall for the latest request; one labelled memory message in the context."""
        results = await self._update(model_context)
        return UpdateContextResult(memories=MemoryQueryResult(results=results or []))

    @_safe
    async def _update(self, model_context: ChatCompletionContext) -> list[MemoryContent]:
        state, new = attach_recorder(self._contexts, self._record_message, model_context)
        messages = list(await model_context.get_messages())
        if new:  # this turn's request came in before the recorder was there
            for message in trailing_incoming(messages):
                await self._record_message(model_context, message)
        latest = latest_incoming(messages)
        session = state.session or self.scope(latest)
        self._last = session
        query = message_text(latest.content) if latest is not None else None
        block = await session.amemory_block(query)
        if not remove_memory_messages(model_context):
            # a context that keeps its messages elsewhere: never stack an identical copy
            if any(is_memory_message(m) and m.content == label_memory(block) for m in messages):
                return []
        if not block:
            return []
        text = label_memory(block)
        injected: LLMMessage = (SystemMessage(content=text) if self.memory_role == "system"
                                else UserMessage(content=text, source=MEMORY_SOURCE))
        state.injected = injected
        await model_context.add_message(injected)
        results = [MemoryContent(content=block, mime_type=MemoryMimeType.MARKDOWN,
                                 metadata={"kind": "memory_block"})]
        results.extend(MemoryContent(content=item, mime_type=MemoryMimeType.TEXT,
                                     metadata={"kind": "recalled"})
                       for item in await session.arecall_items(query or ""))
        return results

    async def query(self, query: str | MemoryContent = "",
                    cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """Scored recall in this memory's namespace. ``limit=`` overrides ``recall_limit``;
        an empty query returns the newest entries (``ListMemory`` returns all of them).
        What :meth:`add` stored comes back as it was given: its content (a dict for JSON),
        mime type and metadata (plus ``id``, ``type``, ``trust``, ``source``,
        ``timestamp``)."""
        text = _content_text(query) if isinstance(query, MemoryContent) else str(query or "")
        limit = int(kwargs.get("limit") or self.recall_limit)
        store = self.scope().store

        def run() -> list[MemoryContent]:
            if not text.strip():
                return [_episode_content(e) for e in store.recall(limit=limit).episodes]
            # context=False: an item store's query answers matches, not their neighbours
            scored = retrieve_relevant(store, self.base_session.crystal_store, text,
                                       max_episodes=limit, max_patterns=0,
                                       context=False).episodes
            full = store.get_many([s.id for s in scored])
            return [_episode_content(full[s.id], score=s.score) for s in scored if s.id in full]

        return MemoryQueryResult(results=await asyncio.to_thread(run))

    async def add(self, content: MemoryContent,
                  cancellation_token: CancellationToken | None = None) -> None:
        """Record one entry in this memory's namespace. ``metadata`` may carry ``type``
        (default observation), ``trust`` and ``source`` for the episode; all of it comes
        back from :meth:`query`. JSON content must be a dict (as autogen-ext's memories
        require) and comes back as the dict. Images and bytes are refused (anneal-memory
        stores text): both refusals are ValidationErrors (ValueErrors)."""
        mime = _mime(content)
        if mime not in _TEXT_MIMES and mime not in _JSON_MIMES:
            raise ValidationError(f"Unsupported content type {mime}: AnnealMemory stores text, "
                                  "so describe it in text and add that instead")
        if mime in _JSON_MIMES and not isinstance(content.content, dict):
            # as autogen-ext's memories (ChromaDB, Redis...): a JSON entry is an object
            raise ValidationError("JSON content must be a dict (a JSON object), not "
                                  f"{type(content.content).__name__}: wrap it, e.g. "
                                  "{'items': [...]}, or add it as text/plain")
        given = dict(content.metadata or {})
        session = self.scope()
        await session.arecord(_content_text(content), str(given.get("type", "observation")),
                              trust=str(given.get("trust", "agent")),
                              source=given.get("source"),
                              metadata={_ADDED: {"mime_type": mime,
                                                 # NaN / ±Infinity kept as ListMemory keeps
                                                 # them (the store's metadata is strict JSON)
                                                 "metadata": item_value(given)}})

    async def clear(self) -> None:
        """Delete every entry of this memory's namespace (a memory without a namespace is
        the whole store), as ``Memory.clear`` is defined. Other namespaces keep theirs."""
        store = self.scope().store

        def run() -> None:
            while True:
                ids = [e.id for e in store.recall(limit=500, include_superseded=True).episodes]
                if not any([store.delete(i) for i in ids]):
                    return

        await asyncio.to_thread(run)

    async def close(self) -> None:
        """Close the store if this memory opened it."""
        self.base_session.close()

    # --- beyond the protocol --------------------------------------------------------
    async def delete(self, episode_id: str) -> bool:
        """Delete one entry by id (``metadata["id"]`` of a query result); False when this
        namespace has no such entry."""
        return await asyncio.to_thread(self.scope().store.delete, episode_id)

    def framework_compressor(self, context: Any = None) -> Compress | None:
        """``model_client`` (normally the agent's own) writes the continuity."""
        return self._client_compress if self.model_client is not None else None

    async def awrap(self, compress: Compress | None = None, *, context: Any = None,
                    namespace: Any = None) -> WrapOutcome:
        """Compress the namespace's episodes into its continuity (never loses episodes):
        this memory's namespace (for a callable one: that of ``context``, a ``UserMessage``,
        else of the last turn), or ``namespace``."""
        session = (self.session_for(context, namespace=namespace)
                   if namespace is not None or context is not None else self.scope())
        return await session.awrap_first(self.compressor(compress))

    def wrap(self, compress: Compress | None = None, *, context: Any = None,
             namespace: Any = None) -> WrapOutcome:
        """Sync :meth:`awrap`, for code outside an event loop."""
        return asyncio.run(self.awrap(compress, context=context, namespace=namespace))

    async def _client_compress(self, prompt: str) -> str:
        assert self.model_client is not None  # awrap offers this compressor only with a client
        result = await self.model_client.create([UserMessage(content=prompt, source=MEMORY_SOURCE)])
        if not isinstance(result.content, str):
            raise ValidationError("the model answered the wrap prompt with tool calls, not text")
        return result.content

    # --- recording ------------------------------------------------------------------
    @_safe
    async def _record_message(self, context: ChatCompletionContext, message: LLMMessage) -> None:
        """Record one message the context stored; a text answer wraps with ``wrap_on_end``."""
        if is_memory_message(message) or isinstance(message, SystemMessage):
            return
        state = self._contexts.get(context)
        if state is None:
            return
        if isinstance(message, UserMessage):
            state.session = self.scope(message)
            text = message_text(message.content)
            if text:
                await state.session.arecord_user_input(text, metadata={"source": message.source})
            return
        session = state.session or self.scope()
        if isinstance(message, FunctionExecutionResultMessage):
            for result in message.content:
                await session.arecord_tool_output(
                    getattr(result, "name", "") or "tool", result.content,
                    metadata={"is_error": True} if result.is_error else None)
        elif isinstance(message, AssistantMessage):
            if isinstance(message.content, str):
                if message.content.strip():
                    await session.arecord_outcome(message.content,
                                                  metadata={"source": message.source})
                    await self.aend_run(session)
            elif self.record_tool_calls:
                for call in message.content:
                    await session.arecord_decision(f"called tool {call.name} with {call.arguments}")

    # --- component config ------------------------------------------------------------
    def _to_config(self) -> AnnealMemoryConfig:
        if callable(self._anneal.namespace):
            raise ValidationError("a namespace callable cannot be serialized: dump a memory "
                                  "with a fixed namespace= (a mapping)")
        ns = self.session_for(None).namespace
        return AnnealMemoryConfig(
            store=os.fspath(self.base_session.store.path), name=self._name,
            namespace=None if ns is None else ns.to_partial(),
            project_name=self.project_name,
            memory_role=self.memory_role, wrap_on_end=self._anneal.wrap_on_end,
            record_tool_calls=self.record_tool_calls, session_id=self.base_session.session_id,
            recall_limit=self.recall_limit, max_content_chars=self.base_session.max_content_chars,
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
    if isinstance(content.content, (dict, list)):
        return json.dumps(content.content, sort_keys=True, default=str)
    return str(content.content)


def _episode_content(episode: Any, *, score: float | None = None) -> MemoryContent:
    """An episode as ``MemoryContent``: what ``add`` stored comes back as it was given."""
    meta = dict(episode.metadata or {})
    added = meta.get(_ADDED) if isinstance(meta.get(_ADDED), dict) else None
    ours = {"id": episode.id, "type": str(episode.type), "trust": episode.trust,
            "source": episode.source, "timestamp": episode.timestamp}
    if score is not None:
        ours["score"] = score
    if added is None:
        return MemoryContent(content=episode.content, mime_type=MemoryMimeType.TEXT,
                             metadata={**meta, **ours})
    mime = str(added.get("mime_type") or MemoryMimeType.TEXT.value)
    content: Any = episode.content
    if mime in _JSON_MIMES:
        try:
            content = json.loads(episode.content)
        except ValueError:  # cut by max_content_chars: the text is all there is
            mime = MemoryMimeType.TEXT.value
    given = from_item_value(added.get("metadata") or {}, f"episode {episode.id}'s metadata")
    return MemoryContent(content=content, mime_type=mime, metadata={**ours, **dict(given)})
