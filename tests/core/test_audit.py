"""The hash-chained audit trail: atomic with each mutation, tamper-evident, multi-process safe."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from anneal_memory import AuditTrail, Store
from anneal_memory.testing import backend_of


def _lines(db: Path) -> list[str]:
    return db.with_name(db.stem + ".audit.jsonl").read_text().splitlines()


def _write_lines(db: Path, lines: list[str]) -> None:
    db.with_name(db.stem + ".audit.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture
def trail(db: Path) -> Path:
    with Store(db) as s:
        for i in range(10):
            s.record(f"episode {i} about the audit trail", "observation")
    return db


def test_every_mutation_has_an_entry_without_content(trail: Path) -> None:
    entries = [json.loads(x) for x in _lines(trail)]
    assert [e["seq"] for e in entries] == list(range(1, 11))
    assert all(e["event"] == "record" for e in entries)
    assert all(set(e) == {"seq", "ts", "actor", "event", "data", "prev_hash", "hash"} for e in entries)
    assert "audit trail" not in trail.with_name("memory.audit.jsonl").read_text()
    r = AuditTrail.verify(trail)
    assert r.valid and r.total_entries == 10 and r.chain_break_at is None


def test_edit_one_line_breaks_at_that_entry(trail: Path) -> None:
    lines = _lines(trail)
    e = json.loads(lines[4])
    e["data"]["type"] = "decision"
    lines[4] = json.dumps(e, sort_keys=True)
    _write_lines(trail, lines)
    r = AuditTrail.verify(trail)
    assert not r.valid and r.chain_break_at == 5 and r.chain_break_file == "memory.audit.jsonl"


def test_delete_one_line_breaks_at_that_entry(trail: Path) -> None:
    lines = _lines(trail)
    del lines[6]
    _write_lines(trail, lines)
    r = AuditTrail.verify(trail)
    assert not r.valid and r.chain_break_at == 7


def test_reorder_two_lines_breaks_at_the_first(trail: Path) -> None:
    lines = _lines(trail)
    lines[2], lines[3] = lines[3], lines[2]
    _write_lines(trail, lines)
    r = AuditTrail.verify(trail)
    assert not r.valid and r.chain_break_at == 3


def test_rehashed_forgery_is_caught_by_the_database_copy(trail: Path) -> None:
    from anneal_memory.audit import entry_hash

    entries = [json.loads(x) for x in _lines(trail)]
    prev = "0" * 64
    for e in entries:  # rewrite the whole chain consistently
        e["actor"] = "mallory"
        e["prev_hash"] = prev
        e["hash"] = entry_hash(e)
        prev = e["hash"]
    _write_lines(trail, [json.dumps(e, sort_keys=True) for e in entries])
    r = AuditTrail.verify(trail)
    assert not r.valid and r.chain_break_at == 1


def test_callback_fires_after_commit_and_cannot_fail_the_write(db: Path) -> None:
    seen: list[dict] = []

    def cb(entry: dict) -> None:
        seen.append(entry)
        raise RuntimeError("sink down")

    with Store(db, on_audit_event=cb) as s:
        ep = s.record("callback test", "observation")
        assert s.get(ep.id) is not None
    assert len(seen) == 1 and seen[0]["event"] == "record" and seen[0]["data"]["episode_id"] == ep.id


def test_audit_disabled_writes_no_entries(db: Path) -> None:
    with Store(db, audit=False) as s:
        s.record("quiet", "observation")
        assert s.status().audit_entry_count == 0 and not s.status().audit_enabled


def test_mirror_failure_is_counted_and_caught_up(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(db) as s:
        s.record("one", "observation")
        from anneal_memory.audit import AuditTrail as AT

        real = AT.mirror
        monkeypatch.setattr(AT, "mirror", lambda self: (_ for _ in ()).throw(OSError("disk full")))
        s.record("two", "observation")
        assert s.audit_trail.flush() is False
        assert s.status().audit_write_failures == 1
        monkeypatch.setattr(AT, "mirror", real)
        s.record("three", "observation")
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 3
    with Store(db) as s:
        assert s.status().audit_write_failures == 1  # lifetime-scoped, durable


def test_weekly_rotation_with_gzip_and_manifest(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anneal_memory.audit as audit_mod

    days = iter(["2026-11-02T10:00:00.000000+00:00", "2026-11-03T10:00:00.000000+00:00",
                 "2026-11-10T10:00:00.000000+00:00", "2026-11-18T10:00:00.000000+00:00",
                 "2026-11-18T11:00:00.000000+00:00"])
    monkeypatch.setattr(audit_mod, "now_iso", lambda: next(days))
    with Store(db) as s:
        for i in range(5):
            s.record(f"week entry {i}", "observation")
    manifest = json.loads(db.with_name("memory.audit.manifest.json").read_text())
    assert [f["week"] for f in manifest["files"]] == ["2026-W45", "2026-W46"]
    sealed = db.with_name("memory.audit.2026-W45.jsonl.gz")
    assert len(gzip.decompress(sealed.read_bytes()).decode().splitlines()) == 2
    assert len(_lines(db)) == 2
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 5 and r.files_verified == 3
    # tamper inside a sealed week
    lines = gzip.decompress(sealed.read_bytes()).decode().splitlines()
    e = json.loads(lines[1])
    e["actor"] = "x"
    lines[1] = json.dumps(e, sort_keys=True)
    sealed.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    r = AuditTrail.verify(db)
    assert not r.valid and r.chain_break_at == 2 and r.chain_break_file == sealed.name


WRITER = textwrap.dedent("""
    import sys
    from anneal_memory import Store
    db, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with Store(db) as s:
        for i in range(n):
            s.record(f"{tag} record {i}", "observation")
