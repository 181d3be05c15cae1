"""anneal-memory with smolagents, offline: a scripted model stands in for the LLM.

Run: ``python examples/smolagents/example.py [path/to/memory.db]``

Two runs of a real ToolCallingAgent for alice: the first calls a tool and answers, the
second is given what the first one left in memory; bob, on the same store, is not; then
the wrap writes alice's continuity.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from smolagents import Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel

from anneal_memory import Store
from anneal_memory.adapters.smolagents import AnnealMemory
from anneal_memory.testing import is_wrap_prompt, scripted_compress


@tool
def soil_moisture(bed: str) -> str:
    """Read the soil moisture sensor of a garden bed.

    Args:
        bed: the bed's name.
    """
    return f"bed {bed}: 18% moisture, below the 25% target"


def _text(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


class ScriptedModel(Model):
    """Calls the sensor once, then answers; answers a wrap prompt with a valid continuity."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted")
        self.last_system_prompt = ""

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs):
        texts = [_text(m) for m in messages]
        if is_wrap_prompt(texts[-1]):
            return ChatMessage(role=MessageRole.ASSISTANT, content=scripted_compress(texts[-1]))
        self.last_system_prompt = texts[0]
        if not any(m.role == MessageRole.TOOL_RESPONSE for m in messages):
            name, args = "soil_moisture", {"bed": "north"}
        else:
            name, args = "final_answer", {"answer": "Water the north bed tonight."}
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[ChatMessageToolCall(
            id="c1", type="function", function=ChatMessageToolCallFunction(name=name, arguments=args))])


def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        # wrap_on_end=False: we wrap explicitly below
        memory = AnnealMemory(store, namespace={"user": "alice"})
        model = ScriptedModel()
        agent = memory.attach(ToolCallingAgent(tools=[soil_moisture], model=model,
                                               verbosity_level=LogLevel.OFF))

        print("run 1:", agent.run("Does the north bed need water?"))
        for ep in store.scoped({"user": "alice"}).recall(limit=20).episodes:
            print(f"  recorded {ep.type.value:<8} trust={ep.trust:<6} {ep.content[:60]!r}")

        print("run 2:", agent.run("What did the north bed moisture reading say?"))
        seen = "18% moisture" in model.last_system_prompt
        print("  recalled memory in the model's system prompt:", seen)

        bob_model = ScriptedModel()
        bob = AnnealMemory(store, namespace={"user": "bob"}).attach(
            ToolCallingAgent(tools=[soil_moisture], model=bob_model, verbosity_level=LogLevel.OFF))
        bob.run("What did the north bed moisture reading say?")
        print("  bob's system prompt holds alice's reading:", "18% moisture" in bob_model.last_system_prompt)

        outcome = memory.wrap(agent)
        print("wrap:", outcome.status, "-", outcome.message)
        continuity = memory.session_of(agent).store.load_continuity() or ""
        print("continuity starts with:", continuity.splitlines()[0] if continuity else "(none)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "memory.db")
