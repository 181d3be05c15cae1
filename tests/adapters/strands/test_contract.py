"""The shared adapter contract, on Strands' real agent loop (a user is the invocation's
``invocation_state["user_id"]``, Strands' per-call data)."""

from __future__ import annotations

from typing import Any

from strands import Agent
from strands_scripted import ScriptedModel, lookup

from anneal_memory import Store
from anneal_memory.adapters.strands import AnnealMemory

from contract import AdapterContract, RunTrace


def by_state(context: Any) -> dict[str, str]:
    return {"user": context.invocation_state["uid"]}


class TestStrandsContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def _memory(self, store: Store, wrap: bool, user: str | None) -> AnnealMemory:
        if user is None:
            return AnnealMemory(store, wrap_on_end=wrap)
        # one memory manager serves every user: identity from each call's invocation_state
        return self.shared((id(store), wrap), lambda: AnnealMemory(store, wrap_on_end=wrap))

    def _agent(self, store: Store, wrap: bool, user: str | None, call_tool: bool = False
               ) -> tuple[Agent, ScriptedModel]:
        scripted = ScriptedModel(call_tool=call_tool)
        agent = Agent(model=scripted, tools=[lookup], callback_handler=None,
                      memory_manager=self._memory(store, wrap, user))
        return agent, scripted

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        agent, scripted = self._agent(store, wrap, user, call_tool)
        state = {"user_id": user} if user is not None else {}
        result = agent(user_input, invocation_state=state)
        return RunTrace(output=str(result), model_inputs=scripted.inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        agent, scripted = self._agent(store, wrap, user)
        state = {"user_id": user} if user is not None else {}
        result = await agent.invoke_async(user_input, invocation_state=state)
        return RunTrace(output=str(result), model_inputs=scripted.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def through_state(uid: str) -> None:
            agent = Agent(model=ScriptedModel(), callback_handler=None,
                          memory_manager=AnnealMemory(store))
            agent("What is my locker code?", invocation_state={"user_id": uid})

        def through_callable(uid: str) -> None:
            agent = Agent(model=ScriptedModel(), callback_handler=None,
                          memory_manager=AnnealMemory(store, namespace=by_state))
            agent("What is my locker code?", invocation_state={"uid": uid})

        return {"invocation_state['user_id']": through_state,
                "the namespace callable's result": through_callable}
