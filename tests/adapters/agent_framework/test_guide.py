"""docs/integrations/agent_framework.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# OpenAIChatClient is in the separate agent-framework-openai package (a key, the
# network): the scripted chat client stands in for it, as agent_framework.openai; it
# answers the wrap prompt with a continuity.
PRELUDE = """
import os
import sys
import types

os.environ["ENABLE_INSTRUMENTATION"] = "false"
from maf_scripted import ScriptedClient

_openai = types.ModuleType("agent_framework.openai")
_openai.OpenAIChatClient = lambda *args, **kwargs: ScriptedClient(answer="Noted.")
sys.modules["agent_framework.openai"] = _openai
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "agent_framework", HERE, PRELUDE, blocks=3,
    last_lines={0: "alice's memory wrapped", 1: "[]", 2: "saved"})
