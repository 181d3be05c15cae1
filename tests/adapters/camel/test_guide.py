"""docs/integrations/camel.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from guide_blocks import guide_blocks, run_block

HERE = Path(__file__).resolve().parent
BLOCKS = guide_blocks("camel")

# ModelFactory.create would make an OpenAI backend (a key, the network): the scripted
# StubModel of the tests stands in for it.
PRELUDE = """
import camel.models
from camel_scripted import ScriptedModel

camel.models.ModelFactory.create = staticmethod(lambda **kwargs: ScriptedModel(answer="3 bar."))
"""


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index: int, tmp_path: Path) -> None:
    out = run_block(BLOCKS[index], PRELUDE, tmp_path, HERE)
    if index == 0:
        assert out.splitlines()[-1] == "3 bar."
