"""The shared adapter contract, on a real CAMEL ChatAgent step with a scripted StubModel."""

from __future__ import annotations

from typing import Any

from camel.agents import ChatAgent
from camel_scripted import LOOKUP, ScriptedModel

from anneal_memory import Store
from anneal_memory.adapters.camel import AnnealAgentMemory

from contract import AdapterContract, RunTrace


class TestCamelContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealAgentMemory(memory, model=ScriptedModel(), **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        model = ScriptedModel(call_tool=call_tool)
        memory = AnnealAgentMemory(store, model=model, wrap_on_end=wrap)
        agent = ChatAgent("You are a careful gardener.", model=model, memory=memory, tools=[LOOKUP])
        response = agent.step(user_input)
        return RunTrace(output=response.msgs[0].content if response.msgs else "",
                        model_inputs=model.inputs)
