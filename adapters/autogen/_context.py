"""Recording what an agent's model context sees, without replacing the context.

``AssistantAgent`` puts every LLM message through its model context (the user's and other
agents' messages, its own replies and tool calls, tool results), which makes the context the
one place that sees the whole turn. It calls ``Memory.update_context(model_context)`` once
per turn but never ``Memory.add``, so the memory attaches a recorder to that context the
first time it sees it: the context's own ``add_message`` still stores the message (its
class, trimming policy, ``save_state`` and ``dump_component`` are untouched), then the
message is recorded. ``AssistantAgent(memory=[memory])`` alone therefore records the turn.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

from anneal_memory.adapters import MEMORY_LABEL
from anneal_memory.session import CONTINUITY_HEADER, MEMORY_HEADER, MemorySession

#: ``source`` of the user-role message this memory injects.
MEMORY_SOURCE = "anneal_memory"


@dataclass
class ContextState:
    """One model context as one memory sees it."""

    #: the session of the turn in progress (set by the turn's incoming message)
    session: MemorySession | None = None
    #: the memory message this memory put into the context last
    injected: LLMMessage | None = None


#: what the recorder calls with each message the context stores (the memory's recording)
Recorder = Callable[[ChatCompletionContext, LLMMessage], Awaitable[None]]


def attach_recorder(states: MutableMapping[ChatCompletionContext, ContextState],
                    record: Recorder, context: ChatCompletionContext
                    ) -> tuple[ContextState, bool]:
    """The state of ``context`` in one memory's ``states``; True when the recorder was
    attached now (each message the context stores then goes to ``record`` too). Given
    the memory's own states and recording, not the memory: this module stays below it."""
    state = states.get(context)
    if state is not None:
        return state, False
    state = states[context] = ContextState()
    original = context.add_message

    @functools.wraps(original)
    async def add_message(message: LLMMessage) -> None:
        await original(message)
        await record(context, message)

    context.add_message = add_message  # type: ignore[method-assign]
    return state, True


def is_memory_message(message: Any) -> bool:
    """A message some AnnealMemory injected (also after ``load_state``)."""
    if isinstance(message, UserMessage):
        return message.source == MEMORY_SOURCE
    if isinstance(message, SystemMessage) and isinstance(message.content, str):
        return message.content.startswith((MEMORY_LABEL, MEMORY_HEADER, CONTINUITY_HEADER))
    return False


def remove_memory_messages(context: ChatCompletionContext) -> bool:
    """Drop earlier memory messages from ``context`` (the built-in contexts keep their
    messages in ``_messages``); False when the context keeps them elsewhere."""
    messages = getattr(context, "_messages", None)
    if not isinstance(messages, list):
        return False
    messages[:] = [m for m in messages if not is_memory_message(m)]
    return True


def message_text(content: Any) -> str:
    """The text of a message's content (image parts are skipped)."""
    if isinstance(content, str):
        return content
    return " ".join(part for part in content if isinstance(part, str))


def latest_incoming(messages: list[Any]) -> UserMessage | None:
    """The newest message from the user or another agent (never the memory's own)."""
    for message in reversed(messages):
        if isinstance(message, UserMessage) and not is_memory_message(message):
            return message
    return None


def trailing_incoming(messages: list[Any]) -> list[UserMessage]:
    """The incoming messages of the turn in progress: those after the agent's last reply."""
    tail: list[UserMessage] = []
    for message in reversed(messages):
        if isinstance(message, (AssistantMessage, FunctionExecutionResultMessage)):
            break
        if isinstance(message, UserMessage) and not is_memory_message(message):
            tail.append(message)
    return tail[::-1]
