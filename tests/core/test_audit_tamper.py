"""The tamper matrix: every way of altering the audit trail we could think of, each on a
fresh copy of one real store, and what ``verify`` must say about it.

The store holds 40 entries over four ISO weeks: three sealed weeks (seq 1-10, 11-20,
21-30) and the active file (31-40). Every entry is mirrored, so the database keeps each
as its hash only (compacted); a second store is the same with entries 31-40 committed but
not yet mirrored (a crash before the mirror), kept in full in the database alone. Each
tamper names the first entry it makes bad; verify must report exactly that entry.
Rewrites made consistently in both copies are only detectable against an anchor kept
elsewhere, and are tested with one.

Counts: 132 tampers of the mirrored store and 12 of the unmirrored tail, each detected at
its first bad entry; 5 consistent rewrites of both copies, each invisible without an
anchor and detected with one. Not in the matrix, because no chain can catch it: a new,
validly linked entry appended to the database's copy (or an unmirrored tail rewritten
and relinked there: only an anchor shows it).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from anneal_memory import AuditTrail, Store, clock
from anneal_memory.audit import GENESIS, MIRRORED_SEQ_KEY, entry_hash

WEEK_STARTS = [datetime(2026, 11, 2, 9, tzinfo=timezone.utc) + timedelta(weeks=w) for w in range(4)]
PER_WEEK = 10
TOTAL = PER_WEEK * len(WEEK_STARTS)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed store with its trail over four weeks, plus the head to anchor on."""
    root = tmp_path_factory.mktemp("pristine")
    db = root / "memory.db"
    now = [WEEK_STARTS[0]]
    with clock.frozen(lambda: now[0]), Store(db) as s:
        for w, start in enumerate(WEEK_STARTS):
            for i in range(PER_WEEK):
                now[0] = start + timedelta(hours=i)
                s.record(f"week {w} entry {i} about the tamper matrix", "observation",
                         source="agent")
    head = AuditTrail.head(db)
    (root / "anchor.json").write_text(json.dumps(head.to_dict()))
    return db


@pytest.fixture
def db(pristine: Path, tmp_path: Path) -> Path:
    for f in pristine.parent.iterdir():
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / pristine.name


@pytest.fixture
def tail_db(db: Path) -> Path:
    """The store with entries 31-40 committed but not mirrored: in full in the database,
    not in the files, the files' record of how far they reach at 30."""
    rows = _db_rows(db)
    for e in rows[30:]:
        e.pop("compacted", None)
    _db_put(db, rows)
    _db_sql(db, "UPDATE meta SET value='30' WHERE key=?", (MIRRORED_SEQ_KEY,))
    _active(db).write_text("")
    r = AuditTrail.verify(db)
    assert r.valid and r.unmirrored_entries == 10, r.reason
    return db


# ---------------------------------------------------------------------- helpers
def _active(db: Path) -> Path:
    return db.with_name(db.stem + ".audit.jsonl")


def _manifest_path(db: Path) -> Path:
    return db.with_name(db.stem + ".audit.manifest.json")


def _manifest(db: Path) -> dict[str, Any]:
    return json.loads(_manifest_path(db).read_text())


def _save_manifest(db: Path, m: dict[str, Any]) -> None:
    _manifest_path(db).write_text(json.dumps(m))


def _sealed(db: Path, i: int) -> Path:
    return db.with_name(_manifest(db)["files"][i]["file"])


def _read(path: Path) -> list[dict[str, Any]]:
    raw = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [json.loads(x) for x in raw.splitlines() if x.strip()]


def _write(path: Path, entries: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries)
    path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())


def _where(db: Path, seq: int) -> tuple[Path, int]:
    """The file holding entry ``seq`` and its index there."""
    week = (seq - 1) // PER_WEEK
    path = _sealed(db, week) if week < 3 else _active(db)
    return path, (seq - 1) % PER_WEEK


