"""The shared adapter contract, driven through smolagents' real ToolCallingAgent and CodeAgent."""

from __future__ import annotations

from typing import Any

from smol_scripted import ScriptedModel, make_agent

from anneal_memory import Store
from anneal_memory.adapters.smolagents import AnnealMemory

from contract import AdapterContract, RunTrace


class _SmolagentsContract(AdapterContract):
    code = False

    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        model = ScriptedModel(code=self.code, answer="Noted and done.", call_tool=call_tool)
        memory = AnnealMemory(store, wrap_on_end=wrap)
        agent = make_agent(model, memory)
        output = memory.run(agent, user_input)
        return RunTrace(output=str(output), model_inputs=model.inputs)


class TestToolCallingAgentContract(_SmolagentsContract):
    code = False


class TestCodeAgentContract(_SmolagentsContract):
    code = True
