"""The offline example runs end to end and shows memory at work, for the right user only;
with the adapter's recall turned off its marker is gone."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    out = run_example_and_check("agno", tmp_path, "continuity saved: True",
                                line=("model input:", "Zephyrion"))
    bob = out.split("bob, run 1")[1].split("alice, run 2")[0]
    assert "model input:" in bob and "Zephyrion" not in bob
    refused = out.split("a run with no user_id")[1].split("the app's own memory")[0]
    assert "status: error" in refused.lower() and "model input:" not in refused
    assert "watering: Waters at 7am" in out
