"""The shared adapter contract, on a real ``Runner.run`` with the SDK's ScriptedModel."""

from __future__ import annotations

from typing import Any

from agents import Agent, Runner
from oa_scripted import lookup, model_inputs, scripted_model

from anneal_memory import Store
from anneal_memory.adapters.openai_agents import AnnealMemory

from contract import AdapterContract, RunTrace


class TestOpenAIAgentsContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        model = scripted_model(call_tool=call_tool, wrap=wrap)
        memory = AnnealMemory(store, wrap_on_end=wrap)
        agent = Agent(name="gardener", instructions=memory.instructions("You help gardeners."),
                      model=model, tools=[lookup])
        result = Runner.run_sync(agent, user_input, hooks=memory.run_hooks)
        return RunTrace(output=str(result.final_output), model_inputs=model_inputs(model))
