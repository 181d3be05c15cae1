"""docs/integrations/camel.md: every Python block runs exactly as written (its stand-in model
is CAMEL's own StubModel, shown in the guide), in order in one fresh folder, with the network
refused and no keys."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "camel", blocks=2, last_lines={0: "2"})
