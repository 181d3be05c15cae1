"""The offline example runs end to end and shows memory at work, for the right user only."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    out = run_example_and_check("crewai", tmp_path, "continuity saved: True",
                                "bob, kickoff 1: I do not know your heater.",
                                "alice, kickoff 2: The heater is a Zephyrion 4000.",
                                line=("the task prompt carries memories:", "Zephyrion"))
    bob = out.split("bob, kickoff 1")[0].split("continuity saved")[1]
    assert "Zephyrion" not in bob  # bob's task prompt: none of alice's memories
