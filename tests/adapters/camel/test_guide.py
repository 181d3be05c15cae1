"""docs/integrations/camel.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# ModelFactory.create would make an OpenAI backend (a key, the network): the scripted
# StubModel of the tests stands in for it.
PRELUDE = """
import camel.models
from camel_scripted import ScriptedModel

camel.models.ModelFactory.create = staticmethod(lambda **kwargs: ScriptedModel(answer="3 bar."))
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "camel", HERE, PRELUDE, blocks=2, last_lines={0: "3 bar."})
