"""The audit trail on SQLite keeps each entry's text once: in full in the database until
mirrored, then in the JSONL files, the database keeping its seq and 32-byte hash.

What must hold: a changed file entry is named at that entry (its hash is not the one the
database keeps), however consistently the files were rewritten; a crash before or during
the mirror loses nothing; a store from before (full rows, spaced lines, 256-bit label
hashes) still verifies and is compacted on its next open; repair rebuilds every entry
any line on disk still holds and names exactly the ones it cannot.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import AuditTrail, Store, clock
from anneal_memory.audit import (
    GENESIS,
    LABEL_HEX,
    MIRRORED_SEQ_KEY,
    AuditPaths,
    entry_hash,
    same_label,
)
from anneal_memory.errors import AuditError
from anneal_memory.testing import backend_of

W45 = datetime(2026, 11, 3, 9, tzinfo=timezone.utc)  # ISO week 2026-W45


def _q(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as c:
        return c.execute(sql, params).fetchall()


def _full_rows(db: Path) -> int:
    return int(_q(db, "SELECT COUNT(*) FROM audit_log")[0][0])


def _kept_hashes(db: Path) -> dict[int, bytes]:
    return {int(s): bytes(h) for s, h in _q(db, "SELECT seq, hash FROM audit_hashes")}


def _lines(db: Path) -> list[str]:
    active = AuditPaths(db).active
    return [x for x in active.read_text().splitlines() if x.strip()] if active.exists() else []


def _file_entries(db: Path) -> list[dict[str, Any]]:
    return [e for _name, e in AuditTrail.iter_entries(db)]


def _record(db: Path, n: int, when: datetime = W45, **kw: Any) -> list[str]:
    with clock.frozen(when), Store(db, **kw) as s:
        return [s.record(f"compacted entry {i}", "observation").id for i in range(n)]


# ---------------------------------------------------------------------- the layout
def test_mirrored_entries_are_kept_in_the_database_as_their_hashes(db: Path) -> None:
    _record(db, 12)
    entries = _file_entries(db)
    assert [e["seq"] for e in entries] == list(range(1, 13))
    kept = _kept_hashes(db)
    # seq and the 32-byte hash of each entry, nothing else; no full row left over
    assert _full_rows(db) == 0
    assert kept == {e["seq"]: bytes.fromhex(entry_hash(e)) for e in entries}
    assert all(len(h) == 32 for h in kept.values())
    with Store(db) as s:
        assert s.status().audit_entry_count == 12
        # the backend still reads the whole chain in full (text from the files)
        assert s.audit_trail.entries() == [{k: e[k] for k in e} for e in entries]
        assert s.audit_trail.entries(after_seq=10) == entries[10:]
        assert AuditTrail.head(db).seq == 12 and s.audit_trail.tip()[1] == entries[-1]["hash"]
    # one compact JSON object per line, every field named by the API, its own hash too
    line = _lines(db)[0]
    assert ": " not in line and ", " not in line
    assert set(json.loads(line)) == {"seq", "ts", "actor", "event", "data", "prev_hash", "hash"}
    assert AuditTrail.verify(db).valid


def test_the_head_is_the_database_s_newest_entry_even_past_cut_files(db: Path) -> None:
    _record(db, 5)
    entries = _file_entries(db)
    head = AuditTrail.head(db)
    assert (head.seq, head.hash, head.ts) == (5, entries[-1]["hash"], entries[-1]["ts"])
    AuditPaths(db).active.write_text("".join(x + "\n" for x in _lines(db)[:3]))
    head = AuditTrail.head(db)  # the files end at 3; the database keeps 5's hash
    assert (head.seq, head.hash) == (5, entries[-1]["hash"])
    assert not AuditTrail.verify(db, anchor=head.to_dict()).valid


def test_entries_stay_in_full_until_the_files_hold_them(db: Path) -> None:
    with Store(db) as s:
        s.audit_trail.MIRROR_SECONDS = 1e9
        for i in range(3):
            s.record(f"not mirrored yet {i}", "observation")
        assert _full_rows(db) == 3 and _kept_hashes(db) == {}
        r = AuditTrail.verify(db)
        assert r.valid and r.unmirrored_entries == 3
        assert s.audit_trail.flush()
        assert _full_rows(db) == 0 and sorted(_kept_hashes(db)) == [1, 2, 3]
        assert _q(db, "SELECT value FROM meta WHERE key=?", (MIRRORED_SEQ_KEY,)) == [("3",)]


def test_labels_are_128_bit_hashes_and_old_full_length_ones_still_match(db: Path) -> None:
    with Store(db) as s:
        s.record("a labelled entry", "observation", source="laptop-7")
        h = s.audit_trail.hash_label("laptop-7")
        assert len(h) == LABEL_HEX == 32 and int(h, 16) >= 0
        assert s.audit_trail.entries()[-1]["data"]["source"] == h
        from anneal_memory.audit import content_hash

        old = content_hash(s.audit_trail.salt, "label\x00laptop-7")  # how entries had it
        assert len(old) == 64 and old.startswith(h)
        assert same_label(old, h) and same_label(h, h)
        assert same_label({"user": old, "n": 1}, {"user": h, "n": 1})
        assert not same_label(old, s.audit_trail.hash_label("laptop-8"))
        assert not same_label(old[:31], old[:31] + "0") and not same_label("agent", "agen")


# ---------------------------------------------------------------------- tamper
def _write_active(db: Path, entries: list[dict[str, Any]]) -> None:
    AuditPaths(db).active.write_text("".join(json.dumps(e, sort_keys=True) + "\n"
                                             for e in entries))


def test_a_compacted_entry_changed_in_its_file_is_named_at_that_entry(db: Path) -> None:
    _record(db, 10)
    assert _full_rows(db) == 0
    base = _file_entries(db)
    for rehash in (False, True):
        entries = [dict(e, data=dict(e["data"])) for e in base]
        entries[6]["data"]["type"] = "decision"
        if rehash:
            entries[6]["hash"] = entry_hash(entries[6])
        _write_active(db, entries)
        r = AuditTrail.verify(db)
        assert not r.valid and r.chain_break_at == 7, (rehash, r.reason)
        assert "differs between the file and the database" in (r.reason or "")
    _write_active(db, base)
    assert AuditTrail.verify(db).valid


def test_a_consistent_rewrite_of_the_files_is_caught_without_an_anchor(db: Path) -> None:
    _record(db, 10)
    entries = _file_entries(db)
    prev = entries[3]["hash"]
    for e in entries[4:]:  # from entry 5 on: edited, rehashed, relinked
        e["actor"], e["prev_hash"] = "mallory", prev
        e["hash"] = prev = entry_hash(e)
    _write_active(db, entries)
    r = AuditTrail.verify(db)
    assert not r.valid and r.chain_break_at == 5
    assert "rewritten with a new hash" in (r.reason or "")


# ---------------------------------------------------------------------- crash safety
CRASH = textwrap.dedent("""
    import os, sys
    import anneal_memory.audit as audit
    from anneal_memory import Store

    db, n, point = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if point == "compact":  # the files are written and fsynced; die before compacting
        real = audit.AuditTrail._record_mirrored
        def die(self, seq, compact=None):
            if compact:
                os._exit(9)
            return real(self, seq, compact)
        audit.AuditTrail._record_mirrored = die
    s = Store(db)
    s.audit_trail.MIRROR_SECONDS = 1e9
    for i in range(n):
        print(s.record(f"acknowledged {i}", "observation").id, flush=True)
    if point == "commit":  # committed, acknowledged, never mirrored
        os._exit(9)
    s.close()
