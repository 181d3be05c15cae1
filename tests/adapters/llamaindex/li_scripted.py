"""A scripted LlamaIndex LLM (the shipped ``MockFunctionCallingLLM`` with a rule) and a tool."""

from __future__ import annotations

from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from anneal_memory.testing import is_wrap_prompt, scripted_compress


def read_gauge(name: str) -> str:
    """Read a named gauge."""
    return f"gauge {name} reads 3.2 bar (toolresult)"


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text)


class Script:
    """Answers by rule: a wrap prompt gets a valid continuity; otherwise it calls ``call``
    (tool name, kwargs) once per user turn when set, then says ``answer``. Every text it
    receives is kept in ``inputs``."""

    def __init__(self, answer: str = "Done.", call: tuple[str, dict[str, Any]] | None = None) -> None:
        self.answer = answer
        self.call = call
        self.inputs: list[str] = []

    def __call__(self, messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        last = _text(messages[-1]) if messages else ""
        if is_wrap_prompt(last):
            return ChatMessage(role=MessageRole.ASSISTANT, content=scripted_compress(last))
        self.inputs.append("\n".join(_text(m) for m in messages))
        role = str(getattr(messages[-1].role, "value", messages[-1].role)) if messages else ""
        if self.call is not None and role == "user":
            name, args = self.call
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[
                ToolCallBlock(tool_call_id=f"call_{name}", tool_name=name, tool_kwargs=args)])
        return ChatMessage(role=MessageRole.ASSISTANT, content=self.answer)


def make_agent(script: Script, tools: list[Any] | None = None) -> FunctionAgent:
    return FunctionAgent(
        tools=tools if tools is not None else [FunctionTool.from_defaults(read_gauge)],
        llm=MockFunctionCallingLLM(response_generator=script),
        system_prompt="You look after the garden.",
    )
