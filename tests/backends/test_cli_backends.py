"""The operator CLI on every backend: the audit commands and the read-only commands take a
``postgresql://`` URL as given (never mangled into a path), and the sidecar tiers of a
server store live in its per-host folder, not in a folder named after the URL."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import Store
from anneal_memory.cli.main import main


def cli(capsys: pytest.CaptureFixture[str], location: str, *argv: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    rc = main(["--db", location, *argv, "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, json.loads(out) if out.strip() else None, err


def test_audit_commands_take_the_location_as_given(location: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store(location) as s:
        ids = [s.record(f"fact number {i}", "observation").id for i in range(3)]
        s.delete(ids[0])
    rc, res, err = cli(capsys, location, "verify")
    assert rc == 0, err
    assert res["valid"] is True and res["total_entries"] >= 4
    rc, sub, err = cli(capsys, location, "audit", "verify")
    assert rc == 0 and sub["total_entries"] == res["total_entries"], err
    rc, log, err = cli(capsys, location, "audit", "--event", "delete")
    assert rc == 0 and log["count"] == 1 and log["entries"][0]["data"]["episode_id"] == ids[0], err
    rc, rep, err = cli(capsys, location, "audit-repair")
    assert rc == 0 and "nothing to repair" in rep["status"], err
    rc, st, err = cli(capsys, location, "status")
    assert rc == 0 and st["total_episodes"] == 2, err
    rc, _idx, err = cli(capsys, location, "crystal", "index")
    assert rc == 0, err
    # nothing was created in the working folder (a URL turned into a path would be)
    assert not any(p.startswith("postgres") for p in os.listdir(tmp_path))


def test_global_options_after_the_command_on_every_backend(
        location: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(location) as s:
        s.record("placed after the command", "observation")
    capsys.readouterr()
    assert main(["search", "placed", "--db", location, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total_matching"] == 1


def test_init_knows_an_existing_store_on_every_backend(
        location: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, first, err = cli(capsys, location, "init")
    assert rc == 0 and first["created"] is True and first["consolidate_requires_baton"], err
    rc, again, err = cli(capsys, location, "init", "--no-baton")
    assert rc == 0 and again["created"] is False and again["consolidate_requires_baton"], err
