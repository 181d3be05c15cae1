"""Every code block in README.md and docs/ runs as written (see docblocks.py for how each
kind of block is run), each file's blocks in order, in a fresh folder with its own HOME."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docblocks import (
    KNOWN,
    ROOT,
    Block,
    all_blocks,
    check_config,
    check_guide_python,
    groups,
    is_guide,
    nox_sessions,
    run,
    shim_main,
    suite_for,
)

BLOCKS = all_blocks()


GROUPS = groups()
CORE = sorted(k for k, g in GROUPS.items() if suite_for(g) == "core")


def test_the_collector_sees_every_document() -> None:
    # guards the tests below against a fence pattern that silently finds nothing
    docs = {b.doc for b in BLOCKS}
    assert {"README.md", "docs/cli.md", "docs/mcp.md", "docs/governance.md",
            "docs/postgres.md", "docs/integrations/langgraph.md"} <= docs
    assert ("README.md", "python") in CORE and ("docs/cli.md", "shell") in CORE
    assert len(BLOCKS) >= 40


def test_every_block_names_a_language_the_test_runs() -> None:
    unknown = [f"{b.where} ({b.lang or 'no language'})" for b in BLOCKS if b.lang not in KNOWN]
    assert not unknown, f"label these blocks python, sh, bash, json, toml or text (output): {unknown}"


@pytest.mark.parametrize(("doc", "kind"), CORE, ids=[f"{d}-{k}" for d, k in CORE])
def test_blocks_run_as_written(doc: str, kind: str, tmp_path: Path) -> None:
    res = run(GROUPS[(doc, kind)], kind, tmp_path)
    assert res.returncode == 0, (f"{doc} ({kind} blocks) failed:\n--- stdout\n{res.stdout}"
                                 f"\n--- stderr\n{res.stderr}")
    assert "Traceback" not in res.stderr, res.stderr


@pytest.mark.parametrize("block", [b for b in BLOCKS if is_guide(b.doc) and b.lang == "python"],
                         ids=lambda b: b.where)
def test_guide_blocks_compile_and_import_real_names(block: Block) -> None:
    assert check_guide_python(block) == []


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in ("json", "toml")],
                         ids=lambda b: b.where)
def test_config_blocks_start_the_server(block: Block) -> None:
    assert check_config(block) == []


@pytest.mark.parametrize(("suite", "test_file"), [
    ("backends", "tests/backends/test_docs_postgres.py"),
    ("mcp", "tests/mcp/test_mcp_docs.py"),
    ("otel", "tests/otel/test_otel_docs.py")])
def test_groups_that_need_more_run_in_their_suite(suite: str, test_file: str) -> None:
    """A group needing a server or the MCP extra runs in that suite: it lists the doc."""
    docs = {doc for (doc, _kind), g in GROUPS.items() if suite_for(g) == suite}
    listed = (ROOT / test_file).read_text("utf-8")
    assert docs and all(f'"{d}"' in listed for d in docs), (suite, docs)


# ---------------------------------------------------------------------- the checks can fail

def test_stand_ins_refuse_what_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert "core" in nox_sessions() and "langgraph-floor" in nox_sessions()
    assert shim_main(["pip", "install", "anneal-memory[mcp]", "nox[uv]", "."]) == 0
    assert shim_main(["pip", "install", "anneal-memory[no-such-extra]"]) == 1
    assert shim_main(["pip", "install", "left-pad"]) == 1
    assert shim_main(["nox", "-s", "core", "lint"]) == 0
    assert shim_main(["nox", "-s", "no-such-session"]) == 1
    assert shim_main(["uvx", "--from", "anneal-memory[nope]", "true"]) == 1
    assert "no-such-session" in capsys.readouterr().err


def test_a_broken_block_fails(tmp_path: Path) -> None:
    bad = Block("x.md", 1, "python", "from anneal_memory import Store\nStore('m.db').nope()\n")
    assert run([bad], "python", tmp_path / "py").returncode != 0
    sh = Block("x.md", 1, "sh", "anneal-memory --db missing.db status\necho not reached\n")
    res = run([sh], "shell", tmp_path / "sh")
    assert res.returncode == 1 and "not reached" not in res.stdout
    guide = Block("x.md", 1, "python", "from anneal_memory.adapters.langgraph import Nope\n")
    assert check_guide_python(guide)


def test_package_urls_are_real() -> None:
    from docblocks import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"].get("urls", {})
    reserved = re.compile(r"://([^/]*\.)?(example\.(com|org|net)|[^/]*\.(invalid|test|example))(/|$)")
    assert not [u for u in urls.values() if reserved.search(u)], urls
