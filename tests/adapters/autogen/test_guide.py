"""docs/integrations/autogen.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from guide_blocks import guide_blocks, run_block

HERE = Path(__file__).resolve().parent
BLOCKS = guide_blocks("autogen")

# The guide's OpenAI client (autogen-ext[openai], a key, the network) is replaced by the
# replay client of the tests, which also answers the wrap prompt.
PRELUDE = """
import os
import sys
import types

os.environ.setdefault("AUTOGEN_DISABLE_RUNTIME_TRACING", "true")
from autogen_scripted import ScriptedClient

openai_models = types.ModuleType("autogen_ext.models.openai")
openai_models.OpenAIChatCompletionClient = lambda **kwargs: ScriptedClient(["Noted."] * 8)
sys.modules["autogen_ext.models.openai"] = openai_models
"""


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index: int, tmp_path: Path) -> None:
    out = run_block(BLOCKS[index], PRELUDE, tmp_path, HERE)
    if index == 0:
        assert out.splitlines()[-1] == "saved"
