"""docs/integrations/autogen.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

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


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "autogen", HERE, PRELUDE, blocks=2, last_lines={0: "saved"})
