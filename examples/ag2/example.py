"""anneal-memory on an AG2 ConversableAgent (register_hook), offline with autogen.testing.TestAgent.

Run: python examples/ag2/example.py [db path]

One assistant with memory talks to two users (each a ConversableAgent of their own name:
AG2 keeps one conversation per partner, and so does memory). Alice's fact reaches the
model in her next chat, never in bob's. Each chat ends with TERMINATE: one wrap per chat.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

from autogen import ConversableAgent
from autogen.testing import TestAgent

from anneal_memory import Store
from anneal_memory.adapters.ag2 import AnnealMemory
from anneal_memory.testing import is_wrap_prompt, scripted_compress

LLM = {"config_list": [{"model": "fake", "model_client_cls": "FakeClient"}]}


class Watching:
    """TestAgent's fake client, keeping what the model is sent and writing a continuity
    for a wrap prompt."""

    def __init__(self, fake: Any) -> None:
        self.fake, self.seen, self._wrap = fake, [], None

    def create(self, **params: Any) -> Any:
        texts = [str(m.get("content") or "") for m in params.get("messages") or []]
        if texts and is_wrap_prompt(texts[-1]):
            self._wrap = scripted_compress(texts[-1])
            return self._wrap
        self.seen.extend(texts)
        return self.fake.create(**params)

    def extract_text_or_completion_object(self, response: Any) -> Any:
        if response is self._wrap:
            return [response]
        return self.fake.extract_text_or_completion_object(response)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)


def chat(assistant: ConversableAgent, user: str, message: str, reply: str) -> list[str]:
    """One chat of ``user`` with the assistant; what its model was sent."""
    partner = ConversableAgent(user, llm_config=False, human_input_mode="NEVER",
                               code_execution_config=False,
                               is_termination_msg=lambda m: "TERMINATE" in str(m.get("content")))
    with TestAgent(assistant, [reply]):
        watching = Watching(assistant.client)
        assistant.client = watching  # type: ignore[assignment]
        result = partner.initiate_chat(assistant, message=message, max_turns=2, silent=True)
    print(f"{user}: {message}\nagent: {result.summary}")
    return watching.seen


def main(db: str) -> None:
    assistant = ConversableAgent("assistant", human_input_mode="NEVER", llm_config=LLM)
    with Store(db, project_name="AG2Example") as store:
        memory = AnnealMemory(store, wrap_on_end=True)  # the assistant's own LLM writes it
        memory.add_to_agent(assistant)
        chat(assistant, "alice", "Our greenhouse heater is a Zephyrion 4000.", "Noted. TERMINATE")
        seen = chat(assistant, "alice", "Which greenhouse heater do we have?", "That one. TERMINATE")
        print("recalled memory reached alice's model:", any("Zephyrion" in t for t in seen))
        seen = chat(assistant, "bob", "Which greenhouse heater do we have?", "No idea. TERMINATE")
        print("bob's model saw alice's memory:", any("Zephyrion" in t for t in seen))
        alice = store.scoped({"user": "alice", "agent": "assistant"})
        print(f"alice: {alice.status().total_episodes} episodes, {alice.status().total_wraps} wraps "
              "(one per chat)")
        print("alice's continuity starts with:",
              (alice.load_continuity() or "(none)").splitlines()[0])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db"))