""")


@pytest.mark.slow
def test_six_processes_one_valid_chain(db: Path) -> None:
    Store(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), "250", f"p{i}"])
             for i in range(6)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 6
    with Store(db) as s:
        assert s.status().total_episodes == 1500
        assert s.status().audit_entry_count == 1500
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 1500
    # every entry once in the files (the active file and the parts sealed at SEAL_BYTES)
    assert sorted(e["seq"] for _f, e in AuditTrail.iter_entries(db)) == list(range(1, 1501))


ACKER = textwrap.dedent("""
    import sys
    from anneal_memory import Store
    with Store(sys.argv[1]) as s:
        for i in range(100000):
            ep = s.record(f"crash test record {i}", "observation")
            print(ep.id, flush=True)
""")


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_episode(db: Path) -> None:
    Store(db).close()
    p = subprocess.Popen([sys.executable, "-c", ACKER, str(db)], stdout=subprocess.PIPE, text=True)
    acked: list[str] = []
    deadline = time.time() + 60
    while len(acked) < 150 and time.time() < deadline:
        line = p.stdout.readline()  # type: ignore[union-attr]
        if line:
            acked.append(line.strip())
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    with Store(db) as s:
        assert backend_of(s).integrity_check() == "ok"
        present = s.get_many(acked)
        assert set(acked) <= set(present)
    r = AuditTrail.verify(db)
    assert r.valid


OPENER = textwrap.dedent("""
    import sys, time
    from anneal_memory import Store
    start = float(sys.argv[3])
    while time.time() < start:
        pass
    with Store(sys.argv[1]) as s:
        s.record("opened " + sys.argv[2], "observation")
""")


@pytest.mark.slow
def test_many_processes_creating_one_fresh_store(db: Path) -> None:
    for round_ in range(5):
        target = db.with_name(f"fresh{round_}.db")
        start = str(time.time() + 1.5)
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(target), str(i), start],
                                  stderr=subprocess.PIPE, text=True) for i in range(6)]
        errs = [p.communicate(timeout=120)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 6, errs
        with Store(target) as s:
            assert s.status().total_episodes == 6
        assert AuditTrail.verify(target).valid


def test_repair_leaves_a_good_trail_alone_and_rebuilds_a_broken_one(trail: Path) -> None:
    with Store(trail) as s:
        res = AuditTrail.repair(trail, backend_of(s))
        assert res["set_aside"] == [] and res["rebuilt_entries"] == 0
        shuffled = _lines(trail)
        shuffled[3], shuffled[4] = shuffled[4], shuffled[3]
        _write_lines(trail, shuffled)
        assert not AuditTrail.verify(trail).valid
        res = AuditTrail.repair(trail, backend_of(s))
        # every line is still on disk: each is found by the hash the database keeps
        assert res["rebuilt_entries"] == 10 and res["set_aside"] and res["lost_entries"] == []
    assert AuditTrail.verify(trail).valid
    assert any(p.name.startswith("memory.audit.jsonl.set-aside-") for p in trail.parent.iterdir())


def test_repair_names_the_entry_whose_text_is_gone(trail: Path) -> None:
    lines = _lines(trail)
    del lines[3]  # entry 4: mirrored, so the database kept only its hash
    _write_lines(trail, lines)
    with Store(trail) as s:
        res = AuditTrail.repair(trail, backend_of(s))
    assert res["valid"] is False and res["lost_entries"] == [[4, 4]]
    assert res["rebuilt_entries"] == 9 and "entries 4 cannot be" in res["status"]
    r = AuditTrail.verify(trail)  # the gap stays visible, never passed over
    assert not r.valid and r.chain_break_at == 4 and "its text is in no copy" in r.reason
    assert [json.loads(x)["seq"] for x in _lines(trail)] == [1, 2, 3, 5, 6, 7, 8, 9, 10]
