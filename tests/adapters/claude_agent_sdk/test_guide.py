"""docs/integrations/claude_agent_sdk.md: every Python block runs exactly as written (its
stand-in for the Claude Code CLI is this package's ScriptedCLI, shown in the guide), in order
in one fresh folder, with the network refused and no keys: no block starts the real CLI."""

from __future__ import annotations

from guide_blocks import offline_guide_tests

test_the_guide_has_its_blocks, test_block_runs = offline_guide_tests(
    "claude_agent_sdk", blocks=2, last_lines={0: "A Zephyrion 4000."})
