"""The shared adapter contract, on a real AG2 two-agent chat with TestAgent.

AG2's identity is the partner: the memory is ``{"user": <partner>, "agent": <agent>}``. A
user here is a user agent of that name; a run without one is the partner named "user"."""

from __future__ import annotations

from typing import Any

from ag2_scripted import make_pair, scripted, tool_call
from autogen import ConversableAgent

from anneal_memory import Store
from anneal_memory.adapters.ag2 import AnnealMemory

from contract import AdapterContract, RunTrace


class TestAG2Contract(AdapterContract):
    def build(self, memory: Any, **options: Any) -> Any:
        return AnnealMemory(memory, **options)

    def memory_of(self, store: Store, user: str) -> Any:
        return store.scoped({"user": user, "agent": "assistant"})

    def run(self, store: Store, user_input: str, *, wrap: bool = False,
            call_tool: bool = False, user: str | None = None) -> RunTrace:
        if user is None:
            assistant, partner = make_pair()
            memory = AnnealMemory(store, wrap_on_end=wrap)
            memory.add_to_agent(assistant)
        else:  # one assistant (and memory) serves every user, as a server would
            assistant, memory = self.shared((id(store), wrap), lambda: self._assistant(store, wrap))
            _, partner = make_pair(user_name=user, assistant=assistant)
        replies = [tool_call(), "Final answer: done. TERMINATE"] if call_tool else [
            "Final answer: done. TERMINATE"]
        with scripted(assistant, replies) as client:
            result = partner.initiate_chat(assistant, message=user_input, max_turns=3, silent=True)
        return RunTrace(output=str(result.summary), model_inputs=client.inputs)

    async def arun(self, store: Store, user_input: str, *, wrap: bool = False,
                   user: str | None = None) -> RunTrace:
        # AG2's async chat; an assistant per user here, since the test's scripted client is
        # swapped onto the agent for the length of a chat
        assistant, memory = self._assistant(store, wrap)
        _, partner = make_pair(user_name=user or "user", assistant=assistant)
        with scripted(assistant, ["Final answer: done. TERMINATE"]) as client:
            result = await partner.a_initiate_chat(assistant, message=user_input, max_turns=3,
                                                   silent=True)
        return RunTrace(output=str(result.summary), model_inputs=client.inputs)

    def identity_runs(self, store: Store) -> dict[str, Any]:
        def chat(memory: AnnealMemory, partner_name: str) -> None:
            assistant, _ = make_pair()
            memory.add_to_agent(assistant)
            _, partner = make_pair(user_name=partner_name, assistant=assistant)
            with scripted(assistant, ["Final answer: done. TERMINATE"]):
                partner.initiate_chat(assistant, message="What is my code?", max_turns=3,
                                      silent=True)

        return {
            "the chat partner's name": lambda uid: chat(AnnealMemory(store), uid),
            "the namespace callable's result": lambda uid: chat(
                AnnealMemory(store, namespace=lambda context: {"user": uid}), "user"),
        }

    @staticmethod
    def _assistant(store: Store, wrap: bool) -> tuple[ConversableAgent, AnnealMemory]:
        assistant, _ = make_pair()
        memory = AnnealMemory(store, wrap_on_end=wrap)
        memory.add_to_agent(assistant)
        return assistant, memory

    # the single-user check, in the memory AG2's identity picks: (user, assistant)
    def test_wrap_saves_continuity(self, store: Store) -> None:
        view = self.memory_of(store, "user")
        assert view.load_continuity() is None
        self.run(store, "Decide to water the tomatoes at dawn", wrap=True)
        text = view.load_continuity()
        assert text is not None and "## State" in text
        assert view.status().total_wraps == 1
        assert store.load_continuity() is None  # never the store's shared continuity
