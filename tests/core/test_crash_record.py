"""kill -9 of a writer in the middle of a stream of durable records.

An acknowledged record is one whose ``record()`` returned: it is committed to the
database, with its audit entry. The audit files are a mirror written behind the commits
(in batches, see ``AuditTrail.after_commit``), so a kill can land anywhere in a mirror:
between the file's append and the note of how far it reaches, inside a seal, between the
compaction and the next append. Whatever it hits, after the kill

- every acknowledged episode is in the store, with its ``record`` entry in the chain;
- ``verify`` passes on the files and database as the kill left them, and again after a
  Store has opened them (which mirrors what the files lacked).

The child mirrors and seals often (small ``MIRROR_EVERY`` and ``SEAL_BYTES``), so a
stream of a few hundred records crosses many mirrors and seals, and the point-kill tests
stop it at each step of a mirror on purpose.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from anneal_memory import AuditTrail, Store

WRITER = textwrap.dedent("""
    import os, sys, threading
    from anneal_memory import Store
    from anneal_memory.audit import AuditTrail
    db, threads, point = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    AuditTrail.MIRROR_EVERY = 7          # a mirror every few records...
    AuditTrail.SEAL_BYTES = 3000         # ...and a seal every few mirrors
    AuditTrail.MIRROR_SECONDS = 0.05

    def die_before(obj, name, after=0):
        orig, seen = getattr(obj, name), [0]
        def wrapped(*a, **k):
            seen[0] += 1
            if seen[0] > after:
                os._exit(9)
            return orig(*a, **k)
        setattr(obj, name, wrapped)

    def die_after(obj, name, after=0):
        orig, seen = getattr(obj, name), [0]
        def wrapped(*a, **k):
            out = orig(*a, **k)
            seen[0] += 1
            if seen[0] > after:
                os._exit(9)
            return out
        setattr(obj, name, wrapped)

    if point == "file-appended":     # the files hold the entries; the database not told
        die_after(AuditTrail, "_write_active_append", after=3)
    elif point == "before-note":     # files written and fsynced, compaction not done
        die_before(AuditTrail, "_record_mirrored", after=3)
    elif point == "noted":           # compacted: the rows are hashes only now
        die_after(AuditTrail, "_record_mirrored", after=3)
    elif point == "mid-seal":        # the sealed part written, the manifest not yet
        import anneal_memory.audit as audit_mod
        real = audit_mod.atomic_write_json
        def json_then_die(*a, **k):
            os._exit(9)
        orig_rotate = AuditTrail._rotate
        def rotate(self, manifest):
            audit_mod.atomic_write_json = json_then_die
            orig_rotate(self, manifest)
        AuditTrail._rotate = rotate
    elif point == "sealed":          # the manifest lists the part; the active file not emptied
        import anneal_memory.audit as audit_mod
        real = audit_mod.atomic_write_bytes
        calls = [0]
        def bytes_then_die(path, data, *a, **k):
            if str(path).endswith(".audit.jsonl"):
                os._exit(9)
            return real(path, data, *a, **k)
        audit_mod.atomic_write_bytes = bytes_then_die

    s = Store(db)
    lock = threading.Lock()

    def writer(t):
        for n in range(100_000):
            e = s.record(f"writer {t} episode {n} about the lake and the hike", "observation")
            with lock:
                print(e.id, flush=True)   # acknowledged: record() returned

    ts = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
""")


def _start(db: Path, threads: int, point: str = "none") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(threads), point],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _acks_until(proc: subprocess.Popen[str], most: int, timeout: float = 120.0) -> list[str]:
    """Read acknowledged ids until ``most`` (then kill -9) or the writer's own death."""
    acked: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    for line in proc.stdout:
        acked.append(line.strip())
        if len(acked) >= most or time.monotonic() > deadline:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    return acked


def _check_after_kill(db: Path, acked: list[str]) -> None:
    assert acked, "the writer acknowledged nothing before it died"
    # verify on the files and the database exactly as the kill left them
    as_left = AuditTrail.verify(db)
    assert as_left.valid, (as_left.reason, as_left.chain_break_at, as_left.chain_break_file)
    recorded = {e["data"].get("episode_id") for _name, e in AuditTrail.iter_entries(db)
                if e["event"] == "record"}
    with Store(db) as s:  # opening mirrors what the files lacked
        got = s.get_many(acked)
        missing = [i for i in acked if i not in got]
        assert not missing, f"{len(missing)} acknowledged episodes lost: {missing[:5]}"
    assert not [i for i in acked if i not in recorded], "an acknowledged record lost its entry"
    after = AuditTrail.verify(db)
    assert after.valid, (after.reason, after.chain_break_at, after.chain_break_file)
    assert after.unmirrored_entries == 0


@pytest.mark.slow
@pytest.mark.parametrize(("threads", "kill_after"), [(1, 5), (1, 150), (4, 60), (4, 400)])
def test_kill_9_mid_stream_loses_no_acknowledged_record(tmp_path: Path, threads: int,
                                                        kill_after: int) -> None:
    db = tmp_path / "m.db"
    acked = _acks_until(_start(db, threads), kill_after)
    assert len(acked) >= kill_after
    _check_after_kill(db, acked)


@pytest.mark.parametrize("point", ["file-appended", "before-note", "noted", "mid-seal",
                                   "sealed"])
def test_a_writer_killed_at_each_step_of_a_mirror_loses_nothing(tmp_path: Path,
                                                                 point: str) -> None:
    db = tmp_path / "m.db"
    proc = _start(db, 1, point)
    acked = _acks_until(proc, 100_000)
    assert proc.returncode == 9, proc.stderr.read() if proc.stderr else ""  # died there
    _check_after_kill(db, acked)
