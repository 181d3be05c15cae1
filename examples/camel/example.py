"""anneal-memory on a CAMEL ChatAgent, offline: a StubModel subclass plays the model.

Run: python examples/camel/example.py [db path]

Each conversation is a new ChatAgent (nothing carries over but memory). Alice's agent
(``agent_id="alice-gardener"``) is told a fact and gets it back in her next conversation;
bob's agent does not. The agents' own model writes each continuity at the wrap.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from camel.agents import ChatAgent
from camel.models.stub_model import StubModel
from camel.types import ModelType
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice

from anneal_memory import Store
from anneal_memory.adapters.camel import AnnealAgentMemory
from anneal_memory.testing import is_wrap_prompt, scripted_compress


class Scripted(StubModel):
    """Writes a continuity for wrap prompts; otherwise acknowledges. Keeps what it was sent."""

    seen: list[str] = []

    def _run(self, messages, response_format=None, tools=None):  # type: ignore[override]
        last = str(messages[-1].get("content") or "")
        if is_wrap_prompt(last):
            text = scripted_compress(last)
        else:
            self.seen = [str(m.get("content")) for m in messages]
            text = f"Noted: {last}"
        message = ChatCompletionMessage(role="assistant", content=text)
        return ChatCompletion(id="x", created=int(time.time()), model="stub",
                              object="chat.completion",
                              choices=[Choice(index=0, message=message, finish_reason="stop")])


def converse(store: Store, model: Scripted, agent_id: str, question: str) -> list[str]:
    """A new conversation: a new ChatAgent whose memory is its agent_id's."""
    memory = AnnealAgentMemory(store, model=model, wrap_on_end=True)
    agent = ChatAgent("You are a careful gardener.", model=model, memory=memory,
                      agent_id=agent_id)
    print(f"{agent_id}: {question}\nagent: {agent.step(question).msgs[0].content}")
    return model.seen


def main(db: str) -> None:
    model = Scripted(model_type=ModelType.STUB)
    with Store(db, project_name="CamelExample") as store:
        converse(store, model, "alice-gardener", "Our greenhouse heater is a Zephyrion 4000.")
        seen = converse(store, model, "alice-gardener", "Which greenhouse heater do we have?")
        print("alice's memory reached the model:", any("Zephyrion" in t for t in seen))
        seen = converse(store, model, "bob-gardener", "Which greenhouse heater do we have?")
        print("bob's model saw alice's memory:", any("Zephyrion" in t for t in seen))
        alice = store.scoped({"agent": "alice-gardener"})
        print(f"alice: {alice.status().total_episodes} episodes, {alice.status().total_wraps} wraps")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db"))
