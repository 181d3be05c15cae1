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
    assert _found(db, f"episode {ids[which]}, its {field}") == [
        {"episode_id": ids[which], "field": field}]


def _found(db: Path, said: str) -> list[dict[str, str]]:
    """The chain verifies, ``verify --deep`` exits 1 saying ``said`` (no traceback);
    returns the deep check's mismatches."""
    assert _cli(db, "verify").returncode == 0  # the chain itself is intact
    r = _cli(db, "verify", "--deep")
    assert r.returncode == 1 and said in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    with Store(db) as s:
        return s.verify_content().mismatches


# ---------------------------------------------------------------- what was removed
# (issue 52 item 6): a row, a link or a state key removed with SQL, with no deletion,
# prune, erase, unsupersede, state-key entry or tombstone in the audit for it

def _rich(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A store with a plain episode, an explicit link made at record time and one made
    later, and a state-key slot of three holders; and its import."""
    db = tmp_path / "memory.db"
    with Store(db) as s:
        ids = {"plain": s.record("the gate code is 4411", "observation").id}
        ids["old"] = s.record("the deploy window is Tuesday", "decision").id
        ids["new"] = s.record("the deploy window is Thursday", "decision",
                              supersedes=ids["old"]).id
        ids["a"] = s.record("first draft of the plan", "observation").id
        ids["b"] = s.record("second draft of the plan", "observation").id
        s.supersede(old_id=ids["a"], new_id=ids["b"])
        for i, name in enumerate(("k1", "k2", "k3")):
            ids[name] = s.record(f"the on-call engineer is person {i}", "observation",
                                 state_key="on-call").id
        doc = s.export()
    with Store(tmp_path / "imported.db") as t:
        t.import_(doc)
    return db, ids


def _sql(db: Path, sql: str, *args: str) -> None:
    conn = sqlite3.connect(db)
    assert conn.execute(sql, args).rowcount >= 1  # the tampering really removed something
    conn.commit()
    conn.close()


@pytest.mark.parametrize("target", ["memory.db", "imported.db"])
def test_a_rich_store_and_its_import_pass(tmp_path: Path, target: str) -> None:
    _rich(tmp_path)
    with Store(tmp_path / target) as s:
        check = s.verify_content()
    assert check.valid and check.mismatches == [] and check.checked == 8, check


@pytest.mark.parametrize("target", ["memory.db", "imported.db"])
@pytest.mark.parametrize("which", ["plain", "old", "k2"])
def test_a_row_deleted_with_sql_is_found_by_its_id(tmp_path: Path, target: str,
                                                   which: str) -> None:
    _db, ids = _rich(tmp_path)
    db = tmp_path / target
    _sql(db, "DELETE FROM episodes WHERE id=?", ids[which])
    assert {"episode_id": ids[which], "field": "row"} in _found(
        db, f"episode {ids[which]}, its row")
    r = _cli(db, "--json", "verify", "--deep")
    assert r.returncode == 1
    assert {"episode_id": ids[which], "field": "row"} in json.loads(r.stdout)["deep"][
        "mismatches"]


@pytest.mark.parametrize("target", ["memory.db", "imported.db"])
@pytest.mark.parametrize("old,new", [("old", "new"), ("a", "b"), ("k1", "k3"),
                                     ("k2", "k3")])
def test_a_link_deleted_with_sql_is_found(tmp_path: Path, target: str, old: str,
                                          new: str) -> None:
    _db, ids = _rich(tmp_path)
    db = tmp_path / target
    _sql(db, "DELETE FROM supersessions WHERE old_id=? AND new_id=?", ids[old], ids[new])
    assert _found(db, f"episode {ids[old]}, its link to {ids[new]}") == [
        {"episode_id": ids[old], "field": "link", "to": ids[new]}]


@pytest.mark.parametrize("target", ["memory.db", "imported.db"])
@pytest.mark.parametrize("which", ["k1", "k3"])
def test_a_state_key_removed_with_sql_is_found(tmp_path: Path, target: str,
                                               which: str) -> None:
    _db, ids = _rich(tmp_path)
    db = tmp_path / target
    _sql(db, "UPDATE episodes SET state_key=NULL WHERE id=?", ids[which])
    assert {"episode_id": ids[which], "field": "state_key"} in _found(
        db, f"episode {ids[which]}, its state_key")


def test_what_the_library_removes_is_accounted_for(tmp_path: Path) -> None:
    """Deletion, erase, prune, unsupersede and the state-key calls leave the entries
    and tombstones that explain every row, link and key that went."""
    db, ids = _rich(tmp_path)
    with Store(db) as s:
        s.unsupersede(old_id=ids["a"], new_id=ids["b"])
        s.clear_state_key(ids["k1"])
        s.set_state_key(ids["plain"], "gate")
        s.delete(ids["k3"])  # the slot's newest holder: k2 holds it now
        s.delete(ids["new"])  # one end of an explicit link
        s.erase([ids["plain"]])  # keyed "gate" just before
        alice = s.scoped({"user": "alice"})
        alice.record("alice keeps a note", "observation", timestamp="2020-01-01T00:00:00Z")
        s.erase_namespace({"user": "alice"})
        s.record("an old note", "observation", timestamp="2020-01-01T00:00:00Z")
        assert s.prune(30) == 1  # the old note only
        check = s.verify_content()
        assert check.checked == 5  # old, a, b, k1 (out of its slot), k2 (its holder)
    assert check.valid and check.mismatches == [], check.mismatches
    r = _cli(db, "verify", "--deep")
    assert r.returncode == 0, r.stderr