def _edit_file(db: Path, seq: int, change: Callable[[dict[str, Any]], None], *,
               rehash: bool = False, relink: bool = False) -> None:
    """Change entry ``seq`` in its file; optionally recompute its hash, and relink every
    later entry of that file so the file's own chain stays consistent."""
    path, i = _where(db, seq)
    _write(path, _changed(_read(path), i, change, rehash=rehash, relink=relink))


def _changed(entries: list[dict[str, Any]], i: int, change: Callable[[dict[str, Any]], None],
             *, rehash: bool, relink: bool) -> list[dict[str, Any]]:
    change(entries[i])
    if rehash or relink:
        entries[i]["hash"] = entry_hash(entries[i])
    if relink:
        for j in range(i + 1, len(entries)):
            entries[j]["prev_hash"] = entries[j - 1]["hash"]
            entries[j]["hash"] = entry_hash(entries[j])
    return entries


def _file_entries(db: Path) -> dict[int, dict[str, Any]]:
    m = _manifest(db)
    out: dict[int, dict[str, Any]] = {}
    for path in [db.with_name(f["file"]) for f in m["files"]] + [_active(db)]:
        if path.exists():
            out.update((e["seq"], e) for e in _read(path))
    return out


def _db_rows(db: Path) -> list[dict[str, Any]]:
    """The database's copy, every entry: a row held in full, or (``compacted``) one kept
    as its hash, with the content the files hold for it (what the tamperer edits)."""
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT seq, ts, actor, event, data, prev_hash, hash FROM audit_log "
                         "ORDER BY seq").fetchall()
        kept = c.execute("SELECT seq, lower(hex(hash)) FROM audit_hashes ORDER BY seq").fetchall()
    files = _file_entries(db) if kept else {}
    out = [{"seq": r[0], "ts": r[1], "actor": r[2], "event": r[3], "data": json.loads(r[4]),
            "prev_hash": r[5], "hash": r[6]} for r in rows]
    out += [{**files[seq], "hash": h, "compacted": True} for seq, h in kept]
    return sorted(out, key=lambda e: e["seq"])


def _db_put(db: Path, rows: list[dict[str, Any]]) -> None:
    """Write the database's copy back: compacted entries as their (maybe new) hash only."""
    with sqlite3.connect(db) as c:
        c.execute("DELETE FROM audit_log")
        c.execute("DELETE FROM audit_hashes")
        c.executemany("INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, hash) "
                      "VALUES (?,?,?,?,?,?,?)",
                      [(e["seq"], e["ts"], e["actor"], e["event"],
                        json.dumps(e["data"], sort_keys=True, ensure_ascii=False),
                        e["prev_hash"], e["hash"]) for e in rows if not e.get("compacted")])
        c.executemany("INSERT INTO audit_hashes(seq, hash) VALUES (?, ?)",
                      [(e["seq"], bytes.fromhex(e["hash"])) for e in rows if e.get("compacted")])
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _db_edit(db: Path, seq: int, change: Callable[[dict[str, Any]], None], *,
             rehash: bool = False, relink: bool = False) -> None:
    _db_put(db, _changed(_db_rows(db), seq - 1, change, rehash=rehash, relink=relink))


def _everywhere(db: Path, seq: int, change: Callable[[dict[str, Any]], None]) -> None:
    """The consistent forgery: rewrite entry ``seq`` and relink everything after it, in
    every file, the manifest and the database alike."""
    rows = _db_rows(db)
    change(rows[seq - 1])
    prev = rows[seq - 2]["hash"] if seq > 1 else GENESIS
    for e in rows[seq - 1:]:
        e["prev_hash"] = prev
        e["hash"] = entry_hash(e)
        prev = e["hash"]
    _db_put(db, rows)
    _rebuild_files(db, rows)


