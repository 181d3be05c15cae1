"""docs/integrations/llamaindex.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# llama-index-llms-openai (a key, the network) is not installed: the scripted
# MockFunctionCallingLLM of the tests stands in for its OpenAI class.
PRELUDE = """
import sys
import types

from llama_index.core.llms.mock import MockFunctionCallingLLM
from li_scripted import Script

openai_llms = types.ModuleType("llama_index.llms.openai")
openai_llms.OpenAI = lambda **kwargs: MockFunctionCallingLLM(response_generator=Script("3 bar."))
sys.modules["llama_index.llms.openai"] = openai_llms
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "llamaindex", HERE, PRELUDE, blocks=3, last_lines={0: "saved", 2: "hybrid True"})
