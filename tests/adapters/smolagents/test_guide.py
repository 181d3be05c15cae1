"""docs/integrations/smolagents.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# InferenceClientModel is smolagents' hosted model: the scripted one stands in for it.
PRELUDE = """
import smolagents
from smol_scripted import ScriptedModel

smolagents.InferenceClientModel = lambda *args, **kwargs: ScriptedModel(answer="3 bar.")
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "smolagents", HERE, PRELUDE, blocks=2, last_lines={0: "saved"})
