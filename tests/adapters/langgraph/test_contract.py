"""The shared adapter contract, driven through create_agent's real loop. A user is the
run's ``context`` (``context_schema`` with a ``user_id``): the identity the middleware
takes by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from lc_scripted import read_gauge, scripted

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealMiddleware

from contract import AdapterContract, RunTrace


@dataclass
class Ctx:
    user_id: str


class TestLangGraphContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMiddleware(memory, **options)

    def _agent(self, store: Store, wrap: bool, user: str | None, model: Any) -> tuple[Any, dict]:
        if user is None:
            memory = AnnealMiddleware(store, wrap_on_end=wrap)
            return create_agent(model, tools=[read_gauge], middleware=[memory]), {}
        memory = self.shared((id(store), wrap), lambda: AnnealMiddleware(store, wrap_on_end=wrap))
        agent = create_agent(model, tools=[read_gauge], middleware=[memory], context_schema=Ctx)
        return agent, {"context": Ctx(user_id=user)}

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        model = scripted("Done: noted and answered.", call_tool=call_tool)
        agent, extra = self._agent(store, wrap, user, model)
        result = agent.invoke({"messages": [{"role": "user", "content": user_input}]}, **extra)
        return RunTrace(output=result["messages"][-1].text, model_inputs=list(model.seen))

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        model = scripted("Done: noted and answered.")
        agent, extra = self._agent(store, wrap, user, model)
        result = await agent.ainvoke({"messages": [{"role": "user", "content": user_input}]},
                                     **extra)
        return RunTrace(output=result["messages"][-1].text, model_inputs=list(model.seen))

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def invoke(memory: AnnealMiddleware, **extra: Any) -> None:
            agent = create_agent(scripted("Done."), tools=[read_gauge], middleware=[memory],
                                 context_schema=Ctx if "context" in extra else None)
            agent.invoke({"messages": [{"role": "user", "content": "What is my code?"}]},
                         **extra)

        return {
            "the run's runtime.context": lambda uid: invoke(
                AnnealMiddleware(store), context=Ctx(user_id=uid)),
            "the run's config['configurable']": lambda uid: invoke(
                AnnealMiddleware(store), config={"configurable": {"user_id": uid}}),
            "the namespace callable's result": lambda uid: invoke(
                AnnealMiddleware(store, namespace=lambda runtime: {"user": uid})),
            "the namespace ('users', '{user_id}')'s {user_id}": lambda uid: invoke(
                AnnealMiddleware(store, namespace=("users", "{user_id}")),
                context=Ctx(user_id=uid)),
        }
