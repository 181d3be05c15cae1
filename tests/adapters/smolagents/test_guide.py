"""docs/integrations/smolagents.md: every Python block runs exactly as written (its stand-in
model is the guide's own), in order in one fresh folder, with the network refused and no keys."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "smolagents", blocks=2, last_lines={0: "saved", 1: "refused: this run names no user_id"})
