"""The offline example runs and shows memory at work."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("smolagents", tmp_path,
                          "recalled memory in the model's system prompt: True",
                          "wrap: saved", "trust=tool",
                          "bob's system prompt holds alice's reading: False",
                          "continuity starts with: # Continuity")
