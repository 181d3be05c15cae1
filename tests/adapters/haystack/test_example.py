"""The offline example runs end to end and shows memory at work."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("haystack", tmp_path, "alice's memory reached the model: True",
                          "bob's model saw alice's memory: False",
                          "memory messages in the last model call: 1",
                          "memory messages in the returned history: 0",
                          "a run without a user: refused (this run names no user_id); "
                          "model calls: 0")
