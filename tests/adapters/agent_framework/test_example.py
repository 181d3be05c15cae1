"""The offline example runs end to end and shows memory at work, for the right user only;
with the adapter's recall turned off its marker is gone (alice's second run is a new
session: no history carries the fact)."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    out = run_example_and_check("agent_framework", tmp_path, "continuity saved: True",
                                "sessions in the database: ['alice-1', 'alice-2']",
                                line=("model input:", "Zephyrion"))
    bob = out.split("bob, run 1")[1].split("alice, run 2")[0]
    assert "model input:" in bob and "Zephyrion" not in bob
    nobody = out.split("a run with no user")[1]
    assert "refused: this run names no user" in nobody and "model input:" not in nobody
