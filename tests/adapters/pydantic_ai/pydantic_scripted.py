"""A scripted FunctionModel: calls ``lookup`` once when asked, answers wrap prompts."""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from anneal_memory.testing import is_wrap_prompt, scripted_compress


class ScriptedModel:
    """Holds what the model received; ``model`` is the FunctionModel to give the agent."""

    def __init__(self, *, call_tool: bool = False, answer: str = "Done: noted.") -> None:
        self.call_tool = call_tool
        self.answer = answer
        self.inputs: list[str] = []
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen = [info.instructions or ""]
        for message in messages:
            if isinstance(message, ModelRequest):
                seen.append(message.instructions or "")
                seen.extend(str(p.content) for p in message.parts
                            if isinstance(p, (UserPromptPart, ToolReturnPart)))
        text = "\n".join(s for s in seen if s)
        self.inputs.append(text)
        last = messages[-1]
        prompt = " ".join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))
        if is_wrap_prompt(prompt):
            return ModelResponse(parts=[TextPart(scripted_compress(prompt))])
        returned = any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
        if self.call_tool and not returned:
            return ModelResponse(parts=[ToolCallPart("lookup", {"query": "pump pressure"})])
        return ModelResponse(parts=[TextPart(self.answer)])


def lookup(query: str) -> str:
    """Look something up."""
    return f"toolresult: {query} is 42 psi"
