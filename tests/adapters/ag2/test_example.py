"""The offline example runs end to end and shows memory at work."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("ag2", tmp_path, "recalled memory reached alice's model: True",
                          "bob's model saw alice's memory: False",
                          "alice: 4 episodes, 2 wraps (one per chat)",
                          "alice's continuity starts with: # Continuity")
