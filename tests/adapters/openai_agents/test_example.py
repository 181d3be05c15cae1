"""The offline example runs end to end and shows memory at work, for the right user only."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    out = run_example_and_check("openai_agents", tmp_path, "continuity saved: True",
                                "transcript items (not memory): 4",
                                line=("alice's model input:", "Zephyrion"))
    bob = [line for line in out.splitlines() if "bob's model input:" in line]
    assert bob and "Zephyrion" not in bob[0]
