"""The offline example runs end to end and shows memory at work."""

from __future__ import annotations

import re
from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("dspy", tmp_path, "wrap: saved", "trust=tool",
                          "bob's prompt held alice's reading: False",
                          "episodes the evaluation recorded: 0",
                          re.compile(r"^recalled memory in the .*: True$", re.M))
