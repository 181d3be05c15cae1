"""docs/integrations/ag2.md: every Python block runs as written, offline."""

from __future__ import annotations

from pathlib import Path

from guide_blocks import guide_tests

HERE = Path(__file__).resolve().parent

# An agent given an llm_config gets autogen.testing's fake client (wrapped to answer the
# wrap prompt) instead of OpenAI's: no key, no network, no openai package.
PRELUDE = """
import autogen
from autogen.testing import TestAgent
from ag2_scripted import LLM_CONFIG, RecordingClient


class OfflineAgent(autogen.ConversableAgent):
    def __init__(self, name, llm_config=None, **kwargs):
        offline = llm_config not in (None, False)
        super().__init__(name, llm_config=LLM_CONFIG if offline else llm_config, **kwargs)
        if offline:
            self._offline = TestAgent(self, ["Noted. TERMINATE"] * 10)
            self._offline.__enter__()
            self.client = RecordingClient(self.client)


autogen.ConversableAgent = OfflineAgent
autogen.LLMConfig = lambda **kwargs: dict(kwargs)
"""


test_the_guide_has_its_blocks, test_block_runs = guide_tests(
    "ag2", HERE, PRELUDE, blocks=2, last_lines={0: "2"})
