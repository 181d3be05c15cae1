"""Every Python block of docs/integrations/openai_agents.md runs as written."""

from __future__ import annotations

from pathlib import Path

from contract import run_guide_blocks


def test_guide_blocks_run(tmp_path: Path) -> None:
    run_guide_blocks("openai_agents", tmp_path)
