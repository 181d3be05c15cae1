"""The shared adapter contract, driven through a real ADK Runner with a scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

from adk_scripted import ScriptedLlm, make_runner, read_gauge, run_turn
from google.adk.agents import LlmAgent

from anneal_memory import Store
from anneal_memory.adapters.google_adk import AnnealMemoryPlugin, AnnealMemoryService

from contract import AdapterContract, RunTrace


class TestGoogleAdkContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        compress = options.pop("compress", None)  # a plugin option; the rest go to the service
        return AnnealMemoryPlugin(AnnealMemoryService(memory, **options), compress=compress)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        llm = ScriptedLlm(answer="Noted and done.", inputs=[],
                          call=("read_gauge", {"name": "pump"}) if call_tool else None)
        service = AnnealMemoryService(store)
        agent = LlmAgent(name="gardener", model=llm, tools=[read_gauge],
                         instruction="You look after the garden.")
        runner = make_runner(agent, plugins=[AnnealMemoryPlugin(service, wrap_on_end=wrap)],
                             memory_service=service)
        output = asyncio.run(run_turn(runner, "u1", user_input))
        return RunTrace(output=output, model_inputs=llm.inputs)
