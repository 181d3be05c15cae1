"""A scripted Strands ``Model``: Strands' own model interface, no network, no key.

It streams Bedrock-style events as Strands' own test fixture (``MockedModelProvider``)
does: when asked (``call_tool``) it first calls ``lookup``, then answers; a wrap prompt is
answered with ``scripted_compress``. Every text it received (the system prompt, each
message's text and tool results, the memory folded in) is kept in ``inputs``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from strands import tool
from strands.models import Model

from anneal_memory.testing import is_wrap_prompt, scripted_compress


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for message in messages:
        for block in message.get("content") or []:
            if "text" in block:
                out.append(str(block["text"]))
            elif "toolResult" in block:
                out.extend(str(c.get("text", c.get("json", "")))
                           for c in block["toolResult"].get("content") or [])
    return out


class ScriptedModel(Model):
    """Answers ``answer``; with ``call_tool`` the first call of each invocation calls
    ``tool_name`` (default ``lookup`` with ``{"query": "pump pressure"}``)."""

    def __init__(self, *, call_tool: bool = False, answer: str = "Done: noted.",
                 tool_name: str = "lookup", tool_input: dict[str, Any] | None = None) -> None:
        self.call_tool = call_tool
        self.tool_name = tool_name
        self.tool_input = tool_input or {"query": "pump pressure"}
        self.answer = answer
        self.inputs: list[str] = []
        self.received: list[list[dict[str, Any]]] = []  # the messages of each call
        self.calls = 0

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, output_model: Any, prompt: Any,
                                system_prompt: str | None = None,
                                **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError("the scripted model has no structured output")
        yield  # an async generator, as the interface declares

    async def stream(self, messages: list[dict[str, Any]], tool_specs: Any = None,
                     system_prompt: str | None = None, **kwargs: Any
                     ) -> AsyncGenerator[dict[str, Any], None]:
        self.calls += 1
        texts = _texts(messages)
        last = messages[-1] if messages else {}
        last_text = " ".join(_texts([last]))
        yield {"messageStart": {"role": "assistant"}}
        if is_wrap_prompt(last_text):
            yield {"contentBlockStart": {"start": {}}}
            yield _text_delta(scripted_compress(last_text))
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        self.inputs.append("\n".join([system_prompt or "", *texts]).strip())
        self.received.append(messages)
        returned = any("toolResult" in b for b in last.get("content") or [])
        if self.call_tool and not returned:
            yield {"contentBlockStart": {"start": {"toolUse": {
                "name": self.tool_name, "toolUseId": f"t{self.calls}"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {
                "input": json.dumps(self.tool_input)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        yield {"contentBlockStart": {"start": {}}}
        yield _text_delta(self.answer)
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def _text_delta(text: str) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"text": text}}}


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"toolresult: {query} is 42 psi"
