"""Every runnable code block of the guide runs as written (offline ones only: the first
block needs the real CLI and credentials, so it is compiled, not run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "integrations" / "claude_agent_sdk.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text("utf-8"), re.S)


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs(index: int, tmp_path: Path) -> None:
    code = BLOCKS[index]
    compile(code, f"block{index}", "exec")
    if "transport=" not in code and "query(" in code:
        return  # the real-CLI block: compiled above, never started in tests
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
