"""docs/integrations/smolagents.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from guide_blocks import guide_blocks, run_block

HERE = Path(__file__).resolve().parent
BLOCKS = guide_blocks("smolagents")

# InferenceClientModel is smolagents' hosted model: the scripted one stands in for it.
PRELUDE = """
import smolagents
from smol_scripted import ScriptedModel

smolagents.InferenceClientModel = lambda *args, **kwargs: ScriptedModel(answer="3 bar.")
"""


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index: int, tmp_path: Path) -> None:
    out = run_block(BLOCKS[index], PRELUDE, tmp_path, HERE)
    if index == 0:
        assert out.splitlines()[-1] == "saved"