""")


def _crash(db: Path, n: int, point: str) -> list[str]:
    Store(db).close()
    p = subprocess.run([sys.executable, "-c", CRASH, str(db), str(n), point],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 9, p.stderr
    return p.stdout.split()


def test_a_crash_between_commit_and_mirror_loses_nothing(db: Path) -> None:
    acked = _crash(db, 20, "commit")
    assert len(acked) == 20 and _full_rows(db) == 20 and not _lines(db)
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 20 and r.unmirrored_entries == 20
    with Store(db):  # the next open mirrors them, then keeps only their hashes
        pass
    assert _full_rows(db) == 0 and sorted(_kept_hashes(db)) == list(range(1, 21))
    entries = _file_entries(db)
    assert [e["data"]["episode_id"] for e in entries] == acked
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 20 and r.unmirrored_entries == 0


def test_a_crash_after_the_files_before_compaction_is_finished_on_next_open(db: Path) -> None:
    acked = _crash(db, 6, "compact")
    # the files hold all six, the database still holds them in full
    assert [json.loads(x)["data"]["episode_id"] for x in _lines(db)] == acked
    assert _full_rows(db) == 6 and _kept_hashes(db) == {}
    assert AuditTrail.verify(db).valid
    with Store(db):
        pass
    assert _full_rows(db) == 0 and sorted(_kept_hashes(db)) == list(range(1, 7))
    assert AuditTrail.verify(db).valid


@pytest.mark.parametrize("rehash", [False, True])
def test_a_full_row_the_files_do_not_hold_exactly_is_never_compacted(db: Path,
                                                                     rehash: bool) -> None:
    _crash(db, 6, "compact")
    row = next(e for e in _file_entries(db) if e["seq"] == 4)
    row["actor"] = "mallory"
    with sqlite3.connect(db) as c:  # rehash: the row checks out on its own, unlike the file
        c.execute("UPDATE audit_log SET actor=?, hash=? WHERE seq=4",
                  ("mallory", entry_hash(row) if rehash else row["hash"]))
    with Store(db):
        pass
    # the five that match are compacted; entry 4 stays in full, as evidence
    assert _q(db, "SELECT seq, actor FROM audit_log") == [(4, "mallory")]
    assert sorted(_kept_hashes(db)) == [1, 2, 3, 5, 6]
    r = AuditTrail.verify(db)
    assert not r.valid and r.chain_break_at == 4


# ---------------------------------------------------------------------- older stores
def _as_schema_2(db: Path) -> list[dict[str, Any]]:
    """Turn a store into what schema 2 wrote: every entry in full in audit_log, no
    audit_hashes table, lines with spaces and the entries' hashes as they are."""
    entries = _file_entries(db)
    with sqlite3.connect(db) as c:
        c.execute("DROP TABLE audit_hashes")
        c.execute("DELETE FROM audit_log")
        c.executemany("INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, hash) "
                      "VALUES (?,?,?,?,?,?,?)",
                      [(e["seq"], e["ts"], e["actor"], e["event"], json.dumps(
                          e["data"], sort_keys=True), e["prev_hash"], e["hash"])
                       for e in entries])
        c.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    _write_active(db, entries)  # json.dumps' default separators: ", " and ": "
    return entries


