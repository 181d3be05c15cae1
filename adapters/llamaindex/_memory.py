"""``AnnealMemory``: a LlamaIndex ``Memory`` that records every turn into anneal-memory.

LlamaIndex's memory blocks only see history when short-term memory overflows, so per-turn
recording happens one level up: this ``Memory`` subclass translates each message the agent
puts (``aput`` / ``aput_messages`` / ``aset``; the sync twins run them) onto the session:
user text -> ``record_user_input``, tool results -> ``record_tool_output`` (trust tool),
assistant text without tool calls -> ``record_outcome`` (and the wrap, with
``wrap_on_end``). Its :class:`AnnealMemoryBlock` supplies continuity + recall before every
LLM call. The agent that puts messages is noted, so ``agent.run(..., memory=memory)``
called directly leaves the memory as ready to wrap (with that agent's LLM) as
:meth:`AnnealMemory.arun` does.
"""

from __future__ import annotations

import os
import sys
from typing import Any, ClassVar

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.llm import LLM
from llama_index.core.memory import Memory
from pydantic import PrivateAttr

from anneal_memory import Store
from anneal_memory.adapters import (
    Compress,
    MemoryAdapter,
    MemoryOptions,
    check_identity,
    hook_guard,
    identity,
    open_session,
    options_except,
)
from anneal_memory.session import MemorySession, WrapOutcome

from ._block import LOGGER_NAME, AnnealMemoryBlock, message_text

_safe = hook_guard(LOGGER_NAME)

#: The memory tool's name: what it returns is memory already, never recorded again.
RECALL_TOOL_NAME = "recall_memory"


def llm_compressor(llm: Any) -> Compress:
    """A compressor that sends the wrap prompt to a LlamaIndex LLM as one user message.

    It calls ``llm.achat`` directly, outside any agent run and any memory, so the wrap is
    never recorded as a turn of the conversation.
    """

    async def compress(prompt: str) -> str:
        response = await llm.achat([ChatMessage(role="user", content=prompt)])
        return message_text(response.message) or (response.message.content or "")

    return compress


#: the name every adapter gives its framework-model compressor factory
model_compressor = llm_compressor


def _role(message: ChatMessage) -> str:
    return str(getattr(message.role, "value", message.role))


def _tool_calls(message: ChatMessage) -> list[tuple[str | None, str]]:
    """(call id, tool name) for each tool call an assistant message makes."""
    calls = [(b.tool_call_id, b.tool_name) for b in message.blocks
             if getattr(b, "block_type", None) == "tool_call"]
    for raw in message.additional_kwargs.get("tool_calls") or []:  # OpenAI-style messages
        fn = raw.get("function", {}) if isinstance(raw, dict) else getattr(raw, "function", None)
        name = fn.get("name") if isinstance(fn, dict) else getattr(fn, "name", None)
        call_id = raw.get("id") if isinstance(raw, dict) else getattr(raw, "id", None)
        calls.append((call_id, name or "tool"))
    return calls


