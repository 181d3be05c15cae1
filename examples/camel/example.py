"""anneal-memory on a CAMEL ChatAgent, offline: a StubModel subclass plays the model.

Run: python examples/camel/example.py [db path]
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
    """Writes a continuity for wrap prompts; otherwise says how much memory it was shown."""

    def _run(self, messages, response_format=None, tools=None):  # type: ignore[override]
        last = str(messages[-1].get("content") or "")
        if is_wrap_prompt(last):
            text = scripted_compress(last)
        else:
            shown = sum("Zephyrion" in str(m.get("content")) for m in messages[:-1])
            text = f"(memory mentioning Zephyrion: {shown}) Noted: {last}"
        message = ChatCompletionMessage(role="assistant", content=text)
        return ChatCompletion(id="x", created=int(time.time()), model="stub",
                              object="chat.completion",
                              choices=[Choice(index=0, message=message, finish_reason="stop")])


def main(db: str) -> None:
    model = Scripted(model_type=ModelType.STUB)
    with Store(db, project_name="CamelExample") as store:
        for question in ("Our greenhouse heater is a Zephyrion 4000.",
                         "Which greenhouse heater do we have?"):
            memory = AnnealAgentMemory(store, model=model, wrap_on_end=True)
            agent = ChatAgent("You are a careful gardener.", model=model, memory=memory)
            reply = agent.step(question).msgs[0].content
            print(f"user: {question}\nagent: {reply}\nwrap: {memory.session.last_wrap.status}")
        print(f"episodes stored: {store.status().total_episodes}, wraps: {store.status().total_wraps}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db"))
