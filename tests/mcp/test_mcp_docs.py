"""The docs and agent snippets keep up with the server: every tool and resource is
documented, and every command a snippet teaches exists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from anneal_memory.mcp.tools import TOOL_NAMES

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "core"))  # the docs runner the core docs test uses
# the documents whose shell blocks start the server (the core docs test checks this list)
SERVER_DOCS = ["docs/mcp.md"]
EXAMPLES = ROOT / "examples"
MCP_SNIPPETS = ["agent-instructions.lean.example", "agent-instructions.full.example"]
CLI_SNIPPETS = ["agent-instructions.lean.cli.example", "agent-instructions.full.cli.example"]
SKILL = EXAMPLES / "skill" / "anneal-memory" / "SKILL.md"


def test_every_tool_and_resource_is_documented() -> None:
    doc = (ROOT / "docs" / "mcp.md").read_text("utf-8")
    missing = [t for t in TOOL_NAMES if f"`{t}`" not in doc]
    assert not missing, f"docs/mcp.md does not document: {missing}"
    assert "anneal://continuity" in doc and "anneal://integrity/manifest" in doc
    assert "serve --session-id" in doc and "--generate-integrity" in doc


@pytest.mark.parametrize("name", MCP_SNIPPETS)
def test_mcp_snippets_teach_the_workflow_with_real_tool_names(name: str) -> None:
    text = (EXAMPLES / name).read_text("utf-8")
    for step in ("anneal://continuity", "`record`", "`recall`", "`prepare_wrap`",
                 "`save_continuity`"):
        assert step in text, (name, step)
    named = set(re.findall(r"`([a-z]+_[a-z_]+|record|recall|status)`", text))
    unknown = {n for n in named if n not in TOOL_NAMES and n not in
               {"state_key", "derived_from", "episode_id", "wrap_token"}}
    assert not unknown, f"{name} names tools the server does not have: {unknown}"


def test_lean_snippets_stay_lean() -> None:
    for name in ("agent-instructions.lean.example", "agent-instructions.lean.cli.example"):
        lines = (EXAMPLES / name).read_text("utf-8").splitlines()
        assert 30 <= len(lines) <= 55, (name, len(lines))


@pytest.mark.parametrize("name", CLI_SNIPPETS + MCP_SNIPPETS + ["skill/anneal-memory/SKILL.md"])
def test_commands_in_snippets_exist(name: str) -> None:
    from anneal_memory.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = set(sub.choices)  # type: ignore[attr-defined]
    text = (EXAMPLES / name).read_text("utf-8")
    # commands in backticks or at the start of a code-block line, not prose
    used = set(re.findall(r"(?:^|`)anneal-memory (?:--\S+ \S+ )*([a-z][a-z-]+)", text, re.M))
    if name in CLI_SNIPPETS:
        assert len(used) >= 5, (name, used)
    assert used - commands == set(), f"{name} uses unknown commands {used - commands}"


def test_skill_has_front_matter() -> None:
    head = SKILL.read_text("utf-8").split("---")
    assert head[0] == "" and "name: anneal-memory" in head[1] and "description:" in head[1]


@pytest.mark.parametrize("doc", SERVER_DOCS)
def test_server_commands_in_the_docs_run_as_written(doc: str, tmp_path: Path) -> None:
    """The install-and-run block as a newcomer types it: `serve` on a fresh HOME (the
    default folder does not exist yet), then the baton commands on the store it made."""
    from docblocks import groups, run

    res = run(groups()[(doc, "shell")], "shell", tmp_path)
    assert res.returncode == 0, f"{doc}:\n{res.stdout}\n{res.stderr}"
    assert (tmp_path / "home" / ".anneal-memory" / "memory.db").is_file()