def test_a_schema_2_store_verifies_as_it_is_and_is_compacted_on_open(db: Path) -> None:
    _record(db, 8)
    entries = _as_schema_2(db)
    assert ", " in _lines(db)[0]
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 8
    with Store(db, read_only=True) as ro:
        assert ro.status().audit_entry_count == 8 and ro.audit_trail.entries() == entries
    with clock.frozen(W45 + timedelta(hours=1)), Store(db) as s:
        s.record("after the upgrade", "observation")
    from anneal_memory.storage.sqlite import SCHEMA_VERSION

    assert _q(db, "SELECT value FROM meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    assert _full_rows(db) == 0 and sorted(_kept_hashes(db)) == list(range(1, 10))
    lines = _lines(db)
    assert len(lines) == 9 and all(", " in x for x in lines[:8])  # old lines as they were
    assert ", " not in lines[-1]  # the new one compact
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 9


def test_old_lines_with_spaces_and_full_length_label_hashes_verify(db: Path) -> None:
    _record(db, 4)
    entries = _file_entries(db)
    salt = _q(db, "SELECT value FROM meta WHERE key='audit_salt'")[0][0]
    from anneal_memory.audit import content_hash

    prev = GENESIS
    for e in entries:  # as a store of the previous layout wrote them
        e["data"]["source"] = content_hash(salt, "label\x00agent")
        e["prev_hash"] = prev
        e["hash"] = prev = entry_hash(e)
    _as_schema_2(db)
    _write_active(db, entries)
    with sqlite3.connect(db) as c:
        c.executemany("UPDATE audit_log SET data=?, prev_hash=?, hash=? WHERE seq=?",
                      [(json.dumps(e["data"], sort_keys=True), e["prev_hash"], e["hash"],
                        e["seq"]) for e in entries])
    assert AuditTrail.verify(db).valid
    with Store(db) as s:
        assert same_label(s.audit_trail.entries()[0]["data"]["source"],
                          s.audit_trail.hash_label("agent"))
    assert _full_rows(db) == 0 and AuditTrail.verify(db).valid


# ---------------------------------------------------------------------- sealing by size
def test_the_active_file_is_sealed_at_its_size_bound(db: Path, monkeypatch) -> None:
    monkeypatch.setattr(AuditTrail, "SEAL_BYTES", 2000)
    with clock.frozen(W45), Store(db) as s:
        for i in range(30):
            s.record(f"sealed by size {i}", "observation")
            if i % 3 == 2:  # a mirror every three entries (about 1,300 bytes)
                s.audit_trail.flush()
                # the mirror that takes the active file past the bound seals it
                assert AuditPaths(db).active.stat().st_size < 2000
        # one mirror far past the bound (a rebuild, a backlog) is cut into parts as well
        s.audit_trail.MIRROR_SECONDS = 1e9
        for i in range(60):
            s.record(f"a backlog {i}", "observation")
        before = len(json.loads(AuditPaths(db).manifest.read_text())["files"])
        s.audit_trail.flush()
        after = json.loads(AuditPaths(db).manifest.read_text())["files"]
        assert len(after) - before >= 2 and all(p["bytes"] <= 4 * 2000 + 600
                                                for p in after[before:])
    manifest = json.loads(AuditPaths(db).manifest.read_text())
    parts = manifest["files"]
    assert len(parts) >= 8 and {p["week"] for p in parts} == {"2026-W45"}
    assert len({p["file"] for p in parts}) == len(parts)
    assert [p["first_seq"] for p in parts[1:]] == [p["last_seq"] + 1 for p in parts[:-1]]
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 90 and r.files_verified >= len(parts)
    # a change inside a sealed part is named at that entry
    part = db.with_name(parts[2]["file"])
    lines = gzip.decompress(part.read_bytes()).decode().splitlines()
    e = json.loads(lines[1])
    e["actor"] = "x"
    e["hash"] = entry_hash(e)
    lines[1] = json.dumps(e)
    part.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    r = AuditTrail.verify(db)
    assert not r.valid and r.chain_break_at == e["seq"] and r.chain_break_file == part.name


def test_a_busy_week_gets_parts_that_grow_with_it(db: Path, monkeypatch) -> None:
    monkeypatch.setattr(AuditTrail, "SEAL_BYTES", 3000)
    with clock.frozen(W45), Store(db) as s:
        for i in range(0, 4000, 500):
            s.record_many({"content": f"busy {j}", "episode_type": "observation"}
                          for j in range(i, i + 500))
    parts = json.loads(AuditPaths(db).manifest.read_text())["files"]
    first = parts[0]["entries"]
    # at a fixed bound this would be 4000 / first parts; each part holds at least 1/16 of
    # what the week had sealed before it
    assert len(parts) < 4000 / first / 4 and parts[-1]["entries"] > 8 * first
    for k in range(1, len(parts)):
        assert parts[k]["bytes"] >= sum(p["bytes"] for p in parts[:k]) // 16
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == 4000


# ---------------------------------------------------------------------- repair
def _weeks(db: Path, weeks: int = 3, per: int = 4) -> None:
    for w in range(weeks):
        _record(db, per, W45 + timedelta(weeks=w))


def test_repair_rebuilds_every_entry_still_on_disk(db: Path) -> None:
    _weeks(db)
    before = _file_entries(db)
    AuditPaths(db).manifest.unlink()  # the index is gone, every line is still there
    assert not AuditTrail.verify(db).valid
    with Store(db) as s:
        res = AuditTrail.repair(db, backend_of(s))
    assert res["valid"] and res["lost_entries"] == [] and res["salvaged_entries"] == 12
    assert _file_entries(db) == before and AuditTrail.verify(db).valid


def test_repair_names_the_range_a_deleted_sealed_week_took_with_it(db: Path) -> None:
    _weeks(db)
    manifest = json.loads(AuditPaths(db).manifest.read_text())
    db.with_name(manifest["files"][1]["file"]).unlink()  # entries 5-8
    with Store(db) as s:
        res = AuditTrail.repair(db, backend_of(s))
    assert res["valid"] is False and res["lost_entries"] == [[5, 8]]
    assert res["rebuilt_entries"] == 8 and "entries 5-8 cannot be" in res["status"]
    assert [e["seq"] for e in _file_entries(db)] == [1, 2, 3, 4, 9, 10, 11, 12]
    r = AuditTrail.verify(db)
    assert not r.valid and r.chain_break_at == 5
    with Store(db) as s:  # reading the chain in full says where its text is missing
        with pytest.raises(AuditError, match="entry 5 "):
            s.audit_trail.entries()
        s.record("the store keeps working", "observation")  # and new entries still land
    assert _file_entries(db)[-1]["seq"] == 13


def test_repair_rebuilds_unmirrored_entries_from_the_database(db: Path, monkeypatch) -> None:
    _record(db, 3)
    with Store(db) as s:
        monkeypatch.setattr(AuditTrail, "mirror", lambda self: (_ for _ in ()).throw(
            OSError("disk full")))
        s.record("never mirrored", "observation")
        s.record("nor this", "observation")
        monkeypatch.undo()
        assert _full_rows(db) == 2
        for f in db.parent.glob("memory.audit*"):  # and the files are lost too
            if f.name != "memory.audit.lock":
                f.unlink()
        res = AuditTrail.repair(db, backend_of(s))
    # the two in full come back; the three mirrored ones are named
    assert res["lost_entries"] == [[1, 3]] and res["rebuilt_entries"] == 2
    assert [e["seq"] for e in _file_entries(db)] == [4, 5] and _full_rows(db) == 0


def test_repair_force_on_a_good_trail_rebuilds_it_from_its_own_lines(db: Path) -> None:
    _weeks(db, 2, 3)
    before = _file_entries(db)
    with Store(db) as s:
        res = AuditTrail.repair(db, backend_of(s), force=True)
    assert res["valid"] and res["salvaged_entries"] == 6 and res["set_aside"]
    assert _file_entries(db) == before


# ---------------------------------------------------------------------- copying
def test_migrating_a_compacted_store_copies_every_entry_in_full(db: Path, tmp_path: Path) -> None:
    from anneal_memory.migrate_store import migrate

    _weeks(db, 2, 3)
    dst = tmp_path / "copy" / "memory.db"
    dst.parent.mkdir()
    res = migrate(str(db), str(dst))
    assert res["verified"] and res["audit_entries"] == 6
    assert _file_entries(dst) == _file_entries(db) and _full_rows(dst) == 0
    assert AuditTrail.verify(dst).valid


def test_migrating_a_store_whose_files_lost_an_entry_is_refused(db: Path, tmp_path: Path) -> None:
    from anneal_memory.migrate_store import migrate

    _record(db, 5)
    lines = _lines(db)
    AuditPaths(db).active.write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    dst = tmp_path / "copy.db"
    with pytest.raises(AuditError, match="entry 3 "):
        migrate(str(db), str(dst))
    with Store(dst) as s:  # nothing half-copied
        assert s.status().total_episodes == 0 and s.status().audit_entry_count == 0


# ---------------------------------------------------------------------- free pages
def _batch(db: Path, n: int) -> None:
    with Store(db) as s:
        s.record_many({"content": f"a batch entry {i} " + "x" * 100,
                       "episode_type": "observation"} for i in range(n))


def test_a_large_batch_leaves_no_free_pages_once_compacted(db: Path) -> None:
    _batch(db, 1500)  # its full rows, about 170 pages, are freed at once by the compaction
    assert _q(db, "PRAGMA auto_vacuum") == [(2,)]
    assert _q(db, "PRAGMA freelist_count")[0][0] < 64
    assert _full_rows(db) == 0 and len(_kept_hashes(db)) == 1500
    assert AuditTrail.verify(db).valid
    with Store(db) as s:  # and the store reads as before
        assert s.status().total_episodes == 1500
        assert s.recall(keyword="batch entry 1499").episodes


def test_a_store_without_auto_vacuum_keeps_working_with_its_free_pages(db: Path) -> None:
    Store(db).close()
    with sqlite3.connect(db, isolation_level=None) as c:  # as stores made before were
        c.execute("PRAGMA auto_vacuum=NONE")
        c.execute("VACUUM")
    _batch(db, 1500)
    assert _q(db, "PRAGMA auto_vacuum") == [(0,)]
    assert _q(db, "PRAGMA freelist_count")[0][0] >= 64  # kept for later tails to reuse
    assert _full_rows(db) == 0 and AuditTrail.verify(db).valid
