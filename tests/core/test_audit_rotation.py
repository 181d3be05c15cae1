"""Weekly rotation under a clock that steps back, kills at every step of a rotation, and
audit-repair telling the truth about what it achieved."""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from anneal_memory import AuditTrail, Store, clock
from anneal_memory.cli import main
from anneal_memory.testing import backend_of

W45 = datetime(2026, 11, 3, 9, tzinfo=timezone.utc)  # ISO week 2026-W45
W46, W47, W48 = (W45 + timedelta(weeks=n) for n in (1, 2, 3))


def _sealed_bytes(db: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in db.parent.glob(db.stem + ".audit.*.jsonl.gz")}


def _record_at(db: Path, when: datetime, n: int = 2) -> None:
    with clock.frozen(when), Store(db) as s:
        for i in range(n):
            s.record(f"entry {i} at {when.date()}", "observation")


def test_a_clock_stepping_back_never_overwrites_a_sealed_week(db: Path) -> None:
    seen: dict[str, bytes] = {}
    for when in (W45, W46, W45, W47, W46, W45, W48, W47):
        _record_at(db, when)
        sealed = _sealed_bytes(db)
        for name, data in seen.items():
            assert sealed[name] == data, f"{name} was rewritten after the clock went to {when}"
        seen.update(sealed)
        r = AuditTrail.verify(db)
        assert r.valid, (when, r.reason)
    assert AuditTrail.verify(db).total_entries == 16
    manifest = json.loads(db.with_name("memory.audit.manifest.json").read_text())
    weeks = [f["week"] for f in manifest["files"]]
    assert weeks == sorted(weeks) and len(set(f["file"] for f in manifest["files"])) == len(weeks)
    with Store(db) as s:
        res = AuditTrail.repair(db, backend_of(s), force=True)
    assert res["valid"] and AuditTrail.verify(db).valid


def test_repair_force_reports_a_broken_database_copy_as_a_failure(db: Path, capsys) -> None:
    _record_at(db, W45, 5)
    with sqlite3.connect(db) as c:  # entry 3 is mirrored: the database keeps its hash
        assert c.execute("UPDATE audit_hashes SET hash=zeroblob(32) WHERE seq=3").rowcount == 1
    with Store(db) as s:
        res = AuditTrail.repair(db, backend_of(s), force=True)
    assert res["valid"] is False and "entry 3" in res["status"] and res["set_aside"]
    # no line on disk has the hash the database keeps for entry 3: named, never written
    assert res["lost_entries"] == [[3, 3]] and res["rebuilt_entries"] == 4
    code = main(["--db", str(db), "audit-repair", "--force"])
    err = capsys.readouterr().err
    assert code == 1 and "could not produce a trail that verifies" in err and "entries 3 " in err
    assert not AuditTrail.verify(db).valid


def test_repair_force_on_a_good_trail_says_so(db: Path, capsys) -> None:
    _record_at(db, W45, 3)
    assert main(["--db", str(db), "audit-repair", "--force"]) == 0
    assert "rebuilt from the database" in capsys.readouterr().out
    assert AuditTrail.verify(db).valid


# ---------------------------------------------------------------------- kill points
CHILD = textwrap.dedent("""
    import os, sys
    from datetime import datetime, timezone
    import anneal_memory.audit as audit
    from anneal_memory import Store, clock

    db, kill_at, torn = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "torn"
    calls = [0]

    def point(name, real):
        def wrapper(*a, **kw):
            calls[0] += 1
            if calls[0] == kill_at:
                if torn and name == "append" and a[1]:
                    with open(a[0].paths.active, "a") as fh:
                        fh.write(a[1][0][: len(a[1][0]) // 2])
                os._exit(9)
            return real(*a, **kw)
        return wrapper

    audit.atomic_write_bytes = point("bytes", audit.atomic_write_bytes)
    audit.atomic_write_json = point("json", audit.atomic_write_json)
    audit.AuditTrail._write_active_append = point("append", audit.AuditTrail._write_active_append)
    audit.AuditTrail._record_mirrored = point("mark", audit.AuditTrail._record_mirrored)
    audit.AuditTrail.MIRROR_SECONDS = 1e9
    with clock.frozen(datetime(2026, 11, 10, 9, tzinfo=timezone.utc)):
        s = Store(db)
        s.record("the entry that starts week 46", "observation")
        s.close()
    print("completed", calls[0])
""")


