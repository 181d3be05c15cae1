"""The offline example runs end to end and shows memory at work."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("claude_agent_sdk", tmp_path, "continuity saved: True",
                          "transcript entries of run 1 in the same database: 4",
                          line=("model input besides the prompt:", "Zephyrion"))
