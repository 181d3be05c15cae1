"""docs/integrations/haystack.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from guide_blocks import guide_blocks, run_block

HERE = Path(__file__).resolve().parent
BLOCKS = guide_blocks("haystack")

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


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index: int, tmp_path: Path) -> None:
    out = run_block(BLOCKS[index], PRELUDE, tmp_path, HERE)
    if index == 1:
        assert out.splitlines()[-1] == "saved"
