"""The shared adapter contract, on a real AG2 two-agent chat with TestAgent."""

from __future__ import annotations

from typing import Any

from ag2_scripted import make_pair, scripted, tool_call

from anneal_memory import Store
from anneal_memory.adapters.ag2 import AnnealMemory

from contract import AdapterContract, RunTrace


class TestAG2Contract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        assistant, user = make_pair()
        memory = AnnealMemory(store)
        memory.add_to_agent(assistant)
        replies = [tool_call(), "Final answer: done. TERMINATE"] if call_tool else [
            "Final answer: done. TERMINATE"]
        with scripted(assistant, replies) as client:
            result = user.initiate_chat(assistant, message=user_input, max_turns=3, silent=True)
            if wrap:
                memory.wrap()
        return RunTrace(output=str(result.summary), model_inputs=client.inputs)
