"""A model context that records what the agent sees and says into :class:`AnnealMemory`.

``AssistantAgent`` puts every LLM message through its model context (the user's and other
agents' messages, its own replies and tool calls, tool results), which makes the context the
one place that sees the whole turn. Storage and trimming are delegated to an inner context.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from autogen_core.model_context import ChatCompletionContext, UnboundedChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

from anneal_memory.adapters import hook_guard
from anneal_memory.session import MemorySession

if TYPE_CHECKING:
    from ._memory import AnnealMemory

_safe = hook_guard("anneal_memory.adapters.autogen")


class RecordingChatCompletionContext(ChatCompletionContext):
    """Records each message into ``memory``, then stores it in ``inner``.

    User (and other agents') messages become context episodes, tool results observations
    with trust="tool", text replies outcomes; tool calls become decisions when the memory
    has ``record_tool_calls``. System messages and the memory's own injection are skipped.
    """

    def __init__(self, memory: AnnealMemory, inner: ChatCompletionContext | None = None) -> None:
        super().__init__()
        self.memory = memory
        self.inner = inner if inner is not None else UnboundedChatCompletionContext()

    @property
    def session(self) -> MemorySession:
        return self.memory.session

    async def add_message(self, message: LLMMessage) -> None:
        wrap = self._record(message)
        await self.inner.add_message(message)
        if wrap:
            await self.memory.awrap()

    @_safe
    def _record(self, message: LLMMessage) -> bool:
        """Record one message; True when it is a text answer that ends the turn."""
        from ._memory import MEMORY_SOURCE

        session = self.memory.session
        if isinstance(message, UserMessage):
            if message.source != MEMORY_SOURCE:
                text = _text(message.content)
                if text:
                    session.record_user_input(text, metadata={"source": message.source})
        elif isinstance(message, FunctionExecutionResultMessage):
            for result in message.content:
                session.record_tool_output(getattr(result, "name", "") or "tool", result.content,
                                           metadata={"is_error": True} if result.is_error else None)
        elif isinstance(message, AssistantMessage):
            if isinstance(message.content, str):
                if message.content.strip():
                    session.record_outcome(message.content, metadata={"source": message.source})
                    return self.memory.wrap_on_end
            elif self.memory.record_tool_calls:
                for call in message.content:
                    session.record_decision(f"called tool {call.name} with {call.arguments}")
        return False

    async def get_messages(self) -> list[LLMMessage]:
        return await self.inner.get_messages()

    async def clear(self) -> None:
        await self.inner.clear()

    async def save_state(self) -> Mapping[str, Any]:
        return await self.inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self.inner.load_state(state)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(part for part in content if isinstance(part, str))  # images are skipped
