"""DSPy's own DummyLM driving a real ReAct program, taught to answer a wrap prompt."""

from __future__ import annotations

from typing import Any

import dspy
from dspy.utils import DummyLM

from anneal_memory.adapters.dspy import with_memory_field
from anneal_memory.testing import is_wrap_prompt, scripted_compress


class ScriptedLM(DummyLM):
    """Replays scripted field dicts; answers a wrap prompt with scripted_compress."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        super().__init__(answers)
        self.seen: list[str] = []

    def _wrap_reply(self, prompt: Any, messages: Any) -> list[str] | None:
        text = prompt or "\n".join(str(m.get("content", "")) for m in messages or [])
        self.seen.append(text)
        last = str((messages or [{}])[-1].get("content", "")) if messages else str(prompt)
        return [scripted_compress(last)] if is_wrap_prompt(last) else None

    def __call__(self, prompt: Any = None, messages: Any = None, **kwargs: Any) -> Any:
        return self._wrap_reply(prompt, messages) or super().__call__(prompt, messages=messages, **kwargs)

    async def acall(self, prompt: Any = None, messages: Any = None, **kwargs: Any) -> Any:
        return self._wrap_reply(prompt, messages) or await super().acall(prompt, messages=messages, **kwargs)


def react_script(answer: str, *, call_tool: bool = False) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    if call_tool:
        steps.append({"next_thought": "Read the gauge.", "next_tool_name": "read_gauge",
                      "next_tool_args": {"gauge": "pump"}})
    steps.append({"next_thought": "I can answer.", "next_tool_name": "finish", "next_tool_args": {}})
    steps.append({"reasoning": "From what I know.", "answer": answer})
    return steps


def read_gauge(gauge: str) -> str:
    """Read a gauge by name."""
    return f"toolresult: the {gauge} gauge reads 42 psi"


def react_program() -> dspy.ReAct:
    return dspy.ReAct(with_memory_field("question -> answer"), tools=[read_gauge], max_iters=4)


def plain_react() -> dspy.ReAct:
    """A ReAct whose signature declares no memory field."""
    return dspy.ReAct("question -> answer", tools=[read_gauge], max_iters=4)

