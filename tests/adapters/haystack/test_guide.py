"""docs/integrations/haystack.md: every Python block runs exactly as written (its stand-in
model is Haystack's own MockChatGenerator, shown in the guide), in order in one fresh folder,
with the network refused and no keys."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "haystack", blocks=3, last_lines={0: "Noted.", 1: "refused: this run names no org and login"})
