"""docs/integrations/haystack.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# OpenAIChatGenerator needs a key and the network: a MockChatGenerator that answers (and
# writes a continuity for a wrap prompt) stands in for it.
PRELUDE = """
import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
import haystack.components.generators.chat as chat
from haystack.components.generators.chat import MockChatGenerator
from haystack_scripted import answer

chat.OpenAIChatGenerator = lambda **kwargs: MockChatGenerator(response_fn=answer)
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "haystack", HERE, PRELUDE, blocks=3, last_lines={1: "saved"})