def _calling_llm(depth: int = 16) -> LLM | None:
    """The LLM of the agent (or multi-agent workflow's root agent) whose step is putting
    messages into this memory: the frames above are that agent's coroutines."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        llm = getattr(owner, "llm", None)
        if isinstance(llm, LLM):
            return llm
        agents, root = getattr(owner, "agents", None), getattr(owner, "root_agent", None)
        if isinstance(agents, dict) and isinstance(getattr(agents.get(root), "llm", None), LLM):
            return agents[root].llm
        frame = frame.f_back
    return None


class AnnealMemory(MemoryAdapter, Memory):
    """LlamaIndex ``Memory`` backed by anneal-memory. Build it with :meth:`from_store`.

    Whose memory it is: ``namespace=`` if given (a callable receives the ``session_id``),
    else the ``session_id`` you pass (LlamaIndex's own identity of a chat: one user's
    memory, ``{"user": session_id}``), else the whole store. ``wrap_on_end`` (default
    ``False``): each final answer wraps; otherwise call :meth:`awrap` / :meth:`wrap` when
    the conversation ends. ``compress`` defaults to the LLM of the agent that used this
    memory last (or ``llm=``).
    """

    framework: ClassVar[str] = "llama-index"
    extra: ClassVar[str] = "llama-index"
    logger_name: ClassVar[str] = LOGGER_NAME

    _block: AnnealMemoryBlock = PrivateAttr()
    _record: dict[str, bool] = PrivateAttr(default_factory=dict)
    _tool_names: dict[str, str] = PrivateAttr(default_factory=dict)
    _last_llm: Any = PrivateAttr(default=None)
    _identity: bool = PrivateAttr(default=False)

    #: the shared options ``from_store`` takes as keywords (``session_id`` is LlamaIndex's
    #: chat id, ``embed_model`` the embedder)
    memory_options: ClassVar[tuple[str, ...]] = options_except(
        "memory_role", "project_name", "session_id", "embedder")

    @classmethod
    def from_store(
        cls,
        memory: Store | MemorySession | str | os.PathLike[str],
        *,
        session_id: str | None = None,
        llm: Any = None,
        record_user_input: bool = True,
        record_tools: bool = True,
        record_outcome: bool = True,
        record_evicted: bool = True,
        block_priority: int = 0,
        embed_model: Any = None,
        options: MemoryOptions | None = None,
        **memory_kwargs: Any,
    ) -> AnnealMemory:
        """A ``Memory`` (``Memory.from_defaults(session_id=..., **memory_kwargs)``) with the
        anneal block first.

        ``memory`` is a Store or a store path (a session is made for it; :meth:`close`
        closes a store it opened) or a ready MemorySession (then the session options go to
        it). The shared options (``namespace``, ``compress``, ``wrap_on_end``,
        ``recall_limit``, ``max_content_chars``, ``crystal_store``, ``strict``) are
        keywords, or one ``options=MemoryOptions(...)``; the other keywords go to
        ``Memory.from_defaults``. ``block_priority`` is the block's truncation priority (0:
        never truncated). ``embed_model`` (a LlamaIndex ``BaseEmbedding``; else
        ``options.embedder``) makes recall by meaning too: with a store path the Store
        opened embeds with it; a Store or session given must already embed with it
        (``Store(path, embedder=embed_model)``), else ``EmbedderError``.
        """
        shared = {k: memory_kwargs.pop(k) for k in cls.memory_options if k in memory_kwargs}
        opts = cls._memory_options(options, shared)
        MemorySession.check_compress(opts.compress)
        if session_id is not None:
            check_identity(session_id, "the Memory's session_id")
        session_options = opts.session_options()
        if embed_model is not None:
            session_options["embedder"] = embed_model
        session = open_session(memory, LOGGER_NAME, **session_options)
        try:
            return cls._build(session, opts, session_id, llm, record_user_input, record_tools,
                              record_outcome, record_evicted, block_priority, memory_kwargs)
        except Exception:
            session.close()  # a store this call opened (from a path) is closed again
            raise

    @classmethod
    def _build(cls, session: MemorySession, opts: MemoryOptions, session_id: str | None,
               llm: Any, record_user_input: bool, record_tools: bool, record_outcome: bool,
               record_evicted: bool, block_priority: int,
               memory_kwargs: dict[str, Any]) -> AnnealMemory:
        block = AnnealMemoryBlock(session=session, priority=block_priority)
        blocks = [block, *(memory_kwargs.pop("memory_blocks", None) or [])]
        mem = cls.from_defaults(session_id=session_id, memory_blocks=blocks, **memory_kwargs)
        mem._init_memory(session, MemoryOptions(namespace=opts.namespace, compress=opts.compress,
                                                wrap_on_end=opts.wrap_on_end,
                                                anonymous=opts.anonymous))
        mem._identity = session_id is not None
        mem._block = block
        block.use_scope(mem)
        mem._last_llm = llm
        mem._record = {"user": record_user_input, "tool": record_tools,
                       "outcome": record_outcome}
        if record_evicted:
            block.on_evicted(mem.atranslate)
        mem.scope()  # a namespace the store refuses raises now
        return mem  # type: ignore[return-value]

    # --- identity -------------------------------------------------------------------------
    def default_namespace(self, context: Any) -> Any:
        """A ``session_id`` given to :meth:`from_store` names the user."""
        if self._identity and context is not None:
            return identity("the Memory's session_id", user=context)
        return None

    def scope(self) -> MemorySession:
        """The anneal session this memory reads and records into (its namespace's)."""
        return self.session_for(self.session_id)

    # --- translation ----------------------------------------------------------------------
    async def atranslate(self, messages: list[ChatMessage]) -> None:
        """Record chat messages as typed episodes (a failure is logged; the others go on)."""
        for message in messages:
            await self._translate_one(message)

    @_safe
    async def _translate_one(self, message: ChatMessage) -> None:
        role, text = _role(message), message_text(message)
        session = self.scope()
        if role == "user" and text:
            await self._block.aprime(text, self.session_id)  # recall first: not recalled back
            if self._record.get("user", True):
                await session.arecord_user_input(text)
        elif role == "assistant":
            calls = _tool_calls(message)
            for call_id, name in calls:
                if call_id:
                    self._tool_names[call_id] = name
            if text and not calls and self._record.get("outcome", True):
                await session.arecord_outcome(text)
                await self.aend_run(session)
        elif role == "tool" and self._record.get("tool", True):
            call_id = message.additional_kwargs.get("tool_call_id")
            name = self._tool_names.get(call_id, message.additional_kwargs.get("name", "tool"))
            output = text or str(message.content or "")
            if output and name != RECALL_TOOL_NAME:
                await session.arecord_tool_output(name, output)

    def _saw_agent(self) -> None:
        llm = _calling_llm()
        if llm is not None:
            self._last_llm = llm

    async def aput(self, message: ChatMessage) -> None:
        self._saw_agent()
        await self.atranslate([message])
        await super().aput(message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        self._saw_agent()
        await self.atranslate(messages)
        await super().aput_messages(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        self._saw_agent()
        await self.atranslate(messages)
        await super().aset(messages)

    # --- running and wrapping -----------------------------------------------------------------
    async def arun(self, agent: Any, user_msg: Any = None, **run_kwargs: Any) -> Any:
        """``await agent.run(user_msg=user_msg, memory=self, **run_kwargs)``: the same as the
        native call (which also records, recalls and, with ``wrap_on_end``, wraps)."""
        self._last_llm = getattr(agent, "llm", None) or self._last_llm
        return await agent.run(user_msg=user_msg, memory=self, **run_kwargs)

    def framework_compressor(self, context: Any = None) -> Compress | None:
        """The LLM of the agent that used this memory last (or ``llm=``)."""
        return llm_compressor(self._last_llm) if self._last_llm is not None else None

    async def awrap(self, compress: Compress | None = None, *, llm: Any = None,
                    context: Any = None, namespace: Any = None) -> WrapOutcome:
        """Compress this memory's episodes since its last wrap into its continuity.

        ``compress``, else the one given at construction, else ``llm`` / the last agent's
        LLM. A failed or refused wrap keeps every episode for the next one; the outcome is
        also kept on ``scope().last_wrap``.
        """
        session = (self.session_for(context, namespace=namespace)
                   if namespace is not None or context is not None else self.scope())
        if llm is not None:
            compress = compress or self._anneal.compress or llm_compressor(llm)
        return await session.awrap_first(self.compressor(compress))

    def wrap(self, compress: Compress | None = None, *, llm: Any = None,
             context: Any = None, namespace: Any = None) -> WrapOutcome:
        """Sync :meth:`awrap` (not from inside a running event loop)."""
        from llama_index.core.async_utils import asyncio_run

        return asyncio_run(self.awrap(compress, llm=llm, context=context, namespace=namespace))
