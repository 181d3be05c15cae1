"""The shared adapter contract, driven through a real FunctionAgent with MockFunctionCallingLLM."""

from __future__ import annotations

import asyncio
from typing import Any

from li_scripted import Script, make_agent

from anneal_memory import Store
from anneal_memory.adapters.llamaindex import AnnealMemory, AnnealToolRecorder

from contract import AdapterContract, RunTrace


class TestLlamaIndexContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory.from_store(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        script = Script(answer="Noted and done.",
                        call=("read_gauge", {"name": "pump"}) if call_tool else None)
        memory = AnnealMemory.from_store(store, wrap_on_end=wrap)
        with AnnealToolRecorder(memory.session).attached():
            result = asyncio.run(memory.arun(make_agent(script), user_input))
        return RunTrace(output=str(result), model_inputs=script.inputs)
