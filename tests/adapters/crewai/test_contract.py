"""The shared adapter contract, on a real ``Crew.kickoff`` with a scripted LLM. A user is
CrewAI's own scope tree: the crew's memory is ``memory.scope("/user/<name>")``."""

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
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        llm = scripted_llm(call_tool=call_tool)
        if user is None:
            memory = AnnealCrewMemory(store, llm=llm, wrap_on_end=wrap)
            crew_memory: Any = memory
        else:  # one memory serves every user; each crew works in its user's scope
            memory = self.shared((id(store), wrap), lambda: AnnealCrewMemory(
                store, llm=scripted_llm(), wrap_on_end=wrap))
            crew_memory = memory.scope(f"/user/{user}")
        listener = AnnealEventListener(memory)
        try:
            output = run_crew(crew_memory, llm, user_input)
        finally:
            listener.close()
        return RunTrace(output=str(output.raw), model_inputs=list(llm.inputs))

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def kickoff(memory: AnnealCrewMemory, scope: str | None) -> None:
            llm = scripted_llm()
            listener = AnnealEventListener(memory)
            try:
                run_crew(memory.scope(scope) if scope is not None else memory, llm,
                         "What is my locker code?")
            finally:
                listener.close()

        return {
            "the scope path": lambda uid: kickoff(
                AnnealCrewMemory(store, llm=scripted_llm()), f"/user/{uid}"),
            "the scope path '/tenant/": lambda uid: kickoff(
                AnnealCrewMemory(store, llm=scripted_llm()), f"/tenant/{uid}/user/bob/notes"),
            "the namespace callable's result": lambda uid: kickoff(
                AnnealCrewMemory(store, llm=scripted_llm(),
                                 namespace=lambda path: {"user": uid}), None),
        }
