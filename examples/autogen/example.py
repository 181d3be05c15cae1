"""anneal-memory on an AutoGen AssistantAgent, offline: ReplayChatCompletionClient plays the model.

Run: python examples/autogen/example.py [db path]
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
    """Replays its answers; writes a continuity when asked to wrap."""

    async def create(self, messages, **kwargs):  # type: ignore[override]
        last = messages[-1].content
        if isinstance(last, str) and is_wrap_prompt(last):
            return CreateResult(finish_reason="stop", content=scripted_compress(last),
                                usage=RequestUsage(0, 0), cached=False)
        return await super().create(messages, **kwargs)


async def main(db: str) -> None:
    client = Scripted(["Noted: the heater is a Zephyrion 4000.", "It is a Zephyrion 4000."])
    with Store(db, project_name="AutoGenExample") as store:
        memory = AnnealMemory(store, model_client=client)
        agent = AssistantAgent("assistant", model_client=client, memory=[memory],
                               model_context=memory.model_context())
        for task in ("Our greenhouse heater is a Zephyrion 4000.",
                     "Which greenhouse heater do we have?"):
            result = await agent.run(task=task)
            print(f"user: {task}\nagent: {result.messages[-1].content}")
            events = [m for m in result.messages if type(m).__name__ == "MemoryQueryEvent"]
            print(f"memory injected: {bool(events)}")
        outcome = await memory.awrap()
        print(f"wrap: {outcome.status} ({outcome.message})")
        found = await memory.query("greenhouse heater")
        print("query 'greenhouse heater':", [c.content for c in found.results])
        print(f"episodes stored: {store.status().total_episodes}, wraps: {store.status().total_wraps}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "memory.db")))
