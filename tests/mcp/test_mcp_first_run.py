"""The MCP command as the README gives it, on a fresh machine: `serve` without --db makes
the default folder (private to the user) and the store, and exits cleanly at end of input."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path


def test_serve_creates_the_default_folder(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": str(Path(sys.executable).parent)}
    p = subprocess.run([sys.executable, "-m", "anneal_memory", "--project-name", "MyProject",
                        "serve", "--session-id", "claude-code"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    folder = tmp_path / ".anneal-memory"
    assert (folder / "memory.db").is_file()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
