"""The offline example runs and shows memory at work."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langchain" / "example.py"


def test_example_runs_offline(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "memory.db")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^recalled memory in the .*: True$", proc.stdout, re.M), proc.stdout
    assert "wrap: saved" in proc.stdout
