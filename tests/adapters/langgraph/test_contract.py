"""The shared adapter contract, driven through create_agent's real loop."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from lc_scripted import read_gauge, scripted

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealMiddleware

from contract import AdapterContract, RunTrace


class TestLangGraphContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMiddleware(memory, **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        model = scripted("Done: noted and answered.", call_tool=call_tool)
        memory = AnnealMiddleware(store, wrap_on_end=wrap)
        agent = create_agent(model, tools=[read_gauge], middleware=[memory])
        result = agent.invoke({"messages": [{"role": "user", "content": user_input}]})
        return RunTrace(output=result["messages"][-1].text, model_inputs=list(model.seen))