def _run_child(db: Path, kill_at: int, mode: str = "") -> str:
    p = subprocess.run([sys.executable, "-c", CHILD, str(db), str(kill_at), mode],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 9), p.stderr
    return p.stdout


@pytest.mark.parametrize("mode", ["", "torn"])
def test_a_kill_at_any_step_of_a_rotation_never_breaks_verify(tmp_path: Path, mode: str) -> None:
    steps = 0
    for kill_at in range(1, 20):
        db = tmp_path / f"k{kill_at}{mode}" / "memory.db"
        db.parent.mkdir()
        _record_at(db, W45, 3)
        out = _run_child(db, kill_at, mode)
        with sqlite3.connect(db) as c:  # in full until mirrored, then as hashes
            committed = c.execute("SELECT (SELECT COUNT(*) FROM audit_log) + "
                                  "(SELECT COUNT(*) FROM audit_hashes)").fetchone()[0]
        r = AuditTrail.verify(db)
        assert r.valid, (kill_at, mode, r.reason)
        assert r.total_entries == committed
        # the next writer finishes the job: everything mirrored, one copy of each week
        _record_at(db, W46, 1)
        r = AuditTrail.verify(db)
        assert r.valid and r.total_entries == committed + 1, (kill_at, r)
        assert r.unmirrored_entries == 0, (kill_at, r)
        lines = []
        for f in [*sorted(db.parent.glob("memory.audit.2026-W45*.jsonl.gz"))]:
            lines += gzip.decompress(f.read_bytes()).decode().splitlines()
        assert len({json.loads(x)["seq"] for x in lines}) >= 3
        if out.startswith("completed"):
            steps = kill_at - 1
            break
    assert steps >= 5  # sealed file, manifest, emptied active, append, mark at least


# ---------------------------------------------------------------------- verify while writing
BUSY_WRITER = textwrap.dedent("""
    import sys
    from datetime import datetime, timedelta, timezone
    import anneal_memory.audit as audit
    from anneal_memory import Store, clock

    audit.AuditTrail.MIRROR_SECONDS = 0.0  # mirror after every commit: maximum churn
    start = datetime(2026, 11, 2, 9, tzinfo=timezone.utc)
    n = [0]

    def now():
        return start + timedelta(hours=4 * n[0])  # a new ISO week every 42 records

    with clock.frozen(now), Store(sys.argv[1]) as s:
        for i in range(int(sys.argv[2])):
            n[0] = i
            s.record(f"busy record {i}", "observation")
""")


def test_verify_while_another_process_writes_and_rotates(db: Path) -> None:
    Store(db).close()
    writer = subprocess.Popen([sys.executable, "-c", BUSY_WRITER, str(db), "400"])
    results = []
    try:
        while writer.poll() is None:
            results.append(AuditTrail.verify(db))
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    bad = [r for r in results if not r.valid]
    assert results and bad == [], bad[:1]
    final = AuditTrail.verify(db)
    assert final.valid and final.total_entries == 400
    manifest = json.loads(db.with_name("memory.audit.manifest.json").read_text())
    assert len(manifest["files"]) >= 5


def test_a_rotation_while_verify_reads_the_sealed_files_is_followed(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer seals the active file between verify's manifest read and its read of the
    active file: one walk (no retry) follows the new part instead of reporting a cut."""
    import anneal_memory._audit_verify as av
    from anneal_memory import audit

    monkeypatch.setattr(av, "_RETRIES", 1)
    monkeypatch.setattr(audit.AuditTrail, "MIRROR_SECONDS", 0.0)
    _record_at(db, W45, 4)
    _record_at(db, W46, 3)  # W45 sealed, W46 in the active file
    active = db.with_name("memory.audit.jsonl")
    fired: list[str] = []

    def rotate_now(name: str, _count: int) -> None:
        if name == active.name and not fired:
            fired.append(name)
            _record_at(db, W47, 1)  # seals W46, appends W47's first entry

    r = AuditTrail.verify(db, progress=rotate_now)
    assert fired
    assert r.valid and r.total_entries == 8 and r.unmirrored_entries == 0, r
    assert any("W46" in f for f in r.files), r.files
