"""The shared adapter contract, on a real Pydantic AI agent run (a user is the run's deps)."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_scripted import ScriptedModel, lookup

from anneal_memory import Store
from anneal_memory.adapters.pydantic_ai import AnnealMemory

from contract import AdapterContract, RunTrace


def by_deps(ctx: Any) -> dict[str, str]:
    return {"user": ctx.deps}


class TestPydanticAIContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def _memory(self, store: Store, wrap: bool, user: str | None) -> AnnealMemory:
        if user is None:
            return AnnealMemory(store, wrap_on_end=wrap)
        # one capability serves every user: the namespace comes from each run's deps
        return self.shared((id(store), wrap), lambda: AnnealMemory(
            store, wrap_on_end=wrap, namespace=by_deps))

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        scripted = ScriptedModel(call_tool=call_tool)
        agent = Agent(scripted.model, deps_type=str, tools=[lookup],
                      capabilities=[self._memory(store, wrap, user)])
        result = agent.run_sync(user_input, deps=user or "")
        return RunTrace(output=str(result.output), model_inputs=scripted.inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        scripted = ScriptedModel()
        agent = Agent(scripted.model, deps_type=str,
                      capabilities=[self._memory(store, wrap, user)])
        result = await agent.run(user_input, deps=user or "")
        return RunTrace(output=str(result.output), model_inputs=scripted.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def run(uid: str) -> None:
            agent = Agent(ScriptedModel().model, deps_type=str, tools=[lookup],
                          capabilities=[AnnealMemory(store, namespace=by_deps)])
            agent.run_sync("What is my locker code?", deps=uid)

        return {"the namespace callable's result": run}
