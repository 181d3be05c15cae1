"""AutoGen's ReplayChatCompletionClient, taught to answer wrap prompts."""

from __future__ import annotations

from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, FunctionExecutionResultMessage, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from anneal_memory.testing import is_wrap_prompt, scripted_compress

MODEL_INFO = {"function_calling": True, "vision": False, "json_output": False,
              "family": "unknown", "structured_output": False}


def lookup(item: str) -> str:
    """Look up a measurement (the test tool)."""
    return f"toolresult: {item} pressure is 42 psi"


def tool_call(item: str = "pump") -> CreateResult:
    return CreateResult(finish_reason="function_calls", usage=RequestUsage(0, 0), cached=False,
                        content=[FunctionCall(id="1", name="lookup", arguments=f'{{"item": "{item}"}}')])


class ScriptedClient(ReplayChatCompletionClient):
    """Replays its script; a wrap prompt is answered with a valid continuity instead."""

    def __init__(self, chat_completions: list[Any], *, fail_wrap: bool = False) -> None:
        super().__init__(chat_completions, model_info=MODEL_INFO)
        self.fail_wrap = fail_wrap
        self.inputs: list[str] = []

    async def create(self, messages, **kwargs) -> CreateResult:  # type: ignore[override]
        for message in messages:
            content = message.content
            if isinstance(message, FunctionExecutionResultMessage):
                self.inputs.extend(r.content for r in content)
            elif isinstance(content, str):
                self.inputs.append(content)
        last = messages[-1].content if messages else ""
        if isinstance(last, str) and is_wrap_prompt(last):
            text = "no continuity here" if self.fail_wrap else scripted_compress(last)
            return CreateResult(finish_reason="stop", content=text,
                                usage=RequestUsage(0, 0), cached=False)
        return await super().create(messages, **kwargs)
