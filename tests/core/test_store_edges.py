"""A store that is gone is not a new store (issue 52, item 1).

A database deleted or truncated to 0 bytes while its audit trail, continuity and sidecars
are still beside it is refused with StoreGoneError by the library and by every command
(nothing is created, nothing beside it changes); ``init --force`` moves the old files
aside and starts fresh; read-only commands create nothing even where nothing exists.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import test_cli
from test_cli import wrapped_store
from test_cli_first_run import LEAVES, _minimal_argv

from anneal_memory import Store, StoreError, StoreGoneError
from anneal_memory.cli.main import main

clean_env = test_cli.clean_env


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``folder`` with its size and bytes."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _lost(tmp_path: Path, how: str) -> Path:
    """A store with wraps, continuity and an audit trail whose database was then lost:
    ``deleted``, ``emptied`` (0 bytes), or deleted with only its ``wal`` left."""
    folder = tmp_path / "s"
    folder.mkdir()
    db = folder / "memory.db"
    wrapped_store(db)
    assert (folder / "memory.continuity.md").is_file()
    if how == "emptied":
        db.write_bytes(b"")
    elif how == "deleted":
        db.unlink()
    else:  # only the write-ahead log and nothing else of the store
        for p in folder.iterdir():
            p.unlink()
        (folder / "memory.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\0" * 28)
    return db


@pytest.mark.parametrize("how", ["deleted", "emptied", "wal"])
@pytest.mark.parametrize("read_only", [False, True])
def test_the_library_refuses_a_lost_database_and_creates_nothing(
        tmp_path: Path, how: str, read_only: bool) -> None:
    db = _lost(tmp_path, how)
    before = _snapshot(db.parent)
    with pytest.raises(StoreGoneError) as info:
        Store(db, read_only=read_only)
    msg = str(info.value)
    assert ("is missing" if how != "emptied" else "is empty (0 bytes)") in msg
    assert "backup" in msg and "start fresh deliberately" in msg
    assert info.value.found and all(Path(f).parent == db.parent for f in info.value.found)
    if how != "wal":
        assert "memory.audit.jsonl" in msg and "memory.continuity.md" in msg
    assert isinstance(info.value, StoreError)
    assert _snapshot(db.parent) == before, "a refused open changed the folder"


def test_an_empty_path_with_nothing_beside_it_is_still_a_new_store(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    db.write_bytes(b"")  # as tempfile.NamedTemporaryFile leaves it
    (tmp_path / "other.audit.jsonl").write_text("{}\n")  # another store's file
    with Store(db) as s:
        s.record("first", "observation")
    with Store(db) as s:
        assert s.status().total_episodes == 1


ALL_COMMANDS = LEAVES + [((name,), None) for name in ("record", "import", "init")]


@pytest.mark.parametrize(("path", "parser"), ALL_COMMANDS,
                         ids=[" ".join(p) for p, _ in ALL_COMMANDS])
def test_every_command_on_a_lost_database_refuses_and_changes_nothing(
        path: tuple[str, ...], parser: argparse.ArgumentParser | None, tmp_path: Path,
        capsys: Any, clean_env: None) -> None:
    db = _lost(tmp_path, "emptied")
    export = tmp_path / "e.json"
    export.write_text(json.dumps({"format": "anneal-memory-export", "episodes": []}))
    before = _snapshot(db.parent)
    argv = {"record": ["record", "hello"], "import": ["import", str(export)],
            "init": ["init"]}.get(path[0]) or _minimal_argv(path, parser)  # type: ignore[arg-type]
    capsys.readouterr()
    rc = main(["--db", str(db)] + argv)
    _out, err = capsys.readouterr()
    assert rc == 1, err
    assert "is empty (0 bytes), but files of its store are still beside it" in err, err
    assert _snapshot(db.parent) == before, "a refused command changed the store's folder"


@pytest.mark.parametrize(("path", "parser"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_commands_on_an_empty_file_say_no_store_and_write_nothing(
        path: tuple[str, ...], parser: argparse.ArgumentParser, tmp_path: Path,
        capsys: Any, clean_env: None) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    db = folder / "memory.db"
    db.write_bytes(b"")
    capsys.readouterr()
    rc = main(["--db", str(db)] + _minimal_argv(path, parser))
    _out, err = capsys.readouterr()
    assert rc == 1, err
    assert f"no store at {db}: the file is empty" in err, err
    assert [p.name for p in folder.iterdir()] == ["memory.db"] and db.stat().st_size == 0


def test_status_on_an_emptied_store_is_not_a_fresh_store(
        tmp_path: Path, capsys: Any, clean_env: None) -> None:
    """The issue's probe: status said rc 0, "episodes: 0"; record then succeeded."""
    db = _lost(tmp_path, "emptied")
    for argv in (["status"], ["record", "new note"], ["status", "--json"]):
        capsys.readouterr()
        rc = main(["--db", str(db)] + argv)
        out, err = capsys.readouterr()
        assert rc == 1 and "episodes: 0" not in out, (argv, out, err)
    assert db.stat().st_size == 0


def test_init_force_moves_the_lost_store_aside_and_starts_fresh(
        tmp_path: Path, capsys: Any, clean_env: None) -> None:
    db = _lost(tmp_path, "deleted")
    old = _snapshot(db.parent)
    capsys.readouterr()
    assert main(["--db", str(db), "init", "--force", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    aside = Path(doc["moved_aside"])
    assert doc["created"] is True and aside.parent == db.parent
    assert aside.name.startswith("memory.db.old-") and aside.name.endswith("Z")
    moved = {name: v for name, v in _snapshot(aside).items()}
    assert {k: v for k, v in old.items() if not k.endswith(".lock")} == {
        k: v for k, v in moved.items() if not k.endswith(".lock")}, "not every file moved whole"
    assert main(["--db", str(db), "record", "a fresh start"]) == 0
    assert main(["--db", str(db), "verify"]) == 0, capsys.readouterr().err
    with Store(db) as s:
        assert s.status().total_episodes == 1 and s.load_continuity() is None


def test_init_force_on_a_store_that_holds_its_database_changes_nothing(
        tmp_path: Path, capsys: Any, clean_env: None) -> None:
    db = tmp_path / "memory.db"
    wrapped_store(db)
    before = _snapshot(tmp_path)
    capsys.readouterr()
    assert main(["--db", str(db), "init", "--force"]) == 0
    out = capsys.readouterr().out
    assert "Already exists, left as is" in out and "holds its database" in out
    assert {k for k in _snapshot(tmp_path)} == set(before)
    with Store(db) as s:
        assert s.status().total_wraps == 2


def test_an_empty_database_beside_its_log_alone_is_a_store_being_created(tmp_path: Path) -> None:
    """Another process creating the store keeps its first pages in the write-ahead log
    until a checkpoint: an empty database with only a log beside it is not a lost store
    (six processes creating one store on SQLite 3.39.4 met this)."""
    db = tmp_path / "memory.db"
    db.write_bytes(b"")
    (tmp_path / "memory.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\0" * 28)
    with Store(db) as s:
        s.record("first", "observation")
        assert s.status().total_episodes == 1
