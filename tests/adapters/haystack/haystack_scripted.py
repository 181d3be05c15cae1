"""A scripted Haystack chat model: MockChatGenerator driven by a response function."""

from __future__ import annotations

from haystack.components.generators.chat import MockChatGenerator
from haystack.dataclasses import ChatMessage, ChatRole, ToolCall
from haystack.tools import Tool

from anneal_memory.testing import is_wrap_prompt, scripted_compress


def lookup(item: str) -> str:
    """The test tool: its output carries the word the contract looks for."""
    return f"toolresult: {item} pressure is 42 psi"


LOOKUP = Tool(
    name="lookup",
    description="Look up a measurement.",
    parameters={"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
    function=lookup,
)


def answer(messages: list[ChatMessage]) -> ChatMessage | str:
    """Module-level reply function (serializable): wrap prompts get a continuity."""
    text = messages[-1].text or ""
    if is_wrap_prompt(text):
        return scripted_compress(text)
    return f"Noted: {text[:60]}"


class Scripted:
    """Records every text the model receives; optionally calls ``lookup`` once first."""

    def __init__(self, *, call_tool: bool = False, fail_wrap: bool = False) -> None:
        self.call_tool = call_tool
        self.fail_wrap = fail_wrap
        self.inputs: list[str] = []
        #: the messages of each model call (wrap prompts aside)
        self.seen: list[list[ChatMessage]] = []
        self.calls = 0
        self.generator = MockChatGenerator(response_fn=self.respond)

    def respond(self, messages: list[ChatMessage]) -> ChatMessage | str:
        self.calls += 1
        self.inputs.extend(m.text or "" for m in messages)
        last = messages[-1].text or ""
        if is_wrap_prompt(last):
            if self.fail_wrap:
                return "not a continuity"
            return scripted_compress(last)
        self.seen.append(list(messages))
        used_tool = any(m.role == ChatRole.TOOL for m in messages)
        if self.call_tool and not used_tool:
            return ChatMessage.from_assistant(
                tool_calls=[ToolCall(tool_name="lookup", arguments={"item": "pump"})])
        return "Final answer: the plan is ready."
