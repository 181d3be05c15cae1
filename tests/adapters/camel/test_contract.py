"""The shared adapter contract, on a real CAMEL ChatAgent step with a scripted StubModel.

CAMEL's identity is the ChatAgent's ``agent_id``: a user here is an agent of that id (the
memory ``{"agent": agent_id}``), one ChatAgent and memory per conversation as CAMEL has it."""

from __future__ import annotations

from typing import Any

from camel.agents import ChatAgent
from camel.memories.context_creators.score_based import ScoreBasedContextCreator
from camel_scripted import LOOKUP, ScriptedModel

from anneal_memory import Store
from anneal_memory.adapters.camel import AnnealAgentMemory

from contract import AdapterContract, RunTrace


class TestCamelContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealAgentMemory(memory, model=ScriptedModel(), **options)

    def memory_of(self, store: Store, user: str) -> Any:
        return store.scoped({"agent": user})

    def _agent(self, store: Store, wrap: bool, call_tool: bool,
               user: str | None) -> tuple[ChatAgent, ScriptedModel]:
        model = ScriptedModel(call_tool=call_tool)
        # no model= for the memory: the agent's own model writes the continuity
        creator = ScoreBasedContextCreator(model.token_counter, model.token_limit)
        memory = AnnealAgentMemory(store, context_creator=creator, wrap_on_end=wrap)
        agent = ChatAgent("You are a careful gardener.", model=model, memory=memory,
                          tools=[LOOKUP], agent_id=user)
        return agent, model

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        agent, model = self._agent(store, wrap, call_tool, user)
        response = agent.step(user_input)
        return RunTrace(output=response.msgs[0].content if response.msgs else "",
                        model_inputs=model.inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        agent, model = self._agent(store, wrap, False, user)
        response = await agent.astep(user_input)
        return RunTrace(output=response.msgs[0].content if response.msgs else "",
                        model_inputs=model.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def step(memory: AnnealAgentMemory, agent_id: str | None) -> None:
            model = ScriptedModel()
            agent = ChatAgent("You are a careful gardener.", model=model, memory=memory,
                              tools=[LOOKUP], agent_id=agent_id)
            agent.step("What is my locker code?")

        def creator() -> Any:
            model = ScriptedModel()
            return ScoreBasedContextCreator(model.token_counter, model.token_limit)

        return {
            "the ChatAgent's agent_id": lambda uid: step(
                AnnealAgentMemory(store, context_creator=creator()), uid),
            "the namespace callable's result": lambda uid: step(
                AnnealAgentMemory(store, context_creator=creator(),
                                  namespace=lambda agent_id: {"user": uid}), "gardener"),
        }
