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

__all__ = ["NO_NETWORK", "guide_blocks", "guide_tests", "offline_guide_tests", "run_block"]


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


#: The one prelude of an as-written guide test: it refuses every connection off this
#: machine (an audit hook, which the block cannot remove; loopback and Unix sockets stay
#: open for event loops) and clears provider keys and credentials. It changes nothing else
#: the block does; each refused attempt is also printed to stderr, and the test fails on it.
NO_NETWORK = """
import os as _os
import sys as _sys

for _key in [k for k in _os.environ if k.endswith(("_API_KEY", "_TOKEN", "_SECRET_ACCESS_KEY"))
             or k.startswith(("AWS_", "ANTHROPIC_", "CLAUDE_CODE_OAUTH"))]:
    del _os.environ[_key]


def _refuse_network(event, args):
    if event == "socket.getaddrinfo":
        host = args[0].decode() if isinstance(args[0], bytes) else args[0]
        if host in (None, "localhost", "127.0.0.1", "::1"):
            return
    elif event == "socket.connect":
        address = args[1]
        if not isinstance(address, tuple) or str(address[0]) in ("localhost", "127.0.0.1", "::1"):
            return
        host = address[0]
    else:
        return
    print(f"guide block: network refused ({event} {host!r})", file=_sys.stderr)
    raise ConnectionRefusedError(f"no network in guide tests ({event} {host!r})")


_sys.addaudithook(_refuse_network)
del _refuse_network
"""


def offline_guide_tests(framework: str, *, blocks: int,
                        last_lines: dict[int, str] | None = None) -> tuple[Any, Any]:
    """Like :func:`guide_tests`, but every block runs exactly as written: one fresh folder
    for the guide, the blocks in order (a block may use what an earlier one left, as for a
    reader going through the guide), nothing importable but the installed packages, and
    only :data:`NO_NETWORK` before each block. A block that tried the network fails."""
    found = guide_blocks(framework)
    expected = last_lines or {}
    folders: dict[str, Path] = {}

    def test_the_guide_has_its_blocks() -> None:
        assert len(found) == blocks

    @pytest.mark.parametrize("index", range(len(found)))
    def test_block_runs(index: int, tmp_path_factory: pytest.TempPathFactory) -> None:
        if "guide" not in folders:
            folders["guide"] = tmp_path_factory.mktemp(f"{framework}-guide")
        folder = folders["guide"]
        script = folder / f"guide_block_{index + 1}.py"
        script.write_text(NO_NETWORK + "\n# --- the guide's block, as written\n" + found[index],
                          "utf-8")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run([sys.executable, str(script)], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=300)
        report = f"block {index + 1}:\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
        assert done.returncode == 0, report
        assert "Traceback" not in done.stderr, report
        assert "network refused" not in done.stderr, report
        if index in expected:
            assert done.stdout.splitlines()[-1].endswith(expected[index]), report

    return test_the_guide_has_its_blocks, test_block_runs
