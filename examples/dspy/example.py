"""anneal-memory with DSPy, offline: DSPy's own DummyLM stands in for the LLM.

Run: ``python examples/dspy/example.py [path/to/memory.db]``

Calls of a real ``dspy.ReAct`` program (its signature knows nothing of memory) wrapped in
``MemoryProgram``, for alice (``dspy.context(memory_namespace=...)``): the first calls a
tool and answers, the second gets what the first left in memory as a labelled ``memory``
input field of its LM calls; bob's call does not. A ``dspy.Evaluate`` run over a dev set
records nothing. Then the wrap writes alice's continuity through the configured LM.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import dspy
from dspy.utils import DummyLM

from anneal_memory import Store
from anneal_memory.adapters.dspy import MemoryProgram
from anneal_memory.testing import is_wrap_prompt, scripted_compress


def soil_moisture(bed: str) -> str:
    """Read the soil moisture sensor of a garden bed."""
    return f"bed {bed}: 18% moisture, below the 25% target"


class ScriptedLM(DummyLM):
    """DummyLM that also answers a wrap prompt with a valid continuity."""

    last_prompt = ""

    def __call__(self, prompt: Any = None, messages: Any = None, **kwargs: Any) -> Any:
        last = str(messages[-1].get("content", "")) if messages else str(prompt)
        if is_wrap_prompt(last):
            return [scripted_compress(last)]
        self.last_prompt = "\n".join(str(m.get("content", "")) for m in messages or [])
        return super().__call__(prompt, messages=messages, **kwargs)


def main(db_path: str) -> None:
    lm = ScriptedLM([
        {"next_thought": "Read the sensor.", "next_tool_name": "soil_moisture",
         "next_tool_args": {"bed": "north"}},
        {"next_thought": "Enough.", "next_tool_name": "finish", "next_tool_args": {}},
        {"reasoning": "The sensor says 18%.", "answer": "The north bed is dry: water it."},
        {"next_thought": "Memory has it.", "next_tool_name": "finish", "next_tool_args": {}},
        {"reasoning": "Recalled reading.", "answer": "Yes, it read 18% earlier."},
        {"next_thought": "Nothing known.", "next_tool_name": "finish", "next_tool_args": {}},
        {"reasoning": "No memory.", "answer": "I do not know."},
    ] + [{"next_thought": "Done.", "next_tool_name": "finish", "next_tool_args": {}},
         {"reasoning": "Dev.", "answer": "ok"}] * 2)
    dspy.configure(lm=lm)
    with Store(db_path, project_name="Garden") as store:
        agent = dspy.ReAct("question -> answer", tools=[soil_moisture], max_iters=4)
        program = MemoryProgram(agent, store)
        with dspy.context(memory_namespace={"user": "alice"}):
            print("run 1 answer:", program(question="Check the north bed").answer)
            print("run 2 answer:", program(question="Was the north bed dry?").answer)
        print("recalled memory in the LM's prompt:", "18% moisture" in lm.last_prompt)
        with dspy.context(memory_namespace={"user": "bob"}):
            program(question="Was the north bed dry?")
        print("bob's prompt held alice's reading:", "18% moisture" in lm.last_prompt)

        devset = [dspy.Example(question=f"Dev check {i}", answer="ok").with_inputs("question")
                  for i in range(2)]
        dspy.Evaluate(devset=devset, metric=lambda ex, pred, trace=None: 1.0, num_threads=1,
                      display_progress=False)(program)
        print("episodes the evaluation recorded:",
              sum("Dev check" in e.content for e in store.recall(limit=100).episodes))

        alice = store.scoped({"user": "alice"})
        print("alice's episodes:")
        for ep in reversed(alice.recall(limit=20).episodes):
            print(f"  [{ep.type.value}] trust={ep.trust} {ep.content[:70]}")
        with dspy.context(memory_namespace={"user": "alice"}):
            print("wrap:", program.wrap().status)


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "memory.db")
    main(target)
