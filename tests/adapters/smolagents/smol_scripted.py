"""A scripted smolagents ``Model`` (smolagents ships none) and the agents the tests drive."""

from __future__ import annotations

from typing import Any

from smolagents import CodeAgent, Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage

from anneal_memory.testing import is_wrap_prompt, scripted_compress


def message_text(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


@tool
def read_gauge(name: str) -> str:
    """Read a named gauge.

    Args:
        name: the gauge to read.
    """
    return f"gauge {name} reads 3.2 bar (toolresult)"


class ScriptedModel(Model):
    """Answers by rule: a wrap prompt gets a valid continuity; otherwise it calls
    ``read_gauge`` once when ``call_tool`` is set, then gives ``answer``.

    ``code=True`` speaks CodeAgent (python blocks); otherwise ToolCallingAgent (tool calls).
    Every text it receives is kept in ``inputs``.
    """

    def __init__(self, *, code: bool = False, answer: str = "Done.", call_tool: bool = False,
                 plan: str | None = None) -> None:
        super().__init__(model_id="scripted")
        self.code = code
        self.answer = answer
        self.call_tool = call_tool
        self.plan = plan
        self.inputs: list[str] = []
        #: the system prompt of each model call (wrap prompts aside)
        self.systems: list[str] = []

    def generate(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
        reply = self._reply(messages, stop_sequences, tools_to_call_from)
        reply.token_usage = TokenUsage(input_tokens=0, output_tokens=0)  # older monitors add these
        return reply

    def _reply(self, messages: list[Any], stop_sequences: Any, tools_to_call_from: Any) -> ChatMessage:
        messages = [m if isinstance(m, ChatMessage) else ChatMessage.from_dict(m) for m in messages]
        texts = [message_text(m) for m in messages]
        self.inputs.append("\n".join(texts))
        if is_wrap_prompt(texts[-1]):
            return ChatMessage(role=MessageRole.ASSISTANT, content=scripted_compress(texts[-1]))
        self.systems.append(texts[0] if messages[0].role == MessageRole.SYSTEM else "")
        if stop_sequences and "<end_plan>" in stop_sequences:  # a planning step
            return ChatMessage(role=MessageRole.ASSISTANT, content=self.plan or "No plan.")
        tool_done = any(m.role == MessageRole.TOOL_RESPONSE for m in messages)
        if self.code:
            if self.call_tool and not tool_done:
                return ChatMessage(role=MessageRole.ASSISTANT,
                                   content='Reading it.\n```py\nprint(read_gauge("pump"))\n```')
            return ChatMessage(role=MessageRole.ASSISTANT,
                               content=f"Answering.\n```py\nfinal_answer({self.answer!r})\n```")
        if self.call_tool and not tool_done:
            return self._call("read_gauge", {"name": "pump"})
        return self._call("final_answer", {"answer": self.answer})

    @staticmethod
    def _call(name: str, arguments: dict[str, Any]) -> ChatMessage:
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[
            ChatMessageToolCall(id=f"call_{name}", type="function",
                                function=ChatMessageToolCallFunction(name=name, arguments=arguments))
        ])


def make_agent(model: ScriptedModel, memory: Any = None, **kwargs: Any) -> Any:
    """A real ToolCallingAgent or CodeAgent (by ``model.code``), attached to ``memory``."""
    cls = CodeAgent if model.code else ToolCallingAgent
    agent = cls(tools=[read_gauge], model=model, verbosity_level=LogLevel.OFF, max_steps=4,
                **kwargs)
    return memory.attach(agent) if memory is not None else agent
