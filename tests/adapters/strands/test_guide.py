"""docs/integrations/strands.md: every Python block runs exactly as written (its stand-in
model is the guide's own), in order in one fresh folder, with the network refused and no keys."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "strands", blocks=4,
    last_lines={0: "refused: this call names no user_id", 1: "saved",
                2: "['Our compost bin is behind the shed.']", 3: "4"})
