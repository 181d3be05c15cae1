"""docs/integrations/dspy.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# dspy.LM needs a key and the network: DSPy's DummyLM (answering wrap prompts too) stands in.
# (a class, not a function: DSPy itself checks isinstance(..., dspy.LM))
PRELUDE = """
import dspy
from dspy_scripted import ScriptedLM


class OfflineLM(ScriptedLM):
    def __init__(self, *args, **kwargs):
        super().__init__({answers})


dspy.LM = OfflineLM
"""
ANSWERS = [
    # ChainOfThought, twice
    [{"reasoning": "Noted.", "answer": "Noted: 3 bar."},
     {"reasoning": "From memory.", "answer": "3 bar."}],
    # ReAct with the memory tools
    [{"next_thought": "Store it.", "next_tool_name": "store_memory",
      "next_tool_args": {"content": "The user's seed tin is blue"}},
     {"next_thought": "Done.", "next_tool_name": "finish", "next_tool_args": {}},
     {"reasoning": "Stored.", "answer": "I will remember your seed tin is blue."}],
]


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "dspy", HERE, lambda index: PRELUDE.format(answers=ANSWERS[index]), blocks=len(ANSWERS),
    last_lines={0: "saved"})
