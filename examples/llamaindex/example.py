"""anneal-memory with LlamaIndex, offline: MockFunctionCallingLLM stands in for the LLM.

Run: ``python examples/llamaindex/example.py [path/to/memory.db]``

Two runs of a real FunctionAgent with ``AnnealMemory``: the first calls a tool and answers,
the second gets what the first left in memory through the anneal memory block. Then the
wrap writes the continuity with the agent's own (scripted) LLM.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool

from anneal_memory import Store
from anneal_memory.adapters.llamaindex import AnnealMemory, AnnealToolRecorder
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def soil_moisture(bed: str) -> str:
    """Read the soil moisture sensor of a garden bed."""
    return f"bed {bed}: 18% moisture, below the 25% target"


SEEN: list[str] = []


def scripted(messages: list[ChatMessage], **kwargs) -> ChatMessage:
    """Calls the sensor after a user turn, then answers; a wrap prompt gets a continuity."""
    texts = ["\n".join(b.text for b in m.blocks if isinstance(b, TextBlock)) for m in messages]
    if is_wrap_prompt(texts[-1]):
        return ChatMessage(role=MessageRole.ASSISTANT, content=scripted_compress(texts[-1]))
    SEEN.append("\n".join(texts))
    if messages[-1].role == MessageRole.USER and "What did" not in texts[-1]:
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[ToolCallBlock(
            tool_call_id="c1", tool_name="soil_moisture", tool_kwargs={"bed": "north"})])
    return ChatMessage(role=MessageRole.ASSISTANT, content="Water the north bed tonight.")


async def main(db_path: Path) -> None:
    with Store(db_path, project_name="Gardener") as store:
        memory = AnnealMemory.from_store(store)  # wrap_on_end=False: we wrap explicitly below
        agent = FunctionAgent(tools=[FunctionTool.from_defaults(soil_moisture)],
                              llm=MockFunctionCallingLLM(response_generator=scripted))
        with AnnealToolRecorder(memory.session).attached():
            print("run 1:", await memory.arun(agent, "Does the north bed need water?"))
            for ep in store.recall(limit=20).episodes:
                print(f"  recorded {ep.type.value:<8} trust={ep.trust:<6} {ep.content[:60]!r}")
            SEEN.clear()
            print("run 2:", await memory.arun(agent, "What did the north bed moisture reading say?"))
        print("  recalled memory in the model's input:", any("18% moisture" in s for s in SEEN))

        outcome = await memory.awrap()  # the agent's own LLM
        print("wrap:", outcome.status, "-", outcome.message)
        continuity = store.load_continuity() or ""
        print("continuity starts with:", continuity.splitlines()[0] if continuity else "(none)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp) / "memory.db"))
