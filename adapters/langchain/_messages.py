"""Text out of LangChain messages and run payloads, and a compressor from a chat model.

Shared by the LangChain and LangGraph adapters (the ``langgraph`` extra brings
``langchain-core``), so both read messages the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage


def message_text(message: Any) -> str:
    """The plain text of a message, a content-block list, a dict message or a string."""
    if message is None:
        return ""
    if isinstance(message, BaseMessage):
        return message.text or ""
    if isinstance(message, str):
        return message
    if isinstance(message, Mapping) and "content" in message:
        return message_text(message["content"])
    if isinstance(message, Sequence):
        parts = []
        for block in message:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(message)


def last_message_text(messages: Sequence[Any], kind: type[BaseMessage]) -> str:
    """Text of the newest message of ``kind`` (HumanMessage, AIMessage...), "" if none."""
    for message in reversed(list(messages)):
        if isinstance(message, kind):
            return message_text(message)
        if isinstance(message, Mapping) and _dict_role(message) is kind:
            return message_text(message)
    return ""


def _dict_role(message: Mapping[str, Any]) -> type[BaseMessage] | None:
    role = message.get("role") or message.get("type")
    if role in ("user", "human"):
        return HumanMessage
    if role in ("assistant", "ai"):
        return AIMessage
    return None


# Keys a chain's input or output dict commonly carries its text under, most specific first.
_TEXT_KEYS = ("input", "question", "query", "output", "answer", "result", "text", "content")


def payload_text(payload: Any, *, prefer: type[BaseMessage] = HumanMessage) -> str:
    """The user-facing text of a chain input/output: a string, a message, a message list or
    a dict holding one of those (``{"messages": [...]}`` picks the newest ``prefer``)."""
    if isinstance(payload, (str, BaseMessage)):
        return message_text(payload)
    if isinstance(payload, Mapping):
        if "messages" in payload and isinstance(payload["messages"], Sequence):
            return last_message_text(payload["messages"], prefer)
        for key in _TEXT_KEYS:
            if key in payload and payload[key] is not None:
                return payload_text(payload[key], prefer=prefer)
        strings = {k: v for k, v in payload.items() if isinstance(v, str) and v.strip()}
        if len(strings) == 1:
            return next(iter(strings.values()))
        return "\n".join(f"{k}: {v}" for k, v in strings.items())
    if isinstance(payload, Sequence):
        return last_message_text(payload, prefer) or message_text(payload)
    return message_text(getattr(payload, "content", "")) if hasattr(payload, "content") else ""


def model_compressor(model: BaseChatModel) -> Callable[[str], str]:
    """A wrap compressor that asks ``model`` (the agent's own model) for the continuity."""

    def compress(prompt: str) -> str:
        return message_text(model.invoke([HumanMessage(content=prompt)]))

    return compress


def model_acompressor(model: BaseChatModel) -> Callable[[str], Awaitable[str]]:
    """The async twin of :func:`model_compressor`."""

    async def compress(prompt: str) -> str:
        return message_text(await model.ainvoke([HumanMessage(content=prompt)]))

    return compress
