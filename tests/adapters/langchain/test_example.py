"""The offline example runs end to end and shows memory at work, for the right user only."""

from __future__ import annotations

import re
from pathlib import Path

from contract import run_example_and_check


def test_example_runs_offline(tmp_path: Path) -> None:
    run_example_and_check("langchain", tmp_path, "continuity saved: True",
                          "bob's prompt holds alice's memory: False",
                          "a run without a user: refused",
                          re.compile(r"^recalled memory in the .*: True$", re.M))
