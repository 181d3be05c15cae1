"""The shared adapter contract, on a real AutoGen AssistantAgent run (replay model)."""

from __future__ import annotations

from typing import Any

from async_contract import AsyncLoopContract
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_scripted import ScriptedClient, lookup, tool_call

from anneal_memory import Store
from anneal_memory.adapters.autogen import AnnealMemory

from contract import RunTrace


class TestAutoGenContract(AsyncLoopContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    async def _run(self, store: Store, user_input: str, *, wrap: bool = False,
                   call_tool: bool = False, user: str | None = None) -> RunTrace:
        script = [tool_call(), "Final answer: done."] if call_tool else ["Final answer: done."]
        client = ScriptedClient(script)
        if user is None:
            memory = AnnealMemory(store, model_client=client, wrap_on_end=wrap)
            task: Any = user_input
        else:
            # AutoGen's only identity is the sender's name on the message: one memory for
            # every user, whose namespace callable reads it
            memory = self.shared((id(store), wrap), lambda: AnnealMemory(
                store, namespace=lambda message: {"user": message.source},
                model_client=ScriptedClient([]), wrap_on_end=wrap))
            task = TextMessage(content=user_input, source=user)
        agent = AssistantAgent("assistant", model_client=client, tools=[lookup],
                               reflect_on_tool_use=True, memory=[memory])
        result = await agent.run(task=task)
        return RunTrace(output=str(result.messages[-1].content), model_inputs=client.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        import asyncio

        def run(uid: str) -> None:
            async def go() -> None:
                client = ScriptedClient(["Final answer: done."])
                memory = AnnealMemory(store, namespace=lambda message: {"user": message.source},
                                      model_client=client)
                agent = AssistantAgent("assistant", model_client=client, tools=[lookup],
                                       memory=[memory])
                await agent.run(task=TextMessage(content="What is my code?", source=uid))
            asyncio.run(go())

        return {"the namespace callable's result": run}
