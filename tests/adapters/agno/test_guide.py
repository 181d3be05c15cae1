"""docs/integrations/agno.md: every Python block runs exactly as written, each in a fresh
folder, offline: no prelude, no stand-in put in its place (the guide shows its own), the
network refused (a ``sitecustomize`` that refuses sockets and notes the attempt) and
Agno's telemetry switch left to the block."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract import guide_blocks

BLOCKS = guide_blocks("agno")

#: the end of each block's last printed line
LAST_LINES = ["saved", "True", "RunStatus.error", "RunStatus.error", "[]"]

REFUSE_NETWORK = '''
import os
import socket


def _refuse(*args, **kwargs):
    with open(os.path.join(os.environ["GUIDE_NETWORK_LOG"]), "a") as log:
        log.write(repr(args[:2]) + "\\n")
    raise OSError("the guide test refuses the network")


socket.getaddrinfo = _refuse
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
'''


def test_the_guide_has_its_blocks() -> None:
    assert len(BLOCKS) == len(LAST_LINES)
    assert not any("agno.models.openai" in block for block in BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs_as_written(index: int, tmp_path: Path) -> None:
    guard, folder = tmp_path / "guard", tmp_path / "fresh"
    guard.mkdir()
    folder.mkdir()
    (guard / "sitecustomize.py").write_text(REFUSE_NETWORK, "utf-8")
    log = tmp_path / "network.log"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AGNO_") and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(guard), GUIDE_NETWORK_LOG=str(log))
    done = subprocess.run([sys.executable, "-c", BLOCKS[index]], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert not log.exists(), f"block {index} reached for the network: {log.read_text()}"
    assert done.stdout.splitlines()[-1].endswith(LAST_LINES[index]), done.stdout
