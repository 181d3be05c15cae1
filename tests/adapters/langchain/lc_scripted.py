"""A scripted chat model for create_agent: LangChain's own GenericFakeChatModel, taught
to bind tools (create_agent calls bind_tools) and to answer a wrap prompt."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from anneal_memory.adapters.langchain import message_text
from anneal_memory.testing import is_wrap_prompt, scripted_compress


class ScriptedChatModel(GenericFakeChatModel):
    """Replays scripted AIMessages; answers a wrap prompt with scripted_compress."""

    seen: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.seen.append("\n".join(message_text(m) for m in messages))
        last = message_text(messages[-1]) if messages else ""
        if is_wrap_prompt(last):
            reply = AIMessage(content=scripted_compress(last))
            return ChatResult(generations=[ChatGeneration(message=reply)])
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted(answer: str, *, call_tool: bool = False) -> ScriptedChatModel:
    steps: list[AIMessage] = []
    if call_tool:
        steps.append(AIMessage(content="Checking the gauge first.", tool_calls=[
            {"name": "read_gauge", "args": {"gauge": "pump"}, "id": "call_1", "type": "tool_call"}
        ]))
    steps.append(AIMessage(content=answer))
    return ScriptedChatModel(messages=iter(steps))


@tool
def read_gauge(gauge: str) -> str:
    """Read a gauge by name."""
    return f"toolresult: the {gauge} gauge reads 42 psi"
