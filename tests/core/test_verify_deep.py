"""Content is covered by the chain (issue 29 item 4): ``verify --deep`` (and
``Store.verify_content``) finds an episode whose stored content, type, trust or namespace
no longer matches the audit entry that recorded or imported it, as an attacker with write
access to the database file would leave it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from anneal_memory import Store


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), *args],
                          capture_output=True, text=True, timeout=120)


def _store(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        ids = {"plain": s.record("the gate code is 4411", "observation").id,
               "user": s.scoped({"user": "alice"}).record("alice likes tea", "decision").id}
        relayed = s.record("a tool said the price is 12", "observation", trust="tool")
        s.set_trust(relayed.id, "external")  # a later trust change is what counts
        ids["relayed"] = relayed.id
        doc = s.export()
    with Store(tmp_path / "imported.db") as t:
        t.import_(doc)
    return db, ids


def test_an_untouched_store_and_its_import_pass(tmp_path: Path) -> None:
    db, _ids = _store(tmp_path)
    for path in (db, tmp_path / "imported.db"):
        with Store(path) as s:
            check = s.verify_content()
        assert check.valid and check.checked == 3 and check.uncovered == []
        r = _cli(path, "--json", "verify", "--deep")
        assert r.returncode == 0 and json.loads(r.stdout)["deep"]["valid"] is True


@pytest.mark.parametrize("which,sql,field", [
    ("plain", "UPDATE episodes SET content='the gate code is 9999' WHERE id=?", "content"),
    ("plain", "UPDATE episodes SET type='decision' WHERE id=?", "type"),
    ("relayed", "UPDATE episodes SET trust='operator' WHERE id=?", "trust"),
    ("user", "UPDATE episodes SET ns_owner='[\"default\",\"bob\",\"default\"]' WHERE id=?",
     "namespace"),
    ("plain", "UPDATE episodes SET ns_owner='[\"default\",\"bob\",\"default\"]' WHERE id=?",
     "namespace"),
])
@pytest.mark.parametrize("target", ["memory.db", "imported.db"])
def test_a_row_edited_under_the_chain_is_found(tmp_path: Path, which: str, sql: str,
                                                field: str, target: str) -> None:
    _db, ids = _store(tmp_path)
    db = tmp_path / target
    conn = sqlite3.connect(db)
    conn.execute(sql, (ids[which],))
    conn.commit()
    conn.close()
    assert _cli(db, "verify").returncode == 0  # the chain itself is intact
    r = _cli(db, "verify", "--deep")
    assert r.returncode == 1 and f"episode {ids[which]}, its {field}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    with Store(db) as s:
        check = s.verify_content()
    assert check.mismatches == [{"episode_id": ids[which], "field": field}]
