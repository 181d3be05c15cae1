"""docs/integrations/dspy.md: every Python block runs exactly as written (its stand-in LM is
DSPy's own DummyLM, shown in the guide), in order in one fresh folder, with the network
refused and no keys. LITELLM_LOCAL_MODEL_COST_MAP=True, the step the guide's Install section
states for DSPy 3.0, comes from conftest.py; at the latest release the blocks pass without it."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "dspy", blocks=3,
    last_lines={0: "saved", 1: "refused: this call names no user_id",
                2: ") Remember that my seed tin is blue."})
