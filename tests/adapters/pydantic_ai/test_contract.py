"""The shared adapter contract, on a real Pydantic AI agent run."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_scripted import ScriptedModel, lookup

from anneal_memory import Store
from anneal_memory.adapters.pydantic_ai import AnnealMemory

from contract import AdapterContract, RunTrace


class TestPydanticAIContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        scripted = ScriptedModel(call_tool=call_tool)
        memory = AnnealMemory(store, wrap_on_end=wrap)
        agent = Agent(scripted.model, tools=[lookup], capabilities=[memory])
        result = agent.run_sync(user_input)
        return RunTrace(output=str(result.output), model_inputs=scripted.inputs)
