"""anneal-memory on an AutoGen AssistantAgent, offline: ReplayChatCompletionClient plays the model.

Run: python examples/autogen/example.py [db path]

Alice tells one agent a fact; a new agent (a fresh model context, as after a restart) is
given it back by memory alone; bob, on the same store, is not. Then alice's memory wraps.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_core.models import CreateResult, RequestUsage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

from anneal_memory import Store  # noqa: E402
from anneal_memory.adapters.autogen import AnnealMemory  # noqa: E402
from anneal_memory.testing import is_wrap_prompt, scripted_compress  # noqa: E402


class Scripted(ReplayChatCompletionClient):
    """Replays its answers; writes a continuity when asked to wrap; keeps what it was sent."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__(answers)
        self.seen: list[str] = []

    async def create(self, messages, **kwargs):  # type: ignore[override]
        self.seen.extend(m.content for m in messages if isinstance(m.content, str))
        last = messages[-1].content
        if isinstance(last, str) and is_wrap_prompt(last):
            return CreateResult(finish_reason="stop", content=scripted_compress(last),
                                usage=RequestUsage(0, 0), cached=False)
        return await super().create(messages, **kwargs)


async def ask(memory: AnnealMemory, task: str, answer: str) -> Scripted:
    """One turn of a new agent: nothing carries over but what memory gives it."""
    client = Scripted([answer])
    agent = AssistantAgent("assistant", model_client=client, memory=[memory])
    result = await agent.run(task=task)
    print(f"user: {task}\nagent: {result.messages[-1].content}")
    return client


async def main(db: str) -> None:
    with Store(db, project_name="AutoGenExample") as store:
        writer = Scripted([])
        alice = AnnealMemory(store, namespace={"user": "alice"}, model_client=writer)
        bob = AnnealMemory(store, namespace={"user": "bob"})

        await ask(alice, "Our greenhouse heater is a Zephyrion 4000.", "Noted.")
        client = await ask(alice, "Which greenhouse heater do we have?", "The one you noted.")
        print("recalled memory reached alice's model:", any("Zephyrion" in t for t in client.seen))
        client = await ask(bob, "Which greenhouse heater do we have?", "I do not know.")
        print("bob's model saw alice's memory:", any("Zephyrion" in t for t in client.seen))

        outcome = await alice.awrap()
        print(f"wrap: {outcome.status} ({outcome.message})")
        found = await alice.query("greenhouse heater")
        print("alice's query 'greenhouse heater':", [c.content for c in found.results])
        view = store.scoped({"user": "alice"})
        print(f"alice's episodes: {view.status().total_episodes}, "
              f"wraps: {view.status().total_wraps}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db")))
