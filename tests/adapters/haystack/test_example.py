"""The offline example runs end to end and reports what memory did."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "haystack" / "example.py"


def test_example_runs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "memory.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "episodes stored: 4, wraps: 2" in done.stdout
    assert "Zephyrion" in done.stdout
