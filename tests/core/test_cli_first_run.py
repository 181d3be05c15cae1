"""What a newcomer meets in the first hour: the default folder, typo'd paths, the demo,
prune's confirmation, --json everywhere, summarized long output, help texts, global
options after the command, and progress that moves only on a terminal."""

from __future__ import annotations

import argparse
import io
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import test_cli
from test_cli import Run
from test_cli_subprocess import base_env, run

from anneal_memory import Store
from anneal_memory.cli import common as cli_common
from anneal_memory.cli.main import build_parser, main

# the shared fixtures (pytest finds fixtures by module attribute)
clean_env = test_cli.clean_env
cli = test_cli.cli

# The commands that make a store; every other one needs an existing store.
CREATORS = {"init", "record", "import", "serve", "demo", "eval", "migrate-store"}


def _leaves(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, p)]
    out = []
    for name, child in dict.fromkeys(subs[0].choices.items()):
        out += _leaves(child, path + (name,))
    return out


def _minimal_argv(path: tuple[str, ...], p: argparse.ArgumentParser) -> list[str]:
    """The command with a dummy value for each positional and each required option."""
    argv = list(path)
    for a in p._actions:
        value = a.choices[0] if a.choices else {"level": "agent"}.get(a.dest, "1")
        if not a.option_strings:
            argv.append(str(value))
        elif a.required:
            argv += [a.option_strings[0], str(value)]
    for g in p._mutually_exclusive_groups:
        if g.required:
            a = g._group_actions[0]
            argv += [a.option_strings[0], "1"]
    return argv


LEAVES = [(path, p) for path, p in _leaves(build_parser()) if path[0] not in CREATORS]


# ---------------------------------------------------------------------- the default folder

def test_init_creates_the_default_folder_private(tmp_path: Path) -> None:
    env = base_env(HOME=str(tmp_path))
    assert not (tmp_path / ".anneal-memory").exists()
    rc, out, err = run(None, "init", env=env)
    assert rc == 0, err
    folder = tmp_path / ".anneal-memory"
    assert (folder / "memory.db").is_file()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert run(None, "status", env=env)[0] == 0


def test_record_makes_the_default_folder_but_not_a_named_one(tmp_path: Path) -> None:
    env = base_env(HOME=str(tmp_path))
    assert run(None, "record", "first note", env=env)[0] == 0
    assert (tmp_path / ".anneal-memory" / "memory.db").is_file()
    rc, _out, err = run(tmp_path / "typo-dir" / "m.db", "record", "x")
    assert rc == 1 and "does not exist" in err and "--db" in err
    assert not (tmp_path / "typo-dir").exists()


# ---------------------------------------------------------------------- a path with no store

