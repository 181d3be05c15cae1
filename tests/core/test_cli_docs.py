"""Every CLI command, subcommand and option is documented: docs/cli.md has a section per
command and names every option; README's ``## CLI`` reference names every command."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from anneal_memory.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "cli.md").read_text("utf-8")


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def walk(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, p
    for name, child in _subparsers(p).items():
        yield from walk(child, path + (name,))


def _options(p: argparse.ArgumentParser) -> list[str]:
    return [o for a in p._actions if a.help != argparse.SUPPRESS
            for o in a.option_strings if o.startswith("--") and o not in ("--help", "--json")]


COMMANDS = list(walk(build_parser()))
TOP = [path[0] for path, _ in COMMANDS if len(path) == 1]


def test_every_command_has_a_section() -> None:
    missing = [c for c in TOP if f"### `{c}`" not in DOC]
    assert not missing, f"docs/cli.md lacks a '### `name`' section for: {missing}"


def test_every_subcommand_is_named() -> None:
    missing = [" ".join(path) for path, _ in COMMANDS
               if len(path) == 2 and f"`{' '.join(path)}" not in DOC]
    assert not missing, f"docs/cli.md does not name these subcommands: {missing}"


def test_every_option_is_named() -> None:
    missing = sorted({f"{' '.join(path) or '(global)'} {opt}" for path, p in COMMANDS
                      for opt in _options(p) if opt not in DOC})
    assert not missing, f"docs/cli.md does not mention: {missing}"


def test_the_walk_sees_the_whole_cli() -> None:
    # guards the three tests above against a parser walk that silently finds nothing
    assert {"record", "crystal", "spore", "serve", "audit"} <= set(TOP)
    assert ("crystal", "fold-surfaced") in [path for path, _ in COMMANDS]
    assert "--include-superseded" in _options(dict(COMMANDS)[("search",)])


def test_readme_cli_section_names_every_command() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    m = re.search(r"^## CLI\b.*?(?=^## |\Z)", readme, re.M | re.S)
    assert m is not None, "README.md has no '## CLI' section"
    section = m.group(0)
    missing = [c for c in TOP if not re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", section)]
    assert not missing, f"README.md's CLI section does not name: {missing}"
