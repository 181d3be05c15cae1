"""A compressor that writes the continuity with Claude itself, through the SDK."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock, query

from anneal_memory.errors import ValidationError

#: A system prompt for the wrap turn: the wrap prompt itself says what to write.
WRAP_SYSTEM_PROMPT = ("You compress an agent's memory. Answer with the new continuity "
                      "markdown only, following the instructions in the message.")


def claude_compressor(options: ClaudeAgentOptions | None = None, *,
                      transport: Callable[[], Any] | None = None) -> Callable[[str], Awaitable[str]]:
    """``compress=`` for :class:`AnnealMemory`: one ``query()`` turn with the wrap prompt.

    ``options`` (model, env, cwd ...) are used with no hooks, no MCP servers, no tools, no
    session store and one turn, so the wrap is neither recorded nor recalled itself.
    ``transport`` makes the transport for each call (tests pass a scripted CLI).
    """
    if options is not None and not isinstance(options, ClaudeAgentOptions):
        raise ValidationError("claude_compressor(options=) takes ClaudeAgentOptions")
    if transport is not None and not callable(transport):
        raise ValidationError("claude_compressor(transport=) takes a callable returning a "
                              "Transport (one per call)")
    base = replace(options or ClaudeAgentOptions(system_prompt=WRAP_SYSTEM_PROMPT),
                   hooks=None, mcp_servers={}, tools=[], allowed_tools=[], max_turns=1,
                   session_store=None, can_use_tool=None, resume=None,
                   continue_conversation=False)

    async def compress(prompt: str) -> str:
        parts: list[str] = []
        result: str | None = None
        async for message in query(prompt=prompt, options=base,
                                   transport=transport() if transport else None):
            if isinstance(message, AssistantMessage):
                parts.extend(b.text for b in message.content if isinstance(b, TextBlock))
            elif isinstance(message, ResultMessage):
                if message.is_error:
                    raise RuntimeError(f"the wrap turn failed: {message.result or message.subtype}")
                result = message.result
        return result if result else "".join(parts)

    return compress
