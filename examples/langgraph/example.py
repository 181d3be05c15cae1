"""anneal-memory with LangGraph, offline, for two users: LangChain's fake chat model stands
in for the LLM.

Run: ``python examples/langgraph/example.py [path/to/memory.db]``

One ``create_agent`` agent with ``AnnealMiddleware``, one store, two users told apart by the
run's ``context`` (``context_schema``). Alice's run calls a tool (which also writes through
``AnnealStore``, the LangGraph ``BaseStore`` over the same database) and wraps her memory;
Bob's run sees none of it; Alice's next run gets her memory as a labelled message. The
reading the tool stores expires after a day (``ttl=``, in minutes, as LangGraph's
``SqliteStore`` takes it).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
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


@dataclass
class Context:
    user_id: str


@tool
def soil_moisture(bed: str, runtime: ToolRuntime) -> str:
    """Read the soil moisture sensor of a garden bed, and note the reading."""
    reading = f"bed {bed}: 18% moisture, below the 25% target"
    # a reading is stale after a day: the store hides it then, and its sweep deletes it
    runtime.store.put(("users", runtime.context.user_id, "readings"), bed, {"text": reading},
                      ttl=24 * 60)
    return reading


class ScriptedModel(GenericFakeChatModel):
    """Replays its script; answers a wrap prompt with a valid continuity."""

    last_input: str = ""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self  # the fake model has no tool binding; create_agent asks for it

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if is_wrap_prompt(messages[-1].text):
            reply = AIMessage(content=scripted_compress(messages[-1].text))
            return ChatResult(generations=[ChatGeneration(message=reply)])
        self.last_input = "\n".join(m.text for m in messages)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def main(db_path: str) -> None:
    with Store(db_path, project_name="Garden") as store:
        memory = AnnealMiddleware(store, wrap_on_end=True)
        items = AnnealStore(store)
        model = ScriptedModel(messages=iter([
            AIMessage(content="", tool_calls=[{"name": "soil_moisture", "args": {"bed": "north"},
                                               "id": "call_1", "type": "tool_call"}]),
            AIMessage(content="The north bed is dry (18%): water it this evening."),
            AIMessage(content="I have no reading of your beds."),
            AIMessage(content="Yes: it read 18% earlier."),
        ]))
        agent = create_agent(model, tools=[soil_moisture], middleware=[memory], store=items,
                             context_schema=Context)

        def ask(user: str, text: str) -> str:
            out = agent.invoke({"messages": [{"role": "user", "content": text}]},
                               context=Context(user_id=user))
            return out["messages"][-1].text

        print("alice, run 1:", ask("alice", "Check the north bed"))
        alice = store.scoped({"user": "alice"})
        print("continuity saved:", "18%" in (alice.load_continuity() or ""))
        print("bob, run 1:", ask("bob", "Was the north bed dry?"))
        print("bob's model saw alice's memory:", "18%" in model.last_input)
        print("alice, run 2:", ask("alice", "Was the north bed dry?"))
        print("recalled memory in the model's input:", "18%" in model.last_input)
        print("alice's episodes:")
        for ep in reversed(alice.recall(limit=20).episodes):
            print(f"  [{ep.type.value}] trust={ep.trust} {ep.content[:70]}")
        item = items.get(("users", "alice", "readings"), "north")
        print("BaseStore item (state, not memory):", item.value if item else None)


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "memory.db")
    main(target)
