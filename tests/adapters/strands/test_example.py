"""The offline example runs end to end and shows memory at work, for the right user only;
with the adapter's recall turned off it must not."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    out = run_example_and_check("strands", tmp_path, "continuity saved: True",
                                line=("model input:", "Zephyrion"))
    bob = out.split("bob, run 1")[1].split("alice, run 2")[0]
    assert "model input:" in bob and "Zephyrion" not in bob
    anonymous = out.split("a call without a user")[1]
    assert "refused before the model ran" in anonymous and "model input:" not in anonymous
