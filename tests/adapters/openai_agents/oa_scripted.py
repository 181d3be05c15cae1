"""Scripts for the SDK's own ScriptedModel: a tool turn when asked, then an answer or a wrap."""

from __future__ import annotations

import json
from typing import Any

from agents import function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from anneal_memory.adapters.openai_agents import item_text
from anneal_memory.testing import scripted_compress


@function_tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"toolresult: {query} is 42 psi"


def call_text(call: ModelCall) -> str:
    """Everything one model call received: instructions and every input item's text."""
    items = call.input if isinstance(call.input, list) else [{"content": call.input}]
    return "\n".join([call.system_instructions or ""] + [item_text(i) for i in items])


def compress_step() -> ModelStep:
    """A step answering the wrap prompt it receives with a valid continuity."""

    def respond(call: ModelCall) -> Any:
        return [assistant_message(scripted_compress(call_text(call)))]

    return ModelStep.respond(respond)


def scripted_model(*, call_tool: bool = False, wrap: bool = False,
                   answer: str = "Done: noted.") -> ScriptedModel:
    steps: list[Any] = []
    if call_tool:
        steps.append([function_call("lookup", json.dumps({"query": "pump pressure"}),
                                    call_id="call-1")])
    steps.append([assistant_message(answer)])
    if wrap:
        steps.append(compress_step())
    return ScriptedModel(steps)


def model_inputs(model: ScriptedModel) -> list[str]:
    return [call_text(c) for c in model.calls]
