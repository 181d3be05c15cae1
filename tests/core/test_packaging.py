"""The distribution maps core/ and adapters/ into one package, for both a regular and an
editable install."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = (
    "import anneal_memory, anneal_memory.adapters, importlib.util, sys;"
    "names=['langgraph','langchain','openai_agents','crewai','google_adk','pydantic_ai','smolagents',"
    "'llamaindex','haystack','autogen','ag2','dspy','camel'];"
    "missing=[n for n in names if importlib.util.find_spec('anneal_memory.adapters.'+n) is None];"
    "assert not missing, missing;"
    "import anneal_memory.cli, anneal_memory.wrap.save, anneal_memory.immune.graduation;"
    "print(anneal_memory.__file__)"
)


def _venv(tmp: Path) -> Path:
    uv = shutil.which("uv")
    if uv:
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(tmp / "v")], check=True)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(tmp / "v")], check=True)
    return tmp / "v" / "bin" / "python"


def _install(py: Path, *args: str) -> None:
    uv = shutil.which("uv")
    cmd = ([uv, "pip", "install", "-q", "--python", str(py), *args] if uv
           else [str(py), "-m", "pip", "install", "-q", *args])
    subprocess.run(cmd, check=True, cwd=ROOT)


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True])
def test_install_maps_core_and_adapters(tmp_path: Path, editable: bool) -> None:
    py = _venv(tmp_path)
    _install(py, *(["-e", str(ROOT)] if editable else [str(ROOT)]))
    out = subprocess.run([str(py), "-c", CHECK], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    location = Path(out.stdout.strip())
    if editable:
        assert location.resolve() == (ROOT / "core" / "anneal_memory" / "__init__.py").resolve()
    else:
        assert "site-packages" in str(location)
    cli = subprocess.run([str(py.parent / "anneal-memory"), "--version"], capture_output=True, text=True)
    assert cli.returncode == 0 and cli.stdout.startswith("anneal-memory ")
    deps = subprocess.run([str(py), "-c", "import importlib.metadata as m;"
                           "print(m.requires('anneal-memory'))"], capture_output=True, text=True)
    assert "extra ==" in deps.stdout and all("extra ==" in r for r in eval(deps.stdout))