@pytest.mark.parametrize(("path", "parser"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_commands_on_a_missing_store_refuse_and_create_nothing(
        path: tuple[str, ...], parser: argparse.ArgumentParser, tmp_path: Path,
        capsys: Any) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    db = folder / "typo.db"
    capsys.readouterr()
    rc = main(["--db", str(db)] + _minimal_argv(path, parser))
    _out, err = capsys.readouterr()
    assert rc == 1, err
    assert f"no store at {db}" in err and err.startswith("anneal-memory: error: "), err
    assert list(folder.iterdir()) == [], "a refused command left files behind"


def test_the_walk_covers_the_read_only_commands() -> None:
    names = {" ".join(p) for p, _ in LEAVES}
    assert {"status", "search", "get", "stats", "export", "verify", "audit-repair",
            "crystal index", "spore list", "baton status", "probe list", "worth"} <= names
    assert not {p[0] for p, _ in LEAVES} & CREATORS


def test_missing_default_store_names_init(tmp_path: Path) -> None:
    rc, _out, err = run(None, "status", env=base_env(HOME=str(tmp_path)))
    assert rc == 1 and "no store at" in err and "anneal-memory init" in err
    assert not (tmp_path / ".anneal-memory").exists()


# ---------------------------------------------------------------------- demo

def _demo_folders() -> set[str]:
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("anneal-demo-")}


def test_demo_runs_on_a_temporary_store_and_removes_it(cli: Run, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("ANNEAL_MEMORY_DB", str(cli.db))  # the demo never uses it
    rc, out, err = cli("demo", "--json", db=False)
    assert rc == 0, err
    data = json.loads(out)
    assert data["temporary"] is True and data["recorded"] == 5 and "## Decisions" in data["continuity"]
    assert os.listdir(tmp_path / "tmp") == []
    assert not cli.db.exists()


def test_demo_refuses_a_store_with_memory_and_changes_nothing(cli: Run) -> None:
    with Store(cli.db) as s:
        s.record("a real user's episode", "decision")
    before = cli.json("status")
    msg = cli.refused("demo")
    assert "not empty" in msg and "without --db" in msg
    after = cli.json("status")
    assert after["total_episodes"] == before["total_episodes"] == 1
    assert after["continuity_chars"] is None


def test_demo_refuses_a_store_made_by_init_cleanly(cli: Run) -> None:
    cli.json("init")
    msg = cli.refused("demo")
    assert "baton" in msg and "internal error" not in msg
    assert cli.json("status")["total_episodes"] == 0


def test_demo_keeps_a_new_store_when_told(cli: Run) -> None:
    data = cli.json("demo")
    assert data["temporary"] is False
    assert cli.json("status")["total_episodes"] == 5


# ---------------------------------------------------------------------- prune

def _aged(cli: Run) -> None:
    cli.json("record", "old note", "--timestamp", "2001-01-01")
    cli.json("record", "fresh note")


def test_prune_without_a_terminal_needs_yes_and_says_how_many(cli: Run) -> None:
    _aged(cli)
    msg = cli.refused("prune", "--older-than-days", "0")
    assert "would remove 2 episode(s)" in msg and "--yes" in msg
    assert cli.json("status")["total_episodes"] == 2
    assert cli.json("prune", "--older-than-days", "0", "--yes")["pruned"] == 2
    assert cli.json("status")["total_episodes"] == 0


def test_prune_asks_on_a_terminal(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    _aged(cli)
    monkeypatch.setattr(cli_common, "_interactive", lambda: True)
    monkeypatch.setattr("builtins.input", lambda: "n")
    rc, _out, err = cli("prune", "--older-than-days", "30")
    assert rc == 1 and "would remove 1 episode(s) older than 30 day(s)" in err
    assert cli.json("status")["total_episodes"] == 2
    monkeypatch.setattr("builtins.input", lambda: "y")
    assert cli.json("prune", "--older-than-days", "30")["pruned"] == 1


def test_prune_with_nothing_to_remove_does_not_ask(cli: Run) -> None:
    cli.json("record", "fresh note")
    assert cli.json("prune", "--older-than-days", "30")["pruned"] == 0


# ---------------------------------------------------------------------- --json, error lines

def test_eval_and_migrate_store_take_json(tmp_path: Path, cli: Run) -> None:
    rc, out, err = cli("eval", "--json", "-o", str(tmp_path / "ev"), db=False)
    assert rc == 0, err
    data = json.loads(out)
    assert data["safety_ok"] is True and len(data["files"]) == 3
    cli.json("record", "to be copied")
    rc, out, err = cli("migrate-store", str(cli.db), str(tmp_path / "copy.db"), "--json",
                       db=False)
    assert rc == 0, err
    assert json.loads(out)["copied"]["episodes"] == 1


def test_migrate_store_errors_carry_the_prefix(tmp_path: Path, cli: Run) -> None:
    cli.json("record", "source episode")
    other = tmp_path / "dest.db"
    with Store(other) as s:
        s.record("already here", "observation")
    rc, _out, err = cli("migrate-store", str(cli.db), str(other), db=False)
    assert rc == 1 and err.startswith("anneal-memory: error: ") and "not empty" in err


def test_a_refusal_under_json_is_one_document_on_stdout(cli: Run) -> None:
    cli.json("record", "x")
    rc, out, err = cli("get", "nope", "--json")
    assert rc == 1 and "anneal-memory: error: no episode" in err
    doc = json.loads(out)
    assert doc["error"]["type"] == "EpisodeNotFoundError" and "nope" in doc["error"]["message"]


# ---------------------------------------------------------------------- message bugs

def test_status_says_none_yet_without_a_unit(cli: Run) -> None:
    cli.json("init")
    out = cli.ok("status")
    assert "continuity: none yet\n" in out and "none yet chars" not in out


def test_audit_refuses_an_unknown_event_and_accepts_a_known_one(cli: Run) -> None:
    cli.json("record", "x")
    msg = cli.refused("audit", "--event", "nonsense")
    assert "unknown audit event" in msg and "record" in msg
    assert cli.ok("audit", "--event", "delete").strip() == "(no entries)"
    assert cli.json("audit", "--event", "record")["count"] == 1


def test_set_schema_names_a_missing_file_as_missing(cli: Run, tmp_path: Path) -> None:
    cli.json("init")
    msg = cli.refused("set-schema", str(tmp_path / "missing.json"))
    assert "does not exist" in msg and "not valid JSON" not in msg
    bad = tmp_path / "bad.json"
    bad.write_text("{oops", "utf-8")
    assert "not valid JSON" in cli.refused("set-schema", str(bad))


# ---------------------------------------------------------------------- summarized output

@pytest.fixture
def export_of_60(tmp_path: Path) -> Path:
    with Store(tmp_path / "src.db") as s:
        s.record_many([{"content": f"bulk item {i}", "episode_type": "observation"}
                       for i in range(60)])
        path = tmp_path / "export.json"
        s.export_json(path)
    return path


def test_import_rerun_summarizes_skipped_ids(cli: Run, export_of_60: Path) -> None:
    first = cli.json("import", str(export_of_60))
    assert first["imported"] == 60 and first["ids_count"] == 60 and len(first["ids"]) == 5
    again = cli.json("import", str(export_of_60))
    assert again["imported"] == 0 and again["skipped_existing_count"] == 60
    assert len(again["skipped_existing"]) == 5 and again["lists_complete"] is False
    full = cli.json("import", str(export_of_60), "--verbose")
    assert len(full["skipped_existing"]) == 60 and full["lists_complete"] is True
    assert "skipped 60 already present" in cli.ok("import", str(export_of_60))


def test_plain_audit_summarizes_long_id_lists(cli: Run, export_of_60: Path) -> None:
    cli.json("import", str(export_of_60))
    ids = cli.json("audit", "--event", "import")["entries"][0]["data"]["ids"]
    assert len(ids) == 60  # --json is the trail as chained
    text = cli.ok("audit", "--event", "import")
    assert "55 more (--verbose lists all)" in text
    assert sum(i in text for i in ids) == 5
    verbose = cli.ok("audit", "--event", "import", "--verbose")
    assert all(i in verbose for i in ids)


# ---------------------------------------------------------------------- help

def _all_parsers(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    out = [(path, p)]
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, child in dict.fromkeys(a.choices.items()):
                out += _all_parsers(child, path + (name,))
    return out


def test_every_command_has_a_description_and_every_option_a_help_text() -> None:
    parsers = _all_parsers(build_parser())
    assert len(parsers) > 50
    no_description = [" ".join(path) for path, p in parsers if path and not p.description]
    assert not no_description, f"--help pages without a description: {no_description}"
    no_help = sorted({f"{' '.join(path)} {a.option_strings[0] if a.option_strings else a.dest}"
                      for path, p in parsers for a in p._actions
                      if not isinstance(a, argparse._SubParsersAction)
                      and a.help is None})
    assert not no_help, f"arguments without help text: {no_help}"


def test_subcommand_help_starts_with_its_description(capsys: Any) -> None:
    assert main(["prune", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Remove episodes older than N days" in out and "--older-than-days N" in out
    assert "remove episodes recorded more than N days ago" in out


def test_global_options_work_after_the_command(cli: Run) -> None:
    cli.json("record", "after the command")
    rc, out, err = cli("status", "--db", str(cli.db), "--json", db=False)
    assert rc == 0, err
    assert json.loads(out)["total_episodes"] == 1
    rc, out, err = cli("baton", "status", "--db", str(cli.db), "--json", db=False)
    assert rc == 0 and json.loads(out)["holder"] is None, err
    # given twice, the one after the command wins, like any repeated option
    rc, _out, err = cli("--db", "/nonexistent/x.db", "status", "--db", str(cli.db), db=False)
    assert rc == 0, err


# ---------------------------------------------------------------------- progress

class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_moves_in_place_on_a_terminal_only() -> None:
    tty = FakeTerminal()
    bar = cli_common.Progress(tty, interval=0)
    for n in (1, 2, 3):
        bar.update(f"step {n}")
    bar.done("finished")
    assert tty.getvalue() == "\rstep 1\rstep 2\rstep 3\rfinished\n"
    pipe = io.StringIO()
    quiet = cli_common.Progress(pipe, interval=0)
    quiet.update("step 1")
    quiet.done("finished")
    assert pipe.getvalue() == ""


def test_import_progress_moves_on_a_terminal(cli: Run, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(tmp_path / "src.db") as s:
        s.record_many([{"content": f"item {i}", "episode_type": "observation"}
                       for i in range(2500)])
        s.export_json(tmp_path / "e.json")
    monkeypatch.setattr(cli_common.Progress, "INTERVAL", 0)
    tty = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["--db", str(cli.db), "import", str(tmp_path / "e.json")]) == 0
    shown = tty.getvalue()
    assert "\rimporting: 1,000 / 2,500" in shown and "\rimporting: 2,000 / 2,500" in shown
    assert shown.endswith("imported 2,500 of 2,500 episode(s)\n")


def test_verify_progress_counts_entries_within_a_file(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    from anneal_memory import _audit_files

    with Store(cli.db) as s:
        s.record_many([{"content": f"item {i}", "episode_type": "observation"} for i in range(40)])
    monkeypatch.setattr(_audit_files, "PROGRESS_EVERY", 10)
    monkeypatch.setattr(cli_common.Progress, "INTERVAL", 0)
    tty = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["--db", str(cli.db), "verify"]) == 0
    shown = tty.getvalue()
    counts = [line for line in shown.split("\r") if "entries checked" in line]
    assert len(counts) >= 4 and "0 entries verified so far" not in shown
    assert "10 entries checked" in shown and "40 entries checked" in shown


def test_migrate_store_progress_on_a_terminal(cli: Run, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    cli.json("record", "to copy")
    monkeypatch.setattr(cli_common.Progress, "INTERVAL", 0)
    tty = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["migrate-store", str(cli.db), str(tmp_path / "c.db")]) == 0
    assert "\rcopying episodes" in tty.getvalue() and "1 / 1 rows" in tty.getvalue()


def test_no_progress_in_a_pipe(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Store(tmp_path / "src.db") as s:
        s.record_many([{"content": f"item {i}", "episode_type": "observation"} for i in range(1500)])
        s.export_json(tmp_path / "e.json")
    for argv in (("import", str(tmp_path / "e.json")), ("verify",)):
        rc, _out, err = run(db, *argv)
        assert rc == 0 and err == "", err
    rc, _out, err = run(None, "migrate-store", str(db), str(tmp_path / "copy.db"))
    assert rc == 0 and err == "", err


def test_every_data_command_takes_json() -> None:
    # README: "every data command takes --json" (serve speaks MCP on stdout instead)
    without = [" ".join(path) for path, p in _leaves(build_parser()) if path != ("serve",)
               and "--json" not in {o for a in p._actions for o in a.option_strings}]
    assert not without, f"commands without --json: {without}"
