"""The offline example runs end to end and shows memory at work."""

from __future__ import annotations

from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("camel", tmp_path, "episodes stored: 4, wraps: 2", "Zephyrion")
