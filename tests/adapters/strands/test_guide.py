"""docs/integrations/strands.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# BedrockModel is Strands' hosted model (AWS credentials, the network): the scripted
# Strands Model stands in for it; it answers the wrap prompt with a continuity.
PRELUDE = """
import os
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
import strands.models
from strands_scripted import ScriptedModel

strands.models.BedrockModel = lambda *args, **kwargs: ScriptedModel()
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "strands", HERE, PRELUDE, blocks=4,
    last_lines={0: "alice's memory wrapped", 1: "saved", 2: "2", 3: "4"})
