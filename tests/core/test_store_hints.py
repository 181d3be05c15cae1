"""Hints that point the right way (issue 52, item 7): each refusal below used to send the
user somewhere that does not work; each test follows the new advice and checks it works.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import test_cli
from test_cli import Run, continuity, wrapped_store
from test_cli_subprocess import base_env, run

from anneal_memory import Store

clean_env = test_cli.clean_env
cli = test_cli.cli


def test_a_second_prepare_wrap_names_what_the_cli_can_do(cli: Run, tmp_path: Path) -> None:
    cli.ok("init", "--no-baton")
    eid = cli.json("record", "retry backoff fixed the flaky upload")["id"]
    today = cli.json("prepare-wrap")["today"]
    rc, _out, err = cli("prepare-wrap")
    assert rc == 1
    assert "re-open it with its wrap token" not in err, err
    assert "save-continuity FILE --wrap-token TOKEN" in err and "wrap-token-current" in err
    assert "wrap-cancel" in err
    # the advice works: the token, then the save with it
    token = cli.ok("wrap-token-current").strip()
    doc = tmp_path / "c.md"
    doc.write_text(continuity(eid, 1, str(today)[:10], "retry backoff fixed flaky upload"))
    rc, _out, err = cli("save-continuity", str(doc), "--wrap-token", token)
    assert rc == 0, err


def _damage_the_audit_copy(db: Path) -> None:
    conn = sqlite3.connect(db)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    roots = [r[0] for r in conn.execute(
        "SELECT rootpage FROM sqlite_master WHERE name IN ('audit_log', 'audit_hashes')")]
    conn.close()
    with open(db, "r+b") as fh:
        for root in roots:
            fh.seek(page * (root - 1))
            fh.write(b"\x07" * page)


def test_verify_on_a_damaged_database_does_not_send_the_user_to_audit_repair(
        cli: Run, db: Path) -> None:
    wrapped_store(db)
    _damage_the_audit_copy(db)
    rc, _out, err = cli("verify")
    assert rc == 1 and "the database's copy of the chain cannot be read" in err, err
    assert "audit-repair rebuilds" not in err and "cannot help" in err, err
    assert "backup" in err and "import --restore" in err
    # audit-repair indeed does not help here: the old advice was wrong
    assert cli("audit-repair")[0] == 1
    # what the message recommends does: a backup restored into a new store
    assert "export on a copy" not in cli("search", "backoff")[2]


def test_a_restore_into_a_store_with_wraps_says_one_thing(cli: Run, db: Path,
                                                          tmp_path: Path,
                                                          monkeypatch: Any) -> None:
    backup_db = tmp_path / "b.db"
    wrapped_store(backup_db)
    backup = tmp_path / "backup.json"
    with Store(backup_db) as s:
        s.record("only in the backup", "observation")
        backup.write_text(s.export_json())
    wrapped_store(db)
    before = cli.json("status")["total_episodes"]
    monkeypatch.setenv("ANNEAL_OPERATOR", "1")
    rc, _out, err = cli("import", "--restore", str(backup))
    assert rc == 1
    assert "nothing was imported" in err and "were imported" not in err, err
    assert "--db a path that holds none" in err and "without --restore" in err, err
    assert cli.json("status")["total_episodes"] == before
    # both ways it names work: without --restore (the episodes come in, unwrapped) ...
    rc, out, err = cli("import", str(backup))
    assert rc == 0, err
    assert "nothing was" not in out, out
    assert cli.json("status")["total_episodes"] == before + 3
    # ... and --restore into a new path
    rc, _out, err = cli("--db", str(tmp_path / "new.db"), "import", "--restore", str(backup),
                        db=False)
    assert rc == 0, err
    with Store(tmp_path / "new.db", read_only=True) as r:
        assert r.status().total_wraps == 2


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_invalid_utf8_on_stdin_is_named_with_its_byte_offset(tmp_path: Path,
                                                              locale: str) -> None:
    db = tmp_path / "m.db"
    env = base_env(LC_ALL=locale, LANG=locale)
    rc, _out, err = run(db, "record", "-", stdin=b"abc\xff\xfedef", env=env)
    assert rc == 1
    assert "surrogate" not in err, err
    assert "not UTF-8 text" in err and "byte 0xFF at byte offset 3" in err, err
    assert not db.exists() and list(tmp_path.iterdir()) == []
    rc, _out, err = run(db, "record", "-", stdin="naïve café".encode(), env=env)
    assert rc == 0, err


def test_invalid_utf8_in_a_file_names_its_byte_offset(cli: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"episodes": ["\xc3\x28"]}')
    rc, _out, err = cli("import", str(bad))
    assert rc == 1 and "byte 0xC3 at byte offset 15" in err, err


@pytest.mark.parametrize("argv", [
    ["import", "BAD"], ["import", "EMPTY"], ["record", ""], ["record", "x", "--type", "nope"],
    ["record", "x", "--state-key", " "],
])
def test_a_refused_first_write_into_a_new_path_leaves_nothing(
        tmp_path: Path, argv: list[str], capsys: Any, clean_env: None) -> None:
    from anneal_memory.cli.main import main

    folder = tmp_path / "new"
    folder.mkdir()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"episodes": [{"id": 5, "content": "x"}]}))
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"format": "anneal-memory-export", "state": {"x": 1}}))
    argv = [{"BAD": str(bad), "EMPTY": str(empty)}.get(a, a) for a in argv]
    for db in (folder / "m.db", folder / "zero.db"):
        if db.name == "zero.db":
            db.write_bytes(b"")
        before = sorted(p.name for p in folder.iterdir())
        capsys.readouterr()
        rc = main(["--db", str(db)] + argv)
        err = capsys.readouterr().err
        assert rc in (1, 2), err
        assert sorted(p.name for p in folder.iterdir()) == before, err
        assert not db.exists() or db.stat().st_size == 0


def test_the_cleanup_of_a_refused_first_write_spares_another_writers_store(
        tmp_path: Path) -> None:
    """Two processes make the same new store; one is refused: the other's episode stays."""
    from anneal_memory import ValidationError
    from anneal_memory.storage.sqlite_files import undone_on_failure

    db = tmp_path / "m.db"
    with pytest.raises(ValidationError):
        with undone_on_failure(db):
            with Store(db) as other:  # the other process, meanwhile
                other.record("kept by the other writer", "observation")
            raise ValidationError("this process's record was refused")
    with Store(db, read_only=True) as s:
        assert s.status().total_episodes == 1
    with pytest.raises(ValidationError):
        with undone_on_failure(db.with_name("n.db")):
            Store(db.with_name("n.db")).close()  # made, but holds nothing
            raise ValidationError("refused")
    assert not db.with_name("n.db").exists()
