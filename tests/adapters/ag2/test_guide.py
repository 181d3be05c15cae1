"""docs/integrations/ag2.md: every Python block runs exactly as written (its stand-in model is
AG2's own autogen.testing.TestAgent, shown in the guide), in order in one fresh folder, with
the network refused and no keys."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "ag2", blocks=2, last_lines={0: "2", 1: "refused: 'guest' is not a user"})
