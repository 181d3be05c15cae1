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

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False) -> RunTrace:
        scripted = Scripted(call_tool=call_tool)
        memory = AnnealMemory(store, chat_generator=scripted.generator, wrap_on_end=wrap)
        agent = Agent(chat_generator=scripted.generator, tools=[LOOKUP], hooks=memory.hooks())
        result = agent.run(messages=[ChatMessage.from_user(user_input)])
        return RunTrace(output=result["last_message"].text or "", model_inputs=scripted.inputs)
