"""anneal-memory on a Haystack Agent, offline: MockChatGenerator plays the model.

Run: python examples/haystack/example.py [db path]
Two runs: the first records a fact and wraps; the second gets it back as memory.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack.components.agents import Agent  # noqa: E402
from haystack.components.generators.chat import MockChatGenerator  # noqa: E402
from haystack.dataclasses import ChatMessage  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.haystack import AnnealMemory  # noqa: E402
from anneal_memory.testing import is_wrap_prompt, scripted_compress  # noqa: E402


def model(messages: list[ChatMessage]) -> str:
    """A scripted model: writes a continuity for wrap prompts, says what memory it saw."""
    last = messages[-1].text or ""
    if is_wrap_prompt(last):
        return scripted_compress(last)
    seen = [m.text for m in messages if (m.meta or {}).get("anneal_memory")]
    return f"(saw {len(seen)} memory block(s)) Noted: {last}"


def main(db: str) -> None:
    generator = MockChatGenerator(response_fn=model)
    with Store(db, project_name="HaystackExample") as store:
        memory = AnnealMemory(store, chat_generator=generator, wrap_on_end=True)
        agent = Agent(chat_generator=generator, hooks=memory.hooks())
        for question in ("Our greenhouse heater is a Zephyrion 4000.",
                         "Which greenhouse heater do we have?"):
            result = agent.run(messages=[ChatMessage.from_user(question)])
            print(f"user: {question}\nagent: {result['last_message'].text}")
            last = memory.session.last_wrap
            print(f"wrap: {last.status if last else None}")
        injected = [m.text for m in result["messages"] if (m.meta or {}).get("anneal_memory")]
        print("memory given to the model on run 2:\n" + (injected[0] if injected else "(none)"))
        print(f"episodes stored: {store.status().total_episodes}, wraps: {store.status().total_wraps}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db"))
