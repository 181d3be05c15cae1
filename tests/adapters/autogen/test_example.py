"""The offline example runs end to end and shows memory at work."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    # a new agent each turn: only the adapter's recall can bring the heater back
    run_example_and_check("autogen", tmp_path, "recalled memory reached alice's model: True",
                          "bob's model saw alice's memory: False", "wrap: saved",
                          "alice's episodes: 4, wraps: 1")
