"""The shared adapter contract, on a real AutoGen AssistantAgent run (replay model)."""

from __future__ import annotations

import asyncio
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_scripted import ScriptedClient, lookup, tool_call

from anneal_memory import Store
from anneal_memory.adapters.autogen import AnnealMemory

from contract import AdapterContract, RunTrace


class TestAutoGenContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        script = [tool_call(), "Final answer: done."] if call_tool else ["Final answer: done."]
        client = ScriptedClient(script)
        memory = AnnealMemory(store, model_client=client, wrap_on_end=wrap)
        agent = AssistantAgent("assistant", model_client=client, tools=[lookup],
                               reflect_on_tool_use=True, memory=[memory],
                               model_context=memory.model_context())
        result = asyncio.run(agent.run(task=user_input))
        return RunTrace(output=str(result.messages[-1].content), model_inputs=client.inputs)
