"""The offline example runs and shows memory at work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llamaindex" / "example.py"


def test_example_runs_offline(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "memory.db")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "recalled memory in the model's input: True" in proc.stdout
    assert "wrap: saved" in proc.stdout
    assert "trust=tool" in proc.stdout