def _rebuild_files(db: Path, rows: list[dict[str, Any]]) -> None:
    rows = [{k: v for k, v in e.items() if k != "compacted"} for e in rows]
    m = _manifest(db)
    for k, meta in enumerate(m["files"]):
        part = [e for e in rows if meta["first_seq"] <= e["seq"] <= meta["last_seq"]]
        _write(db.with_name(meta["file"]), part)
        meta.update(first_seq=part[0]["seq"], last_seq=part[-1]["seq"], entries=len(part),
                    first_prev_hash=part[0]["prev_hash"], last_hash=part[-1]["hash"])
        m["files"][k] = meta
    _save_manifest(db, m)
    last_sealed = m["files"][-1]["last_seq"] if m["files"] else 0
    _write(_active(db), [e for e in rows if e["seq"] > last_sealed])


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(e: dict[str, Any]) -> None:
        e[key] = value
    return change


def _data(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(e: dict[str, Any]) -> None:
        e["data"][key] = value
    return change


def _drop_lines(db: Path, path: Path, keep: Callable[[int, dict[str, Any]], bool]) -> None:
    _write(path, [e for i, e in enumerate(_read(path)) if keep(i, e)])


def _fix_meta(db: Path, i: int) -> None:
    """Make the manifest describe sealed file ``i`` as it now is (a careful tamperer)."""
    m = _manifest(db)
    part = _read(db.with_name(m["files"][i]["file"]))
    m["files"][i].update(first_seq=part[0]["seq"], last_seq=part[-1]["seq"], entries=len(part),
                         first_prev_hash=part[0]["prev_hash"], last_hash=part[-1]["hash"])
    _save_manifest(db, m)


def _remove_sealed(db: Path, i: int) -> None:
    m = _manifest(db)
    meta = m["files"].pop(i)
    db.with_name(meta["file"]).unlink()
    _save_manifest(db, m)


def _db_hash(db: Path, seq: int, new_hash: str) -> None:
    """Replace the hash the database keeps for a compacted entry."""
    _db_sql(db, "UPDATE audit_hashes SET hash=? WHERE seq=?", (bytes.fromhex(new_hash), seq))


def _db_delete(db: Path, where: str) -> None:
    """Delete entries from the database's copy, whichever form it keeps them in."""
    _db_sql(db, f"DELETE FROM audit_log WHERE {where}")
    _db_sql(db, f"DELETE FROM audit_hashes WHERE {where}")


def _db_sql(db: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    with sqlite3.connect(db) as c:
        c.execute(sql, params)
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _forged(after: dict[str, Any], seq: int) -> dict[str, Any]:
    e = {"seq": seq, "ts": after["ts"], "actor": "operator", "event": "delete",
         "data": {"id": "deadbeef"}, "prev_hash": after["hash"]}
    e["hash"] = entry_hash(e)
    return e


# ---------------------------------------------------------------------- the matrix
# (name, tamper, first bad seq). Sealed weeks hold 1-10, 11-20, 21-30; active 31-40.
Tamper = Callable[[Path], None]
CASES: list[tuple[str, Tamper, int]] = []


def case(name: str, expect: int) -> Callable[[Tamper], Tamper]:
    def add(fn: Tamper) -> Tamper:
        CASES.append((name, fn, expect))
        return fn
    return add


# --- one entry edited in a file: no rehash, rehash, rehash + relink the file's chain
for seq in (1, 5, 10, 11, 25, 30, 31, 35, 40):
    for field, change in (("actor", _set("actor", "mallory")),
                          ("event", _set("event", "forget")),
                          ("data", _data("type", "decision")),
                          ("ts", _set("ts", "2020-01-01T00:00:00.000000+00:00"))):
        CASES.append((f"file-edit-{field}-{seq}",
                      lambda d, s=seq, c=change: _edit_file(d, s, c), seq))
    CASES.append((f"file-edit-rehash-{seq}",
                  lambda d, s=seq: _edit_file(d, s, _data("type", "decision"), rehash=True), seq))
    CASES.append((f"file-edit-relink-{seq}",
                  lambda d, s=seq: _edit_file(d, s, _set("actor", "x"), relink=True), seq))
    CASES.append((f"file-edit-prevhash-{seq}",
                  lambda d, s=seq: _edit_file(d, s, _set("prev_hash", "1" * 64)), seq))
    CASES.append((f"file-edit-hash-{seq}",
                  lambda d, s=seq: _edit_file(d, s, _set("hash", "2" * 64)), seq))

# --- one entry edited in the database copy (mirrored, so kept as its hash): the hash
#     garbled, the hash of an edited entry, that and every later hash relinked
for seq in (1, 12, 30, 33, 40):
    CASES.append((f"db-hash-{seq}", lambda d, s=seq: _db_hash(d, s, "ab" * 32), seq))
    CASES.append((f"db-edit-rehash-{seq}",
                  lambda d, s=seq: _db_edit(d, s, _data("id", "0000"), rehash=True), seq))
    CASES.append((f"db-edit-relink-{seq}",
                  lambda d, s=seq: _db_edit(d, s, _set("event", "x"), relink=True), seq))

# --- lines removed, duplicated, swapped, inserted in the active file and a sealed one
for seq in (31, 35, 40, 11, 15, 20):
    CASES.append((f"delete-line-{seq}", lambda d, s=seq: _drop_lines(
        d, _where(d, s)[0], lambda i, e, s=s: e["seq"] != s), seq))


@case("duplicate-first-active", 31)
def _dup_first(d: Path) -> None:
    es = _read(_active(d))
    _write(_active(d), [es[0], *es])


@case("duplicate-middle-active", 35)
def _dup_mid(d: Path) -> None:
    es = _read(_active(d))
    _write(_active(d), es[:5] + [es[4]] + es[5:])


@case("duplicate-last-active", 40)
def _dup_last(d: Path) -> None:
    es = _read(_active(d))
    _write(_active(d), [*es, es[-1]])


@case("duplicate-in-sealed", 13)
def _dup_sealed(d: Path) -> None:
    p = _sealed(d, 1)
    es = _read(p)
    _write(p, es[:3] + [es[2]] + es[3:])


@case("swap-two-active", 33)
def _swap(d: Path) -> None:
    es = _read(_active(d))
    es[2], es[3] = es[3], es[2]
    _write(_active(d), es)


@case("swap-across-files", 30)
def _swap_files(d: Path) -> None:
    a, s = _read(_active(d)), _read(_sealed(d, 2))
    a[0], s[-1] = s[-1], a[0]
    _write(_active(d), a)
    _write(_sealed(d, 2), s)


@case("reverse-active", 31)
def _reverse(d: Path) -> None:
    _write(_active(d), list(reversed(_read(_active(d)))))


@case("forged-append-active", 41)
def _append(d: Path) -> None:
    es = _read(_active(d))
    _write(_active(d), [*es, _forged(es[-1], 41)])


@case("forged-insert-active", 36)
def _insert(d: Path) -> None:
    es = _read(_active(d))
    forged = _forged(es[4], 36)
    _write(_active(d), es[:5] + [forged] + es[5:])


# --- the oldest entries, whole weeks, the end of the trail
@case("remove-oldest-3-with-manifest-fixed", 1)
def _oldest(d: Path) -> None:
    _drop_lines(d, _sealed(d, 0), lambda i, e: i >= 3)
    _fix_meta(d, 0)


@case("remove-oldest-3-manifest-stale", 1)
def _oldest_stale(d: Path) -> None:
    _drop_lines(d, _sealed(d, 0), lambda i, e: i >= 3)


@case("remove-first-sealed-week-and-manifest-line", 1)
def _first_week(d: Path) -> None:
    _remove_sealed(d, 0)


@case("remove-middle-sealed-week-and-manifest-line", 11)
def _mid_week(d: Path) -> None:
    _remove_sealed(d, 1)


@case("remove-last-sealed-week-and-manifest-line", 21)
def _last_week(d: Path) -> None:
    _remove_sealed(d, 2)


@case("delete-sealed-file-keep-manifest", 11)
def _sealed_gone(d: Path) -> None:
    _sealed(d, 1).unlink()


@case("garbage-sealed-file", 21)
def _garbage(d: Path) -> None:
    _sealed(d, 2).write_bytes(b"not gzip at all")


@case("truncate-active-last-3", 38)
def _truncate(d: Path) -> None:
    _drop_lines(d, _active(d), lambda i, e: i < 7)


@case("empty-active-file", 31)
def _empty(d: Path) -> None:
    _active(d).write_text("")


@case("delete-active-file", 31)
def _delete_active(d: Path) -> None:
    _active(d).unlink()


@case("delete-every-file", 1)
def _delete_all(d: Path) -> None:
    for f in d.parent.glob("memory.audit*"):
        f.unlink()


@case("delete-manifest", 1)
def _no_manifest(d: Path) -> None:
    _manifest_path(d).unlink()


@case("corrupt-manifest", 1)
def _bad_manifest(d: Path) -> None:
    _manifest_path(d).write_text("{not json")


@case("manifest-last-hash-edited", 10)
def _manifest_hash(d: Path) -> None:
    m = _manifest(d)
    m["files"][0]["last_hash"] = "3" * 64
    _save_manifest(d, m)


@case("manifest-reordered", 1)
def _manifest_order(d: Path) -> None:
    m = _manifest(d)
    m["files"][0], m["files"][1] = m["files"][1], m["files"][0]
    _save_manifest(d, m)


@case("malformed-line-in-sealed", 14)
def _malformed(d: Path) -> None:
    p = _sealed(d, 1)
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()
    lines[3] = "{this is not json"
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


@case("malformed-line-mid-active", 34)
def _malformed_active(d: Path) -> None:
    lines = _active(d).read_text().splitlines()
    lines[3] = lines[3][:20]
    _active(d).write_text("\n".join(lines) + "\n")


# --- the same edit in both copies: without a new hash, with a new hash (not relinked)
for seq in (5, 25, 35, 40):
    CASES.append((f"both-edit-{seq}", lambda d, s=seq: (
        _edit_file(d, s, _set("actor", "m")), _db_edit(d, s, _set("actor", "m"))), seq))
    if seq < TOTAL:  # the newest entry rewritten in both: only an anchor shows it
        CASES.append((f"both-edit-rehash-{seq}", lambda d, s=seq: (
            _edit_file(d, s, _set("actor", "m"), rehash=True),
            _db_edit(d, s, _set("actor", "m"), rehash=True)), seq))


@case("manifest-names-a-file-elsewhere", 1)
def _manifest_path_escape(d: Path) -> None:
    m = _manifest(d)
    m["files"][1]["file"] = "../" + m["files"][1]["file"]
    _save_manifest(d, m)


# --- the database copy cut or padded
@case("db-delete-oldest-rows", 1)
def _db_oldest(d: Path) -> None:
    _db_delete(d, "seq <= 3")


@case("db-delete-middle-row", 17)
def _db_mid(d: Path) -> None:
    _db_delete(d, "seq = 17")


@case("db-delete-last-row", 40)
def _db_last(d: Path) -> None:
    _db_delete(d, "seq = 40")


@case("db-delete-every-row", 1)
def _db_all(d: Path) -> None:
    _db_delete(d, "1")


@case("db-hash-duplicated-as-full-row", 12)
def _db_twice(d: Path) -> None:
    e = _file_entries(d)[12]  # a second copy of a compacted entry, in full
    _db_sql(d, "INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, hash) "
            "VALUES (?,?,?,?,?,?,?)", (e["seq"], e["ts"], "mallory", e["event"],
                                       json.dumps(e["data"]), e["prev_hash"], e["hash"]))


# --- the unmirrored tail (31-40 in full in the database, not in the files): each tamper
#     of the database's full rows, and the files made to look as if they had them
TAIL: list[tuple[str, Tamper, int]] = []
for seq in (31, 35, 40):
    TAIL.append((f"tail-edit-{seq}", lambda d, s=seq: _db_edit(d, s, _set("actor", "m")), seq))
    TAIL.append((f"tail-edit-data-{seq}",
                 lambda d, s=seq: _db_edit(d, s, _data("type", "decision")), seq))
for seq in (31, 35):  # a new hash breaks the next entry's link (the newest has none)
    TAIL.append((f"tail-edit-rehash-{seq}",
                 lambda d, s=seq: _db_edit(d, s, _set("actor", "m"), rehash=True), seq))
TAIL.append(("tail-delete-row", lambda d: _db_delete(d, "seq = 36"), 36))
TAIL.append(("tail-delete-first-row", lambda d: _db_delete(d, "seq = 31"), 31))
TAIL.append(("tail-mirror-mark-past-it", lambda d: _db_sql(
    d, "UPDATE meta SET value='35' WHERE key=?", (MIRRORED_SEQ_KEY,)), 31))
TAIL.append(("tail-forged-into-the-files", lambda d: _write(
    _active(d), [dict(e, actor="m") for e in _db_rows(d)[30:33]]), 31))


# --- consistent rewrites of both copies: only an anchor kept elsewhere catches them
ANCHORED: list[tuple[str, Tamper, int]] = []


def anchored(name: str, expect: int) -> Callable[[Tamper], Tamper]:
    def add(fn: Tamper) -> Tamper:
        ANCHORED.append((name, fn, expect))
        return fn
    return add


@anchored("rewrite-everywhere-entry-5", 40)
def _rw5(d: Path) -> None:
    _everywhere(d, 5, _set("actor", "mallory"))


@anchored("both-edit-rehash-newest", 40)
def _both_newest(d: Path) -> None:
    _edit_file(d, 40, _set("actor", "m"), rehash=True)
    _db_edit(d, 40, _set("actor", "m"), rehash=True)


@anchored("rewrite-everywhere-last-entry", 40)
def _rw_last(d: Path) -> None:
    _everywhere(d, 40, _data("id", "00000000"))


@anchored("cut-newest-everywhere", 38)
def _cut_all(d: Path) -> None:
    rows = _db_rows(d)[:37]
    _db_put(d, rows)
    _db_sql(d, "UPDATE meta SET value='37' WHERE key=?", (MIRRORED_SEQ_KEY,))
    _rebuild_files(d, rows)


@anchored("cut-oldest-everywhere-and-restart-chain", 36)
def _cut_oldest_all(d: Path) -> None:
    rows = _db_rows(d)[5:]
    prev = GENESIS
    for n, e in enumerate(rows, 1):
        e["seq"], e["prev_hash"] = n, prev
        e["hash"] = entry_hash(e)
        prev = e["hash"]
    _db_put(d, rows)
    m = _manifest(d)
    for meta in m["files"]:
        meta["first_seq"] -= 5
        meta["last_seq"] -= 5
    m["files"][0]["first_seq"] = 1
    _save_manifest(d, m)
    _rebuild_files(d, rows)


@pytest.mark.parametrize("name,tamper,expect", CASES, ids=[c[0] for c in CASES])
def test_tamper_is_detected_at_the_first_bad_entry(db: Path, name: str, tamper: Tamper,
                                                   expect: int) -> None:
    assert AuditTrail.verify(db).valid
    tamper(db)
    r = AuditTrail.verify(db)
    assert not r.valid, f"{name} went undetected"
    assert r.chain_break_at == expect, (name, r.chain_break_at, r.chain_break_file, r.reason)
    assert r.reason


@pytest.mark.parametrize("name,tamper,expect", ANCHORED, ids=[c[0] for c in ANCHORED])
def test_consistent_rewrite_is_caught_by_the_anchor(db: Path, name: str, tamper: Tamper,
                                                    expect: int) -> None:
    anchor = db.with_name("anchor.json")
    assert AuditTrail.verify(db, anchor=anchor).valid
    tamper(db)
    # both copies agree with each other: without an anchor the rewrite is invisible...
    assert AuditTrail.verify(db).valid, AuditTrail.verify(db).reason
    # ...and against the anchor kept elsewhere it is not
    r = AuditTrail.verify(db, anchor=anchor)
    assert not r.valid and r.chain_break_file == "anchor"
    assert r.chain_break_at == expect and r.anchor and not r.anchor["matched"]


@pytest.mark.parametrize("name,tamper,expect", TAIL, ids=[c[0] for c in TAIL])
def test_tamper_of_the_unmirrored_tail_is_detected(tail_db: Path, name: str, tamper: Tamper,
                                                   expect: int) -> None:
    tamper(tail_db)
    r = AuditTrail.verify(tail_db)
    assert not r.valid, f"{name} went undetected"
    assert r.chain_break_at == expect, (name, r.chain_break_at, r.chain_break_file, r.reason)


def test_the_matrix_is_large_and_fully_detected() -> None:
    # the counts this file reports (see the docstring): keep the matrix from shrinking
    assert len(CASES) >= 132 and len(TAIL) >= 12 and len(ANCHORED) >= 5


# ---------------------------------------------------------------------- not tampers
def test_a_torn_last_line_is_a_crash_not_a_break(db: Path) -> None:
    with open(_active(db), "a") as fh:
        fh.write('{"seq": 41, "ts": "2026-11-')
    # the entry never reached the database either: nothing is missing
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == TOTAL


def test_an_interrupted_rotation_is_not_a_break(db: Path) -> None:
    # a crash after the week was sealed and listed, before the active file was emptied
    m = _manifest(db)
    active = _read(_active(db))
    sealed = db.with_name("memory.audit.2026-W48.jsonl.gz")
    _write(sealed, active)
    m["files"].append({"file": sealed.name, "week": "2026-W48", "first_seq": 31,
                       "last_seq": 40, "entries": 10, "first_prev_hash": active[0]["prev_hash"],
                       "last_hash": active[-1]["hash"]})
    _save_manifest(db, m)
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == TOTAL, r.reason
    # and the next writer finishes the rotation instead of writing the week twice
    with Store(db) as s:
        s.record("after the interrupted rotation", "observation")
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == TOTAL + 1, r.reason
    assert len(_read(_active(db))) == 1


def test_an_orphan_sealed_file_from_a_crash_is_ignored_and_kept(db: Path) -> None:
    # a crash after writing the sealed file, before the manifest listed it
    orphan = db.with_name("memory.audit.2026-W48.jsonl.gz")
    _write(orphan, _read(_active(db)))
    assert AuditTrail.verify(db).valid
    with clock.frozen(WEEK_STARTS[-1] + timedelta(weeks=1)), Store(db) as s:
        s.record("next week", "observation")
    assert orphan.exists() and len(_read(orphan)) == PER_WEEK
    r = AuditTrail.verify(db)
    assert r.valid and r.total_entries == TOTAL + 1, r.reason


def test_verify_names_the_file_and_the_database(db: Path) -> None:
    _edit_file(db, 35, _set("actor", "x"))
    r = AuditTrail.verify(db)
    assert r.chain_break_file == "memory.audit.jsonl" and "file" in (r.reason or "")
    shutil.copy(db.with_name("anchor.json"), db.with_name("anchor.bak"))
    r2 = AuditTrail.verify(db.parent / "elsewhere.db")  # no store, no files: nothing to say
    assert r2.valid and r2.total_entries == 0
