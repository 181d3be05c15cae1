"""A scripted model of Agno's own model interface (``agno.models.base.Model``): it keeps
what it received, calls ``lookup`` once when asked, and answers wrap prompts."""

from __future__ import annotations

import json
from typing import Any

from agno.models.base import Model
from agno.models.response import ModelResponse

from anneal_memory.testing import is_wrap_prompt, scripted_compress


class ScriptedModel(Model):
    """``inputs``: per model call, every message's text joined (system prompt included)."""

    def __init__(self, *, call_tool: bool = False, answer: str = "Done: noted.",
                 tool: tuple[str, dict[str, Any]] = ("lookup", {"query": "pump pressure"})
                 ) -> None:
        super().__init__(id="scripted", name="Scripted", provider="test")
        self.call_tool = call_tool
        self.tool = tool
        self.answer = answer
        self.inputs: list[str] = []

    def invoke(self, *args: Any, messages: Any = None, **kwargs: Any) -> ModelResponse:
        messages = list(messages or [])
        texts = [m.get_content_string() for m in messages]
        last = texts[-1] if texts else ""
        if is_wrap_prompt(last):
            return ModelResponse(role="assistant", content=scripted_compress(last))
        self.inputs.append("\n".join(t for t in texts if t))
        returned = any(m.role == "tool" for m in messages)
        if self.call_tool and not returned:
            call = {"id": "call-1", "type": "function",
                    "function": {"name": self.tool[0], "arguments": json.dumps(self.tool[1])}}
            return ModelResponse(role="assistant", tool_calls=[call])
        return ModelResponse(role="assistant", content=self.answer)

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.invoke(*args, **kwargs)

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        yield self.invoke(*args, **kwargs)

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> Any:
        yield self.invoke(*args, **kwargs)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> Any:
        return response

    def _parse_provider_response_delta(self, response: Any) -> Any:
        return response


def lookup(query: str) -> str:
    """Look something up."""
    return f"toolresult: {query} is 42 psi"
