"""The offline example runs and shows memory at work."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("llamaindex", tmp_path, "recalled memory in the model's input: True",
                          "bob's model saw alice's reading: False",
                          "continuity starts with: # Continuity",
                          "wrap: saved", "trust=tool")
