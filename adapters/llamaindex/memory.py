"""``AnnealMemory``: a LlamaIndex ``Memory`` that records every turn into anneal-memory.

LlamaIndex's memory blocks only see history when short-term memory overflows, so per-turn
recording happens one level up: this ``Memory`` subclass translates each message the agent
puts (``aput`` / ``aput_messages`` / ``aset`` and their sync twins) onto the session:
user text -> ``record_user_input``, tool results -> ``record_tool_output`` (trust tool),
assistant text without tool calls -> ``record_outcome``. Its :class:`AnnealMemoryBlock`
supplies continuity + recall before every LLM call.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from pydantic import PrivateAttr

from anneal_memory import Store
from anneal_memory.adapters import hook_guard, open_session
from anneal_memory.session import MemorySession, WrapOutcome

from .block import LOGGER_NAME, AnnealMemoryBlock, message_text

_safe = hook_guard(LOGGER_NAME)

#: prompt -> continuity markdown, sync or async
Compress = Callable[[str], "str | Awaitable[str]"]


def llm_compressor(llm: Any) -> Compress:
    """A compressor that sends the wrap prompt to a LlamaIndex LLM as one user message.

    It calls ``llm.achat`` directly, outside any agent run and any memory, so the wrap is
    never recorded as a turn of the conversation.
    """

    async def compress(prompt: str) -> str:
        response = await llm.achat([ChatMessage(role="user", content=prompt)])
        return message_text(response.message) or (response.message.content or "")

    return compress


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


class AnnealMemory(Memory):
    """LlamaIndex ``Memory`` backed by anneal-memory. Build it with :meth:`from_store`.

    ``wrap_on_end`` (default ``False``): :meth:`arun` wraps after each agent run;
    otherwise call :meth:`awrap` / :meth:`wrap` when the conversation ends. ``compress``
    defaults to the LLM of the last agent run through :meth:`arun` (or ``llm=``).
    """

    _anneal: MemorySession = PrivateAttr()
    _block: AnnealMemoryBlock = PrivateAttr()
    _wrap_on_end: bool = PrivateAttr(default=False)
    _compress: Compress | None = PrivateAttr(default=None)
    _record: dict[str, bool] = PrivateAttr(default_factory=dict)
    _tool_names: dict[str, str] = PrivateAttr(default_factory=dict)
    _last_llm: Any = PrivateAttr(default=None)

    @classmethod
    def from_store(
        cls,
        memory: Store | MemorySession | str | os.PathLike[str],
        *,
        wrap_on_end: bool = False,
        compress: Compress | None = None,
        record_user_input: bool = True,
        record_tools: bool = True,
        record_outcome: bool = True,
        record_evicted: bool = True,
        recall_limit: int | None = None,
        max_content_chars: int | None = None,
        crystal_store: Any = None,
        strict: bool | None = None,
        block_priority: int = 0,
        **memory_kwargs: Any,
    ) -> AnnealMemory:
        """A ``Memory`` (``Memory.from_defaults(**memory_kwargs)``) with the anneal block first.

        ``memory`` is a Store or a store path (a session is made for it;
        ``memory.session.close()`` closes a store it opened) or a ready MemorySession
        (then the session options go to it). ``block_priority`` is the block's
        truncation priority (0: never truncated).
        """
        MemorySession.check_compress(compress)
        session = open_session(memory, LOGGER_NAME, crystal_store=crystal_store,
                               recall_limit=recall_limit, max_content_chars=max_content_chars,
                               strict=strict)
        block = AnnealMemoryBlock(session=session, priority=block_priority)
        blocks = [block, *(memory_kwargs.pop("memory_blocks", None) or [])]
        mem = cls.from_defaults(memory_blocks=blocks, **memory_kwargs)
        mem._anneal = session
        mem._block = block
        mem._wrap_on_end = wrap_on_end
        mem._compress = compress
        mem._record = {"user": record_user_input, "tool": record_tools,
                        "outcome": record_outcome}
        if record_evicted:
            block._on_evicted = mem.translate
        return mem  # type: ignore[return-value]

    @property
    def session(self) -> MemorySession:
        """The anneal lifecycle session this memory records into (not LlamaIndex's chat
        ``session_id``)."""
        return self._anneal

    # --- translation ----------------------------------------------------------------------
    def translate(self, messages: list[ChatMessage]) -> None:
        """Record chat messages as typed episodes (a failure is logged; the others go on)."""
        for message in messages:
            self._translate_one(message)

    @_safe
    def _translate_one(self, message: ChatMessage) -> None:
        role, text = _role(message), message_text(message)
        if role == "user" and text:
            self._block.prime(text)  # recall first, so the request is not recalled back
            if self._record.get("user", True):
                self.session.record_user_input(text)
        elif role == "assistant":
            calls = _tool_calls(message)
            for call_id, name in calls:
                if call_id:
                    self._tool_names[call_id] = name
            if text and not calls and self._record.get("outcome", True):
                self.session.record_outcome(text)
        elif role == "tool" and self._record.get("tool", True):
            call_id = message.additional_kwargs.get("tool_call_id")
            name = self._tool_names.get(call_id, message.additional_kwargs.get("name", "tool"))
            output = text or str(message.content or "")
            if output:
                self.session.record_tool_output(name, output)

    async def aput(self, message: ChatMessage) -> None:
        self.translate([message])
        await super().aput(message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        self.translate(messages)
        await super().aput_messages(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        self.translate(messages)
        await super().aset(messages)

    # --- running and wrapping -----------------------------------------------------------------
    async def arun(self, agent: Any, user_msg: Any = None, **run_kwargs: Any) -> Any:
        """``await agent.run(user_msg, memory=self, **run_kwargs)``, then wrap when ``wrap_on_end``."""
        self._last_llm = getattr(agent, "llm", None) or self._last_llm
        result = await agent.run(user_msg=user_msg, memory=self, **run_kwargs)
        if self._wrap_on_end:
            await self.awrap()
        return result

    async def awrap(self, compress: Compress | None = None, *, llm: Any = None) -> WrapOutcome:
        """Compress the episodes since the last wrap into the continuity.

        ``compress``, else the one given at construction, else ``llm`` / the last agent's
        LLM. A failed or refused wrap keeps every episode for the next one; the outcome is
        also kept on ``session.last_wrap``.
        """
        model = llm or self._last_llm
        return await self.session.awrap_first(compress, self._compress,
                                              llm_compressor(model) if model is not None else None)

    def wrap(self, compress: Compress | None = None, *, llm: Any = None) -> WrapOutcome:
        """Sync :meth:`awrap` (not from inside a running event loop)."""
        from llama_index.core.async_utils import asyncio_run

        return asyncio_run(self.awrap(compress, llm=llm))
