"""Every Python block of docs/integrations/langgraph.md runs as written, each in an empty
folder of its own, as a new user would run it after ``pip install '.[langgraph]'``: no
key, the network refused, and numpy hidden (the extra does not install it; this session
does, for other tests). Nothing is put in front of a block: the stand-in model and
embedder a block needs are in the block.

The refusals come from a ``sitecustomize`` module on the block's ``PYTHONPATH``: a socket
that connects anywhere but a local Unix socket raises, and importing numpy raises
``ModuleNotFoundError`` as in an environment without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract import guide_blocks

BLOCKS = guide_blocks("langgraph")

REFUSALS = '''
import importlib.abc
import socket
import sys


class _NoNumpy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoNumpy())
_connect = socket.socket.connect


def _refuse(self, address):
    if self.family == getattr(socket, "AF_UNIX", None):
        return _connect(self, address)
    raise OSError(f"network refused in the guide test: {address!r}")


def _no_lookup(*args, **kwargs):
    raise OSError("network refused in the guide test (name lookup)")


socket.socket.connect = _refuse
socket.getaddrinfo = _no_lookup
'''

# the last line each block prints, where it prints one
LAST_LINES = {0: "saved", 1: "[('n2', 1.0), ('n1', 0.459)]", 2: "1"}


def run(code: str, folder: Path, guard: Path) -> subprocess.CompletedProcess[str]:
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(guard)
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def guard(tmp_path: Path) -> Path:
    folder = tmp_path / "guard"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(REFUSALS, "utf-8")
    return folder


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs_as_written_offline(index: int, tmp_path: Path, guard: Path) -> None:
    done = run(BLOCKS[index], tmp_path / "empty", guard)
    assert done.returncode == 0, f"block {index + 1}:\n{BLOCKS[index]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if index in LAST_LINES:
        assert done.stdout.splitlines()[-1] == LAST_LINES[index], done.stdout


@pytest.mark.parametrize("probe", [
    "import numpy",
    "import socket; socket.create_connection(('example.com', 80), timeout=5)",
    "import socket; socket.socket().connect(('127.0.0.1', 9))",
])
def test_the_refusals_hold(probe: str, tmp_path: Path, guard: Path) -> None:
    done = run(probe, tmp_path / "probe", guard)
    assert done.returncode != 0
    assert "ModuleNotFoundError" in done.stderr or "network refused" in done.stderr
