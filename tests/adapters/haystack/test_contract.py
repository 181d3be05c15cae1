"""The shared adapter contract, on a real Haystack Agent run with MockChatGenerator."""

from __future__ import annotations

from typing import Any

from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage
from haystack_scripted import LOOKUP, Scripted

from anneal_memory import Store
from anneal_memory.adapters.haystack import AnnealMemory

from contract import AdapterContract, RunTrace


class TestHaystackContract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def _agent(self, store: Store, wrap: bool, call_tool: bool,
               user: str | None) -> tuple[Agent, Scripted, dict[str, Any]]:
        scripted = Scripted(call_tool=call_tool)
        if user is None:
            memory = AnnealMemory(store, chat_generator=scripted.generator, wrap_on_end=wrap)
            return (Agent(chat_generator=scripted.generator, tools=[LOOKUP], hooks=memory.hooks()),
                    scripted, {})
        # one memory serves every user; Haystack's own per-request identity names the user
        memory = self.shared((id(store), wrap), lambda: AnnealMemory(
            store, chat_generator=Scripted().generator, wrap_on_end=wrap))
        agent = Agent(chat_generator=scripted.generator, tools=[LOOKUP], hooks=memory.hooks())
        return agent, scripted, {"hook_context": {"user_id": user}}

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        agent, scripted, extra = self._agent(store, wrap, call_tool, user)
        result = agent.run(messages=[ChatMessage.from_user(user_input)], **extra)
        return RunTrace(output=result["last_message"].text or "", model_inputs=scripted.inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        agent, scripted, extra = self._agent(store, wrap, False, user)
        result = await agent.run_async(messages=[ChatMessage.from_user(user_input)], **extra)
        return RunTrace(output=result["last_message"].text or "", model_inputs=scripted.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def run(memory: AnnealMemory, context: dict[str, Any] | None) -> None:
            scripted = Scripted()
            agent = Agent(chat_generator=scripted.generator, tools=[LOOKUP],
                          hooks=memory.hooks())
            agent.run(messages=[ChatMessage.from_user("What is my locker code?")],
                      **({"hook_context": context} if context is not None else {}))

        def by_key(key: str) -> Any:
            return lambda uid: run(AnnealMemory(store, chat_generator=Scripted().generator),
                                   {key: uid})

        return {
            "the run's hook_context: the user": by_key("user_id"),
            "the run's hook_context: the tenant": by_key("tenant_id"),
            "the run's hook_context: the project": by_key("project_id"),
            "the run's hook_context: the agent": by_key("agent_id"),
            "the namespace callable's result": lambda uid: run(AnnealMemory(
                store, chat_generator=Scripted().generator,
                namespace=lambda context: {"user": uid}), {}),
        }
