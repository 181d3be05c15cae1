"""anneal-memory with LangGraph, offline: LangChain's fake chat model stands in for the LLM.

Run: ``python examples/langgraph/example.py [path/to/memory.db]``

Two runs of a real ``create_agent`` agent with ``AnnealMiddleware``: the first calls a
tool and answers, the second is given what the first left in memory; then the wrap
writes the continuity through the agent's own model. A tool also writes through
``AnnealStore``, the LangGraph ``BaseStore`` backed by the same memory.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from anneal_memory import Store
from anneal_memory.adapters.langgraph import AnnealMiddleware, AnnealStore
from anneal_memory.testing import is_wrap_prompt, scripted_compress


@tool
def soil_moisture(bed: str, runtime: ToolRuntime) -> str:
    """Read the soil moisture sensor of a garden bed, and note the reading."""
    reading = f"bed {bed}: 18% moisture, below the 25% target"
    runtime.store.put(("garden", "readings"), bed, {"text": reading})
    return reading


class ScriptedModel(GenericFakeChatModel):
    """Replays its script; answers a wrap prompt with a valid continuity."""

    last_system_prompt: str = ""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self  # the fake model has no tool binding; create_agent asks for it

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if is_wrap_prompt(messages[-1].text):
            reply = AIMessage(content=scripted_compress(messages[-1].text))
            return ChatResult(generations=[ChatGeneration(message=reply)])
        self.last_system_prompt = messages[0].text if messages[0].type == "system" else ""
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def main(db_path: str) -> None:
    with Store(db_path, project_name="Garden") as store:
        long_term = AnnealStore(store)
        first = ScriptedModel(messages=iter([
            AIMessage(content="", tool_calls=[{"name": "soil_moisture", "args": {"bed": "north"},
                                               "id": "call_1", "type": "tool_call"}]),
            AIMessage(content="The north bed is dry (18%): water it this evening."),
        ]))
        memory = AnnealMiddleware(store)
        agent = create_agent(first, tools=[soil_moisture], middleware=[memory], store=long_term)
        out = agent.invoke({"messages": [{"role": "user", "content": "Check the north bed"}]})
        print("run 1 answer:", out["messages"][-1].text)

        second = ScriptedModel(messages=iter([AIMessage(content="Yes: it read 18% earlier.")]))
        agent2 = create_agent(second, tools=[soil_moisture], middleware=[memory], store=long_term)
        out = agent2.invoke({"messages": [{"role": "user", "content": "Was the north bed dry?"}]})
        print("run 2 answer:", out["messages"][-1].text)
        print("recalled memory in the model's system prompt:", "18%" in second.last_system_prompt)

        print("episodes recorded:")
        for ep in reversed(store.recall(limit=20).episodes):
            print(f"  [{ep.type.value}] trust={ep.trust} {ep.content[:70]}")
        item = long_term.get(("garden", "readings"), "north")
        print("BaseStore item:", item.value if item else None)

        outcome = memory.wrap()  # the session ends: compress with the agent's own model
        print("wrap:", outcome.status)
        print("continuity starts:", (store.load_continuity() or "").splitlines()[:1])


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "memory.db")
    main(target)
