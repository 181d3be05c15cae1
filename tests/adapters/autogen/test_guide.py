"""docs/integrations/autogen.md: every Python block runs as written, offline.

The blocks run one after another in one fresh folder, with the network refused and no keys
(``offline_guide_tests``): the guide's own stand-in model (autogen-ext's
``ReplayChatCompletionClient``) is what they run on; nothing is swapped in.
"""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "autogen", blocks=2, last_lines={0: "saved", 1: "False"})
