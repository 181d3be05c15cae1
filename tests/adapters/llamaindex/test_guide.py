"""docs/integrations/llamaindex.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from guide_blocks import guide_blocks, run_block

HERE = Path(__file__).resolve().parent
BLOCKS = guide_blocks("llamaindex")

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


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index: int, tmp_path: Path) -> None:
    out = run_block(BLOCKS[index], PRELUDE, tmp_path, HERE)
    if index == 0:
        assert out.splitlines()[-1] == "saved"
