"""Fixtures for the differential suite: the published 1.0.2 in a venv of its own.

1.0.2 shares our import name, so it never goes into the test environment: it lives in
``.nox/compat-peer`` (or wherever ``ANNEAL_COMPAT_PEER_PYTHON`` points), built on first use
with uv, together with the ``mcp`` client library the MCP scenarios drive it with (1.0.2's
own server has no dependencies; the client is only the test's). Our side is this
interpreter, which must import the package from this checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DRIVER = HERE / "driver.py"
PEER_VERSION = "1.0.2"


def peer_python() -> str:
    """The interpreter of the venv that holds the published 1.0.2 (built when missing),
    with the ``mcp`` client library the MCP scenarios drive its server with."""
    sys.path.insert(0, str(REPO / "bench"))  # bench/peer.py builds it for the benchmark too
    from peer import installed_version
    from peer import peer_python as build_peer

    given = os.environ.get("ANNEAL_COMPAT_PEER_PYTHON")
    if given:
        if installed_version(given) != PEER_VERSION:
            raise RuntimeError(f"ANNEAL_COMPAT_PEER_PYTHON={given} does not import "
                               f"anneal-memory {PEER_VERSION}")
        return given
    return build_peer(REPO / ".nox" / "compat-peer", PEER_VERSION, ["mcp>=1.10"])


def ours_python() -> str:
    """This interpreter; refuses to run if it imports anything but this checkout."""
    p = subprocess.run([sys.executable, "-I", "-c",
                        "import anneal_memory as a; print(a.__file__)"],
                       capture_output=True, text=True, cwd=tempfile.gettempdir())
    where = Path(p.stdout.strip()).resolve()
    if REPO not in where.parents:
        raise RuntimeError(f"this interpreter imports anneal_memory from {where}, not from "
                           f"{REPO}: pip install -e '{REPO}[mcp]'")
    return sys.executable


def run_driver(python: str, scenario: str, work: Path, timeout: int = 300) -> dict[str, Any]:
    """One scenario in one interpreter; its JSON observations."""
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANNEAL_", "PYTHON"))}
    env["HOME"] = str(work)
    p = subprocess.run([python, "-I", str(DRIVER), scenario, str(work)], capture_output=True,
                       text=True, timeout=timeout, cwd=str(work), env=env)
    if p.returncode != 0:
        raise AssertionError(f"scenario {scenario} crashed under {python}:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout)


def scenario_names() -> list[str]:
    p = subprocess.run([sys.executable, "-I", str(DRIVER), "--list"], capture_output=True,
                       text=True, check=True, cwd=tempfile.gettempdir())
    return [n for n in p.stdout.split() if n]


@pytest.fixture(scope="session")
def pythons() -> dict[str, str]:
    return {"peer": peer_python(), "ours": ours_python()}


@pytest.fixture(scope="session")
def observations(pythons: dict[str, str], tmp_path_factory: pytest.TempPathFactory
                 ) -> dict[str, dict[str, dict[str, Any]]]:
    """Every differential scenario run once on each side (two at a time)."""
    base = tmp_path_factory.mktemp("compat")
    names = [n for n in scenario_names() if not n.startswith(("write_", "read_"))]
    jobs = [(side, n) for n in names for side in ("peer", "ours")]
    out: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in names}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {pool.submit(run_driver, pythons[side], n, base / n / side): (side, n)
                   for side, n in jobs}
        for fut, (side, n) in futures.items():
            out[n][side] = fut.result()
    return out


@pytest.fixture(scope="session")
def legacy_dir(pythons: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store, its sidecars and a JSON export written by the real 1.0.2 (never modified:
    tests copy it)."""
    work = tmp_path_factory.mktemp("legacy") / "written"
    run_driver(pythons["peer"], "write_legacy", work)
    return work


@pytest.fixture
def legacy_copy(legacy_dir: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "store"
    shutil.copytree(legacy_dir, dest)
    return dest
