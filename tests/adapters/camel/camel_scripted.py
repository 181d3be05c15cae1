"""A scripted CAMEL model: a StubModel subclass that calls a tool once and answers wrap prompts."""

from __future__ import annotations

import json
import time
from typing import Any

from camel.models.stub_model import StubModel
from camel.toolkits import FunctionTool
from camel.types import ModelType
from openai.types.chat import ChatCompletion, ChatCompletionMessage, ChatCompletionMessageToolCall
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_tool_call import Function
from openai.types.completion_usage import CompletionUsage

from anneal_memory.testing import is_wrap_prompt, scripted_compress


def lookup(item: str) -> str:
    r"""Look up a measurement.

    Args:
        item (str): what to measure.
    """
    return f"toolresult: {item} pressure is 42 psi"


LOOKUP = FunctionTool(lookup)


def _completion(content: str | None, tool_calls: list[Any] | None = None) -> ChatCompletion:
    message = ChatCompletionMessage(role="assistant", content=content, tool_calls=tool_calls)
    return ChatCompletion(
        id="scripted", created=int(time.time()), model="stub", object="chat.completion",
        choices=[Choice(index=0, logprobs=None, message=message,
                        finish_reason="tool_calls" if tool_calls else "stop")],
        usage=CompletionUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2))


class ScriptedModel(StubModel):
    """Answers by prompt: wrap prompts get a continuity, otherwise one optional tool call,
    then a fixed answer. Records every message text it receives."""

    def __init__(self, *, call_tool: bool = False, answer: str = "Final answer: done.",
                 fail_wrap: bool = False) -> None:
        super().__init__(model_type=ModelType.STUB)
        self.call_tool = call_tool
        self.answer = answer
        self.fail_wrap = fail_wrap
        self.inputs: list[str] = []

    def _reply(self, messages: list[dict[str, Any]]) -> ChatCompletion:
        self.inputs.extend(str(m.get("content") or "") for m in messages)
        last = str(messages[-1].get("content") or "")
        if is_wrap_prompt(last):
            return _completion("not a continuity" if self.fail_wrap else scripted_compress(last))
        if self.call_tool and not any(m.get("role") == "tool" for m in messages):
            call = ChatCompletionMessageToolCall(
                id="call_1", type="function",
                function=Function(name="lookup", arguments=json.dumps({"item": "pump"})))
            return _completion(None, [call])
        return _completion(self.answer)

    def _run(self, messages, response_format=None, tools=None):  # type: ignore[override]
        return self._reply(messages)

    async def _arun(self, messages, response_format=None, tools=None):  # type: ignore[override]
        return self._reply(messages)
