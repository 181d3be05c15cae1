"""Stores, sidecars and exports the real 1.0.2 wrote, opened and imported by us.

``write_legacy`` runs under 1.0.2 once per session. ``read_legacy`` then runs on two copies
of what it wrote: under 1.0.2 (the reference: 1.0.2 reading its own files) and under us,
and the two are compared field by field like every other scenario. The tests after it
check what only we do: the backup, the single transaction, the continued audit chain,
tampering with the old part of it, and ``anneal-memory migrate store``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from compare import compare, covered, report
from conftest import run_driver
from deviations import DEVIATIONS

from anneal_memory import AuditTrail, CrystalStore, SporeStore, Store, StoreError
from anneal_memory.legacy import upgrade as legacy
from anneal_memory.storage.roles import Meta
from anneal_memory.testing import backend_of


def test_read_legacy_matches_1_0_2(legacy_dir: Path, pythons: dict[str, str],
                                   tmp_path: Path) -> None:
    got: dict[str, Any] = {}
    for side in ("peer", "ours"):
        work = tmp_path / side
        shutil.copytree(legacy_dir, work)
        got[side] = run_driver(pythons[side], "read_legacy", work)
    diffs = compare(got["peer"], got["ours"])
    allowed = DEVIATIONS.get("read_legacy", {})
    unexplained = [d for d in diffs if covered(d[0], allowed) is None]
    assert not unexplained, "reading 1.0.2's data differs:\n" + report(unexplained)
    stale = [p for p in allowed if not any(covered(d[0], {p: ""}) for d in diffs)]
    assert not stale, f"listed deviations that no longer differ: {stale}"
    # the reference saw real data: a vacuous comparison would pass too
    assert got["peer"]["status.total_episodes"] == 8 and got["ours"]["verify.valid"] is True


def _tables(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def test_upgrade_keeps_a_backup_and_says_what_it_did(legacy_copy: Path) -> None:
    db = legacy_copy / "legacy.db"
    assert "metadata" in _tables(db) and "meta" not in _tables(db)
    with Store(db) as s:
        report_now = s.legacy_upgrade
        assert report_now is not None and report_now["from_version"] == "1.0.2"
        assert report_now["episodes"] == 8 and report_now["supersessions"] == 1
        assert report_now["state_keys"] == 1 and report_now["trust_classes"] == 1
        assert report_now["wraps"] == 1 and report_now["audit"]["valid"] is True
        assert legacy.upgrade_report(Meta(backend_of(s))) == report_now
    backup = legacy.backup_path(db)
    assert backup.exists() and "metadata" in _tables(backup)  # the 1.0.2 store, untouched
    conn = sqlite3.connect(backup)
    try:
        assert conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 8
    finally:
        conn.close()
    for side in ("legacy.crystal.json", "legacy.spores.json", "legacy.continuity.md"):
        # the sidecars are backed up too (their next write is in our layout)
        assert (legacy_copy / (side + legacy.BACKUP_SUFFIX)).read_bytes() == \
            (legacy_copy / side).read_bytes()
    assert "meta" in _tables(db) and not {"metadata", "episode_trust"} & _tables(db)
    with Store(db) as s:  # a second open finds nothing to do
        assert s.legacy_upgrade is None and s.status().total_episodes == 8


def test_a_failed_upgrade_changes_nothing(legacy_copy: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    db = legacy_copy / "legacy.db"
    before = _dump(db)

    def boom(*_a: Any, **_k: Any) -> int:
        raise RuntimeError("power cut half way through the copy")

    monkeypatch.setattr(legacy, "_copy_probes", boom)
    with pytest.raises(RuntimeError):
        Store(db)
    assert _dump(db) == before  # one transaction: all of it or none
    monkeypatch.undo()
    with Store(db) as s:  # and the next open upgrades it whole
        assert s.status().total_episodes == 8


def test_the_backend_without_the_upgrade_refuses_a_1_0_2_store(legacy_copy: Path) -> None:
    # the Store hands the backend the upgrade (it sits above storage); a backend opened
    # without it refuses the 1.0.2 database instead of writing our schema into it
    from anneal_memory.storage.sqlite import SQLiteBackend

    db = legacy_copy / "legacy.db"
    before = _dump(db)
    with pytest.raises(StoreError, match="1.0.2"):
        SQLiteBackend(db)
    assert _dump(db) == before


def _dump(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_audit_chain_continues_across_the_upgrade(legacy_copy: Path) -> None:
    db = legacy_copy / "legacy.db"
    old_lines = (legacy_copy / "legacy.audit.jsonl").read_text("utf-8").splitlines()
    with Store(db) as s:
        s.record("First episode written by 2.0", "observation")
    res = AuditTrail.verify(db)
    assert res.valid, res
    assert res.total_entries == len(old_lines) + 2  # 1.0.2's, the upgrade's, the new record
    with Store(db) as s:
        assert s.status().audit_entry_count == res.total_entries
    sealed = legacy_copy / "legacy.audit.1.0.2.jsonl"
    assert sealed.read_text("utf-8").splitlines() == old_lines  # kept byte for byte
    events = [e["event"] for _n, e in AuditTrail.iter_entries(db)]
    assert events[:len(old_lines)] == [json.loads(x)["event"] for x in old_lines]
    assert events[len(old_lines):] == ["store_upgraded", "record"]


def test_tampering_with_the_1_0_2_part_is_caught(legacy_copy: Path) -> None:
    db = legacy_copy / "legacy.db"
    Store(db).close()
    sealed = legacy_copy / "legacy.audit.1.0.2.jsonl"
    lines = sealed.read_text("utf-8").splitlines()
    entry = json.loads(lines[2])
    entry["actor"] = "mallory"
    lines[2] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    sealed.write_text("\n".join(lines) + "\n", "utf-8")
    res = AuditTrail.verify(db)
    assert not res.valid and res.chain_break_at == 3 and res.chain_break_file == sealed.name


@pytest.mark.parametrize("damage", ["manifest", "active"])
def test_repair_of_an_upgraded_store_keeps_the_1_0_2_part_and_rebuilds_ours(
        legacy_copy: Path, damage: str) -> None:
    db = legacy_copy / "legacy.db"
    with Store(db) as s:
        for i in range(3):
            s.record(f"after the upgrade {i}", "observation")
    sealed = legacy_copy / "legacy.audit.1.0.2.jsonl"
    old = sealed.read_bytes()
    ours = [e for _n, e in AuditTrail.iter_entries(db) if "format" not in e]
    if damage == "manifest":  # the record of which files are 1.0.2's is gone
        (legacy_copy / "legacy.audit.manifest.json").write_text("{broken", "utf-8")
    else:  # our own entries out of order in the active file
        active = legacy_copy / "legacy.audit.jsonl"
        lines = active.read_text("utf-8").splitlines()
        active.write_text("\n".join(reversed(lines)) + "\n", "utf-8")
    assert not AuditTrail.verify(db).valid
    with Store(db) as s:
        res = AuditTrail.repair(db, backend_of(s))
    assert res["valid"], res
    assert res["lost_entries"] == [] and res["rebuilt_entries"] == len(ours) == 4
    assert sealed.read_bytes() == old  # 1.0.2's part is untouched, still first in the chain
    after = AuditTrail.verify(db)
    assert after.valid and after.files[0] == sealed.name
    assert [e for _n, e in AuditTrail.iter_entries(db) if "format" not in e] == ours


def test_sidecars_are_read_in_1_0_2_layout_and_written_back_in_ours(legacy_copy: Path) -> None:
    cs = CrystalStore(legacy_copy / "legacy.crystal.json")
    c = cs.get("pool-bottleneck")
    assert c is not None and c["explanation"].startswith("Connection pool") and c.level == 3
    cs.touch("pool-bottleneck", today="2099-01-01")  # a change: written in our layout
    assert "crystals" in json.loads((legacy_copy / "legacy.crystal.json").read_text())
    ss = SporeStore(legacy_copy / "legacy.spores.json")
    assert [s["id"] for s in ss.list_open()] == ["spore-001"]
    assert ss.add(type="task", text="next one")["id"] == "spore-002"  # the counter continues


def test_read_only_open_of_a_1_0_2_store_says_how_to_upgrade(legacy_copy: Path) -> None:
    with pytest.raises(StoreError, match="anneal-memory 1.0.2.*migrate"):
        Store(legacy_copy / "legacy.db", read_only=True)


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNEAL_")}
    return subprocess.run([sys.executable, "-m", "anneal_memory", *argv], capture_output=True,
                          text=True, cwd=str(cwd), env=env, timeout=120)


def test_migrate_store_reports_what_it_upgraded(legacy_copy: Path) -> None:
    db = str(legacy_copy / "legacy.db")
    first = _cli("--db", db, "--json", "migrate", "store", cwd=legacy_copy)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["upgraded_now"] is True and data["store_upgrade"]["episodes"] == 8
    again = _cli("--db", db, "migrate", "store", cwd=legacy_copy)
    assert again.returncode == 0 and "was upgraded from anneal-memory 1.0.2" in again.stdout
    assert "backup: legacy.db.1.0.2.bak" in again.stdout
    fresh = legacy_copy / "new.db"
    Store(fresh).close()
    none = _cli("--db", str(fresh), "migrate", "store", cwd=legacy_copy)
    assert none.returncode == 0 and "nothing to upgrade" in none.stdout


def test_a_1_0_2_export_imports_with_its_trust_and_links(legacy_dir: Path, tmp_path: Path
                                                          ) -> None:
    doc = json.loads((legacy_dir / "legacy.json").read_text("utf-8"))
    assert doc["version"] == "1.0.2"  # the file that made 0.1 stop with an internal error
    ids = json.loads((legacy_dir / "ids.json").read_text("utf-8"))
    with Store(tmp_path / "m.db", trust_ceiling="operator") as s:  # a restore
        res = s.import_(doc)
        assert res["imported"] == 8 and res["from_version"] == "1.0.2"
        assert res["state"]["restored"] is True and s.load_continuity() == doc["continuity"]
        assert s.effective_trust_map([ids["tool"]]) == {ids["tool"]: "tool"}
        assert ids["old"] not in {e.id for e in s.recall().episodes}  # still replaced
        assert s.status().episodes_since_wrap == 1  # only the one recorded after the wrap
        again = s.import_(doc)
        assert again["imported"] == 0 and len(again["skipped_existing"]) == 8
    # not restored (the default ceiling): no continuity holds them, so all wait for a wrap
    with Store(tmp_path / "n.db") as s:
        res = s.import_(doc)
        assert res["state"]["restored"] is False and s.load_continuity() is None
        assert s.status().episodes_since_wrap == 8


def test_a_gzipped_sealed_week_of_1_0_2_is_walked_too(legacy_copy: Path) -> None:
    """1.0.2 seals older weeks as gzip files listed in its manifest: they join the chain."""
    active = legacy_copy / "legacy.audit.jsonl"
    lines = active.read_text("utf-8").splitlines()
    head, tail = lines[:5], lines[5:]
    week = legacy_copy / "legacy.audit.2026-W01.jsonl.gz"
    week.write_bytes(gzip.compress(("\n".join(head) + "\n").encode("utf-8")))
    active.write_text("\n".join(tail) + "\n", "utf-8")
    manifest = json.loads((legacy_copy / "legacy.audit.manifest.json").read_text("utf-8"))
    manifest["files"] = [{"file": week.name, "entries": len(head)}]
    (legacy_copy / "legacy.audit.manifest.json").write_text(json.dumps(manifest), "utf-8")
    with Store(legacy_copy / "legacy.db") as s:
        assert s.legacy_upgrade["audit"]["entries"] == len(lines)
        s.record("after", "observation")
    res = AuditTrail.verify(legacy_copy / "legacy.db")
    assert res.valid and res.total_entries == len(lines) + 2, res


_OPEN = ("import sys, time\nfrom anneal_memory import Store\n"
         "while time.time() < float(sys.argv[2]):\n    pass\n"
         "s = Store(sys.argv[1]); print(s.status().total_episodes, "
         "s.legacy_upgrade is not None); s.close()\n")


def test_processes_opening_a_1_0_2_store_at_once_upgrade_it_once(legacy_copy: Path) -> None:
    import time

    start = str(time.time() + 1.0)
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN, str(legacy_copy / "legacy.db"),
                               start], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-800:] for o in outs]
    lines = [o[0].split() for o in outs]
    assert all(x[0] == "8" for x in lines), lines  # every process sees every episode
    assert sum(x[1] == "True" for x in lines) == 1, lines  # and one of them upgraded it
    res = AuditTrail.verify(legacy_copy / "legacy.db")
    assert res.valid and res.total_entries == 14, res  # 13 of 1.0.2's, one upgrade entry


def _digests(folder: Path) -> dict[str, str]:
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.is_file()}


def test_verify_of_a_1_0_2_store_never_opened_here_is_valid_and_writes_nothing(
        legacy_copy: Path) -> None:
    """1.0.2 users run 'anneal-memory verify' on their store before anything else opens
    it: the chain (1.0.2's entries) verifies, and not a byte of their files changes."""
    db = legacy_copy / "legacy.db"
    before = _digests(legacy_copy)
    res = AuditTrail.verify(db)
    assert res.valid, res
    r = _cli("--db", str(db), "verify", cwd=legacy_copy)
    assert r.returncode == 0 and "Audit chain valid" in r.stdout, r.stderr
    assert _digests(legacy_copy) == before
    # a tampered 1.0.2 line is still caught that way
    trail = legacy_copy / "legacy.audit.jsonl"
    lines = trail.read_text("utf-8").splitlines()
    entry = json.loads(lines[1])
    entry["actor"] = "mallory"
    lines[1] = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    trail.write_text("\n".join(lines) + "\n", "utf-8")
    assert not AuditTrail.verify(db).valid


def test_verify_deep_on_an_upgraded_1_0_2_store(legacy_copy: Path) -> None:
    db = legacy_copy / "legacy.db"
    with Store(db) as s:
        new = s.record("written after the upgrade", "observation")
        check = s.verify_content()
    assert check.valid and new.id not in check.uncovered and check.uncovered
    r = _cli("--db", str(db), "verify", "--deep", cwd=legacy_copy)
    assert r.returncode == 0 and "have no per-episode entry" in r.stdout, r.stderr


def test_deep_verify_of_an_upgraded_slot_sees_what_sql_removes(pythons: dict[str, str],
                                                             tmp_path: Path) -> None:
    """A 1.0.2 store's slot and link come through the upgrade whole (the deep check finds
    nothing to report), and a slot link or row deleted with SQL afterwards is found."""
    work = tmp_path / "slot"
    run_driver(pythons["peer"], "write_legacy_slot", work)
    ids = json.loads((work / "slot.json").read_text())
    db = work / "slot.db"
    with Store(db) as s:
        newest = s.record("I live in Denver now", "observation", state_key="user.city").id
        check = s.verify_content()
    assert check.valid and check.mismatches == [] and len(check.uncovered) == 5
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM supersessions WHERE old_id=?", (ids["slot"][0],))
    conn.execute("DELETE FROM episodes WHERE id=?", (newest,))
    conn.commit()
    conn.close()
    with Store(db) as s:
        found = s.verify_content().mismatches
    # the row recorded after the upgrade is missing; the slot's newest holder is now
    # Boise, so every older holder (Seattle, Portland) must link to it: neither does
    assert {"episode_id": newest, "field": "row"} in found
    assert {"episode_id": ids["slot"][0], "field": "link", "to": ids["slot"][2]} in found
