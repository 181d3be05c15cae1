"""Every adapter ships with its guide, its offline example, its tests, its extra and its
nox sessions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = sorted(p.name for p in (ROOT / "adapters").iterdir()
                  if p.is_dir() and (p / "__init__.py").exists())


def test_every_framework_has_its_adapter() -> None:
    # the fourteen the specification names and the three issue 36 adds
    assert set(ADAPTERS) == {
        "ag2", "autogen", "camel", "claude_agent_sdk", "crewai", "dspy", "google_adk",
        "haystack", "langchain", "langgraph", "llamaindex", "openai_agents", "pydantic_ai",
        "smolagents", "strands", "agno", "agent_framework"}, ADAPTERS


@pytest.mark.parametrize("name", ADAPTERS)
def test_adapter_has_guide_example_tests_and_sessions(name: str) -> None:
    guide = ROOT / "docs" / "integrations" / f"{name}.md"
    assert guide.exists() and "pip install" in guide.read_text("utf-8")
    assert (ROOT / "examples" / name / "example.py").exists()
    tests = ROOT / "tests" / "adapters" / name
    assert (tests / "test_contract.py").exists()
    # the shared contract, directly or through its async-loop mixin (tests/adapters)
    text = (tests / "test_contract.py").read_text("utf-8")
    assert "AdapterContract" in text or "AsyncLoopContract" in text
    async_mixin = (ROOT / "tests" / "adapters" / "async_contract.py").read_text("utf-8")
    assert "class AsyncLoopContract(AdapterContract)" in async_mixin
    noxfile = (ROOT / "noxfile.py").read_text("utf-8")
    assert re.search(rf'^\s+"{name}": \(', noxfile, re.M), f"{name} missing from ADAPTERS in noxfile"
    init = (adapter := ROOT / "adapters" / name / "__init__.py").read_text("utf-8")
    # the import guard: the base's require_extra (raises MissingExtraError) or its own
    assert "require_extra(" in init or "MissingExtraError" in init or any(
        "MissingExtraError" in p.read_text("utf-8") for p in adapter.parent.glob("*.py"))


def test_readme_lists_every_guide() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    for name in ADAPTERS:
        assert f"docs/integrations/{name}.md" in readme or f"{name}.md" in readme, name


#: stdlib modules a plain import must not load: each is paid for by its first use
DEFERRED = ("hashlib", "logging", "secrets", "shutil", "gzip", "glob", "tempfile", "random")


def test_importing_the_main_names_defers_heavy_stdlib_modules() -> None:
    import subprocess
    import sys

    code = ("import sys; from anneal_memory import Store, retrieve_relevant, prepare_wrap, "
            f"validated_save_continuity; print(' '.join(m for m in {DEFERRED!r} "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [], f"importing anneal_memory loaded {out}: import them where first used"
    # and they still load when used: a record hashes its id and writes its audit entry
    code = ("import sys, tempfile, os; from anneal_memory import Store; "
            "s = Store(os.path.join(tempfile.mkdtemp(), 'm.db')); "
            "e = s.record('lazy modules load on first use', 'observation'); s.close(); "
            "print(len(e.id), 'hashlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["8", "True"], out
