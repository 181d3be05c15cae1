"""Every Python block of docs/integrations/google_adk.md runs as written."""

from __future__ import annotations

from pathlib import Path

from contract import run_guide_blocks


def test_guide_blocks_run(tmp_path: Path) -> None:
    run_guide_blocks("google_adk", tmp_path)
