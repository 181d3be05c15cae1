"""The shared adapter contract, on a real ``Crew.kickoff`` with a scripted LLM."""

from __future__ import annotations

from typing import Any

from crew_scripted import AnnealEventListener, run_crew, scripted_llm

from anneal_memory import Store
from anneal_memory.adapters.crewai import AnnealCrewMemory

from contract import AdapterContract, RunTrace


class TestCrewAIContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealCrewMemory(memory, llm=scripted_llm(), **options)

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        llm = scripted_llm(call_tool=call_tool)
        memory = AnnealCrewMemory(store, llm=llm, wrap_on_end=wrap)
        listener = AnnealEventListener(memory.session)
        try:
            output = run_crew(memory, llm, user_input)
        finally:
            listener.close()
        return RunTrace(output=str(output.raw), model_inputs=list(llm.inputs))
