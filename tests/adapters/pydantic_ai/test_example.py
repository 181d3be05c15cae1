"""The offline example runs end to end and shows memory at work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "pydantic_ai" / "example.py"


def test_example_runs_offline(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "memory.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "continuity saved: True" in done.stdout
    # the recalled fact reached the model's input on the second run
    shown = [line for line in done.stdout.splitlines() if "model instructions:" in line]
    assert shown and "Zephyrion" in shown[-1], done.stdout
