"""The published anneal-memory in a venv of its own (it shares our import name).

Used by the benchmark (``bench/run.py``) and the differential suite (``tests/compat``):
the venv is built with uv on first use and reused while it imports the wanted version.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path


def installed_version(python: str | Path) -> str:
    """The ``anneal_memory.__version__`` that interpreter imports ('' when none)."""
    p = subprocess.run([str(python), "-I", "-c", "import anneal_memory as a; "
                        "print(getattr(a, '__version__', ''))"],
                       capture_output=True, text=True, cwd=tempfile.gettempdir())
    return p.stdout.strip() if p.returncode == 0 else ""


def peer_python(venv: str | Path, version: str, extra: Sequence[str] = ()) -> str:
    """The interpreter of ``venv`` holding ``anneal-memory==version`` (and ``extra``
    packages), built with uv when missing or stale."""
    venv = Path(venv)
    py = venv / "bin" / "python"
    if py.exists() and installed_version(py) == version:
        return str(py)
    uv = shutil.which("uv")
    if not uv:
        raise RuntimeError("uv is needed to build the peer venv: pip install uv")
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([uv, "pip", "install", "-q", "--python", str(py),
                    f"anneal-memory=={version}", *extra], check=True)
    return str(py)
