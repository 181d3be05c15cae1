"""docs/integrations/agent_framework.md: every Python block runs exactly as written (its
stand-in chat client is shown in each block, anneal's scripted compressor does the wraps),
in order in one fresh folder, with the network refused and no keys: nothing is put before
a block but the network refusal."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "agent_framework", blocks=3,
    last_lines={0: "refused: this run names no user: pass options={'user': ...}", 1: "[]",
                2: "saved"})
