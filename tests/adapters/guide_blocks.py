"""Running a framework guide's Python blocks as written (docs/integrations/<fw>.md).

A guide shows the framework's real model (it needs a key and the network); the test runs
each block verbatim in its own folder after a ``prelude`` that puts the test's scripted
model in place of that class. Everything else in the block is the framework's and ours.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract import guide_blocks

__all__ = ["guide_blocks", "guide_tests", "run_block"]


def run_block(code: str, prelude: str, workdir: Path, helpers: Path) -> str:
    """Run ``prelude`` + ``code`` in ``workdir`` with ``helpers`` importable; its stdout."""
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "guide_block.py"
    script.write_text(prelude + "\n# --- the guide's block, as written\n" + code, "utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(helpers), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(script)], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.stdout


def guide_tests(framework: str, helpers: Path, prelude: str | Callable[[int], str], *,
                blocks: int, last_lines: dict[int, str] | None = None) -> tuple[Any, Any]:
    """The two tests of a guide, for a test module to bind at top level
    (``test_the_guide_has_its_blocks, test_block_runs = guide_tests(...)``): the guide
    has ``blocks`` Python blocks, and each runs after ``prelude`` (or ``prelude(index)``),
    its last output line ending with ``last_lines[index]`` where given."""
    found = guide_blocks(framework)
    expected = last_lines or {}

    def test_the_guide_has_its_blocks() -> None:
        assert len(found) == blocks

    @pytest.mark.parametrize("index", range(len(found)))
    def test_block_runs(index: int, tmp_path: Path) -> None:
        code = prelude(index) if callable(prelude) else prelude
        out = run_block(found[index], code, tmp_path, helpers)
        if index in expected:
            assert out.splitlines()[-1].endswith(expected[index]), out

    return test_the_guide_has_its_blocks, test_block_runs
