"""docs/integrations/agno.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# OpenAIChat is Agno's hosted model (and needs the openai package): the scripted Agno
# model stands in for it, as agno.models.openai.
PRELUDE = """
import os
import sys
import types

os.environ["AGNO_TELEMETRY"] = "false"
from agno_scripted import ScriptedModel

_openai = types.ModuleType("agno.models.openai")
_openai.OpenAIChat = lambda *args, **kwargs: ScriptedModel(answer="3 bar.")
sys.modules["agno.models.openai"] = _openai
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "agno", HERE, PRELUDE, blocks=4,
    last_lines={0: "saved", 1: "True", 2: "RunStatus.completed", 3: "[]"})
