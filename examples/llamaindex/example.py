"""anneal-memory with LlamaIndex, offline: MockFunctionCallingLLM stands in for the LLM.

Run: ``python examples/llamaindex/example.py [path/to/memory.db]``

Two conversations of alice with a real FunctionAgent, each with a fresh ``AnnealMemory``
(as after a restart: LlamaIndex's own chat history starts empty): the first calls a tool
and answers, the second gets what the first left only through the anneal memory block.
Bob, on the same store, does not. The agent is run the native way,
``agent.run(user_msg=..., memory=memory)``; the wrap then writes alice's continuity with
that agent's own (scripted) LLM.
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
from anneal_memory.adapters.llamaindex import AnnealMemory
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
        agent = FunctionAgent(tools=[FunctionTool.from_defaults(soil_moisture)],
                              llm=MockFunctionCallingLLM(response_generator=scripted))
        # session_id names whose memory it is; wrap_on_end=False: we wrap explicitly below
        memory = AnnealMemory.from_store(store, session_id="alice")
        print("run 1:", await agent.run(user_msg="Does the north bed need water?", memory=memory))
        for ep in store.scoped({"user": "alice"}).recall(limit=20).episodes:
            print(f"  recorded {ep.type.value:<8} trust={ep.trust:<6} {ep.content[:60]!r}")

        SEEN.clear()
        memory = AnnealMemory.from_store(store, session_id="alice")  # a new conversation
        print("run 2:", await agent.run(user_msg="What did the north bed moisture reading say?",
                                        memory=memory))
        print("  recalled memory in the model's input:", any("18% moisture" in s for s in SEEN))

        SEEN.clear()
        bob = AnnealMemory.from_store(store, session_id="bob")
        await agent.run(user_msg="What did the north bed moisture reading say?", memory=bob)
        print("  bob's model saw alice's reading:", any("18% moisture" in s for s in SEEN))

        outcome = await memory.awrap()  # the LLM of the agent that used this memory
        print("wrap:", outcome.status, "-", outcome.message)
        continuity = memory.scope().store.load_continuity() or ""
        print("continuity starts with:", continuity.splitlines()[0] if continuity else "(none)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp) / "memory.db"))
