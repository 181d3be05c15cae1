"""Reading what anneal-memory 1.0.2 wrote: its SQLite store, audit trail and sidecars.

A 1.0.2 database is recognised by its ``metadata`` table (``format_version``) and the
absence of our ``meta`` table. ``upgrade_store`` converts it in place: first a backup copy
beside it (SQLite's online backup, so it is a consistent snapshot even in WAL mode), then
one transaction that moves the 1.0.2 tables aside, creates ours, copies every episode,
link, state key, trust class, derivation, tombstone, wrap, drift probe and pattern level
across, drops the 1.0.2 tables (and their generation-2 write guards) and records what it
did in ``meta['legacy_upgrade']``. Nothing is changed when any step fails.

The 1.0.2 audit trail stays byte for byte: its files become sealed files of our manifest
(``format: 1.0.2``), the upgrade's own audit entry links to the last 1.0.2 entry, and
``AuditTrail.verify`` walks both as one chain (1.0.2 hashed each line, sha256 of its
canonical JSON, into the next entry's ``prev_hash``). That file step runs after the commit
and is redone on the next open if a crash interrupts it (``finish_pending``).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from .._audit_chain import MIRRORED_SEQ_KEY, entry_hash
from .._fileio import atomic_write_json, fsync_dir, sidecar_path
from .._lazy import sha256_hex
from ..clock import normalize_timestamp, now_iso
from ..errors import AnnealMemoryError
from ..storage.driver import sqlite_driver

if TYPE_CHECKING:
    # the connection is sqlite3's or pysqlite3's (a drop-in of the same API)
    from sqlite3 import Connection

    from ..storage.sqlite_conn import RawConnection

LEGACY_VERSION = "1.0.2"
LEGACY_AUDIT_FORMAT = "1.0.2"
BACKUP_SUFFIX = ".1.0.2.bak"
#: 1.0.2 tables that clash with ours: renamed aside, read, dropped
_CLASHING = ("episodes", "supersessions", "tombstones", "wraps", "pattern_history",
             "drift_probes")
_GENESIS = "0" * 64


class MetaReader(Protocol):
    """What ``upgrade_report`` reads the store's meta through (a backend or the meta role)."""

    def get_meta(self, key: str) -> str | None: ...


class LegacyEntry(TypedDict):
    """A 1.0.2 audit entry in our shape (``as_entry``): the fields 1.0.2 wrote, as read,
    with our seq, hashes and format."""

    seq: int
    ts: object
    actor: object
    event: object
    data: object
    prev_hash: str
    hash: str
    format: str


class SealedRecord(TypedDict):
    """Our manifest's record of a sealed 1.0.2 audit file."""

    file: str
    first_seq: int
    last_seq: int
    entries: int
    first_prev_hash: str
    last_hash: str
    format: str


def is_legacy_store(conn: RawConnection) -> bool:
    """True for a database 1.0.2 wrote (and we have not upgraded yet)."""
    tables = _tables(conn)
    if "meta" in tables or "episodes" not in tables or "metadata" not in tables:
        return False
    row = conn.execute("SELECT value FROM metadata WHERE key='format_version'").fetchone()
    return row is not None


def _tables(conn: RawConnection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def backup_path(db_path: str | Path) -> Path:
    return Path(str(db_path) + BACKUP_SUFFIX)


def upgrade_store(conn: Connection, db_path: str | Path,
                  transaction: Callable[[], contextlib.AbstractContextManager[None]],
                  create_schema: Callable[[], None]) -> dict[str, object] | None:
    """Upgrade the 1.0.2 store open on ``conn`` in place; returns what was upgraded, or
    None when another process upgraded it first (then it is ours already).

    ``transaction`` opens the backend's write transaction; ``create_schema`` creates our
    tables inside it. The backup is written first and kept.
    """
    path = Path(db_path)
    backup = _backup(conn, path)
    audit = _legacy_audit(path)
    report: dict[str, Any] = {"from_version": LEGACY_VERSION, "upgraded_at": now_iso(),
                              "backup": backup.name}
    with transaction():
        if not is_legacy_store(conn):  # a concurrent open won the write lock and upgraded
            return None
        legacy_meta = dict(conn.execute("SELECT key, value FROM metadata").fetchall())
        for name in _CLASHING:
            if name in _tables(conn):
                conn.execute(f'ALTER TABLE "{name}" RENAME TO "legacy102_{name}"')
        # ALTER TABLE RENAME keeps triggers on the renamed tables; the generation-2 guards
        # call a function only 1.0.2 registers, so every trigger of 1.0.2 goes first.
        for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'"
                                       ).fetchall():
            conn.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
        create_schema()
        report.update(_copy(conn, legacy_meta, path))
        dropped = sorted(t for t in _tables(conn) if t.startswith("legacy102_")
                         or t in _LEGACY_ONLY)
        for t in dropped:
            conn.execute(f'DROP TABLE IF EXISTS "{t}"')
        report["dropped_tables"] = [t.removeprefix("legacy102_") for t in dropped]
        report["audit"] = {"entries": audit["entries"], "valid": audit["valid"],
                           "files": [f["file"] for f in audit["files"]]}
        _bridge_entry(conn, audit, report)
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('legacy_upgrade', ?)",
                     (json.dumps(report, sort_keys=True),))
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('legacy_audit_pending', ?)",
                     (json.dumps(audit, sort_keys=True),))
    finish_pending(conn, path, transaction)
    return report


#: tables only 1.0.2 has (retired layers, team ledger, origin keys): kept in the backup
_LEGACY_ONLY = frozenset({
    "metadata", "episode_trust", "episode_derived", "state_keys", "drift_results",
    "wrap_graduations", "pattern_levels", "pattern_grounding", "pattern_aliases",
    "associations", "pattern_associations", "pattern_graph_projection_meta",
    "processed_co_surface_events", "retired_origin_keys", "rewire_origin", "team_entries",
    "team_overrides", "team_snapshot", "team_snapshot_enforced", "team_snapshot_notes",
    "team_snapshot_rows",
})


def _backup(conn: Any, path: Path) -> Path:
    """A consistent copy of the 1.0.2 database (and its sidecars) before any change."""
    import shutil
    import tempfile

    dest = backup_path(path)
    if dest.exists():  # an earlier attempt that did not finish: keep the first copy
        return dest
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=str(path.parent))
    os.close(fd)
    tmp = Path(tmp_name)
    target = sqlite_driver().connect(str(tmp))  # backup() needs the same SQLite module
    try:
        conn.backup(target)
    finally:
        target.close()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    if dest.exists():  # a concurrent open made it first: keep that one
        tmp.unlink()
    else:
        os.replace(tmp, dest)
    for suffix in (".crystal.json", ".spores.json", ".continuity.md"):
        side = sidecar_path(path, suffix)
        if side.exists() and not Path(str(side) + BACKUP_SUFFIX).exists():
            shutil.copy2(side, str(side) + BACKUP_SUFFIX)
    fsync_dir(path.parent)
    return dest


def _ts(value: Any, fallback: Any) -> tuple[str, bool]:
    """A 1.0.2 timestamp in our canonical form; an unreadable one (1.0.2 stored any
    string) falls back to the row's creation time. Returns (timestamp, repaired)."""
    for candidate in (value, fallback):
        if isinstance(candidate, str) and candidate.strip():
            try:
                return normalize_timestamp(candidate), candidate is not value
            except AnnealMemoryError:
                continue
    return now_iso(), True


def _copy(conn: Any, meta: dict[str, str], path: Path) -> dict[str, Any]:
    q = conn.execute
    tables = _tables(conn)
    trust = dict(q("SELECT episode_id, trust FROM episode_trust").fetchall()) \
        if "episode_trust" in tables else {}
    keys = dict(q("SELECT episode_id, key FROM state_keys").fetchall()) \
        if "state_keys" in tables else {}
    wraps = q("SELECT id, wrapped_at, episodes_compressed, graduations_validated, "
              "graduations_demoted, citation_reuse_max, continuity_chars, patterns_extracted "
              "FROM legacy102_wraps ORDER BY id").fetchall() if "legacy102_wraps" in tables else []
    wrap_ids = {int(w[0]) for w in wraps}
    covered: dict[int, list[str]] = {}
    repaired = 0
    rows = q("SELECT id, timestamp, type, content, source, session_id, metadata, created_at "
             "FROM legacy102_episodes ORDER BY rowid").fetchall()
    newest = ""
    for eid, ts, etype, content, source, session, metadata, created in rows:
        stamp, fixed = _ts(ts, created)
        repaired += fixed
        if stamp < newest:  # recording order is not time order: recall must sort
            q("INSERT OR REPLACE INTO meta(key, value) VALUES ('backdated_episodes', '1')")
        newest = max(newest, stamp)
        wrap_id = int(session) if isinstance(session, str) and session.isdigit() \
            and int(session) in wrap_ids else None
        if wrap_id is not None:
            covered.setdefault(wrap_id, []).append(eid)
        q("INSERT INTO episodes(id, timestamp, type, content, source, session_id, metadata, "
          "trust, state_key, wrap_id) VALUES (?,?,?,?,?,?,?,?,?,?)",
          (eid, stamp, etype, content, source or "agent", session, metadata,
           trust.get(eid, "agent"), keys.get(eid), wrap_id))
    kinds = {"state_key": "state_key", "wrap": "wrap", "rewired": "rewired"}
    links = q("SELECT old_id, new_id, source, recorded_at FROM legacy102_supersessions"
              ).fetchall() if "legacy102_supersessions" in tables else []
    for old, new, source, at in links:
        q("INSERT OR IGNORE INTO supersessions(old_id, new_id, kind, created_at) "
          "VALUES (?,?,?,?)", (old, new, kinds.get(source, "explicit"), _ts(at, None)[0]))
    derived = q("SELECT episode_id, source_id, gone_trust FROM episode_derived").fetchall() \
        if "episode_derived" in tables else []
    for eid, src, gone in derived:
        q("INSERT OR IGNORE INTO derivations(episode_id, source_id, removed_trust) "
          "VALUES (?,?,?)", (eid, src, gone))
    stones = q("SELECT id, timestamp, type, content_hash, pruned_at FROM legacy102_tombstones"
               ).fetchall() if "legacy102_tombstones" in tables else []
    for tid, ts, ttype, chash, at in stones:
        # 1.0.2 does not say whether a row was deleted or aged out: read it as deleted,
        # the reading that never raises what was derived from or grounded by it
        q("INSERT OR IGNORE INTO tombstones(id, type, timestamp, content_hash, removed_at, "
          "reason, trust) VALUES (?,?,?,?,?,?,?)",
          (tid, ttype, _ts(ts, None)[0], chash, _ts(at, None)[0], "deleted", None))
    for w in wraps:
        wid, at, n, validated, demoted, reuse, chars, patterns = w
        stamp = _ts(at, None)[0]
        metrics = {"graduations_validated": validated or 0, "graduations_demoted": demoted or 0,
                   "citation_reuse_max": reuse or 0, "patterns_extracted": patterns or 0}
        q("INSERT INTO wraps(id, started_at, completed_at, status, token, session_id, "
          "episode_ids, today, chars, episodes_compressed, metrics) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
          (wid, stamp, stamp, "saved", "", None, json.dumps(covered.get(int(wid), [])),
           stamp[:10], chars, n, json.dumps(metrics)))
    open_wrap = _open_wrap(conn, meta)
    probes = _copy_probes(conn, tables)
    patterns = _copy_patterns(conn, tables)
    side = _continuity_meta(path)
    for key, value in (("section_schema", meta.get("section_schema")),
                       ("store_id", meta.get("store_id")),
                       ("audit_salt", meta.get("content_hash_salt")),
                       ("citations_seen", "1" if side.get("citations_seen") else None),
                       ("consolidate_requires_baton",
                        "1" if str(meta.get("consolidate_requires_baton", "")).lower()
                        in ("1", "true", "yes") else None),
                       ("created_at", now_iso())):
        if value:
            q("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
    return {"episodes": len(rows), "supersessions": len(links), "state_keys": len(keys),
            "trust_classes": sum(1 for t in trust.values() if t != "agent"),
            "derivations": len(derived), "tombstones": len(stones), "wraps": len(wraps),
            "open_wrap": open_wrap, "drift_probes": probes, "pattern_levels": patterns,
            "timestamps_repaired": repaired}


def _open_wrap(conn: Any, meta: dict[str, str]) -> bool:
    """A wrap 1.0.2 had open stays open under its token."""
    token = meta.get("wrap_token") or ""
    if not token:
        return False
    try:
        ids = json.loads(meta.get("wrap_episode_ids") or "[]")
    except ValueError:
        ids = []
    started = _ts(meta.get("wrap_started_at"), None)[0]
    conn.execute("INSERT INTO wraps(started_at, status, token, session_id, episode_ids, today) "
                 "VALUES (?,?,?,?,?,?)",
                 (started, "open", token, meta.get("wrap_gated_session") or None,
                  json.dumps([str(i) for i in ids] if isinstance(ids, list) else []),
                  meta.get("wrap_today") or started[:10]))
    return True


def _copy_probes(conn: Any, tables: set[str]) -> int:
    if "legacy102_drift_probes" not in tables:
        return 0
    last: dict[int, tuple[int, str, str | None]] = {}
    if "drift_results" in tables:
        for wid, pid, status, detail in conn.execute(
                "SELECT wrap_id, probe_id, status, detail FROM drift_results ORDER BY wrap_id"):
            last[int(pid)] = (int(wid), status, detail)
    n = 0
    for pid, kind, name, text, min_level, section, created, retired in conn.execute(
            "SELECT id, kind, name, text, min_level, section, created_at, retired_at "
            "FROM legacy102_drift_probes ORDER BY id").fetchall():
        if retired:
            continue
        wid, status, detail = last.get(int(pid), (None, None, None))
        conn.execute("INSERT INTO drift_probes(id, kind, pattern, min_level, fact, section, "
                     "created_at, last_status, last_detail, last_wrap_id) "
                     "VALUES (?,?,?,?,?,?,?,?,?,?)",
                     (str(pid), kind, name, min_level, text, section, _ts(created, None)[0],
                      status, detail, wid))
        n += 1
    return n


def _copy_patterns(conn: Any, tables: set[str]) -> int:
    """The level each pattern was last saved at (1.0.2's pattern_levels), so the one-rung
    rule measures against 1.0.2's record, and its history where 1.0.2 kept one."""
    from ..continuity.parse import pattern_key

    rec: dict[str, dict[str, Any]] = {}
    if "pattern_levels" in tables:
        for key, level, saved in conn.execute(
                "SELECT key, level, saved_at FROM pattern_levels WHERE kind != 'init'"):
            k = pattern_key(str(key))
            if k:
                cur = rec.setdefault(k, {"name": k, "level": 0, "max_level_reached": 0,
                                         "first_seen_at": _ts(saved, None)[0],
                                         "last_seen_at": None, "explanations": [],
                                         "grounding": []})
                cur["level"] = max(cur["level"], int(level))
                cur["max_level_reached"] = max(cur["max_level_reached"], int(level))
    if "legacy102_pattern_history" in tables:
        for name, top, corpus, _last, seen in conn.execute(
                "SELECT pattern_name, max_level_reached, explanation_corpus, last_explanation, "
                "last_seen_at FROM legacy102_pattern_history"):
            k = pattern_key(str(name))
            if k in rec:
                rec[k]["max_level_reached"] = max(rec[k]["max_level_reached"], int(top))
                rec[k]["last_seen_at"] = seen
                rec[k]["explanations"] = [x for x in str(corpus or "").split("\n") if x][-5:]
    now = now_iso()
    for r in rec.values():
        conn.execute("INSERT OR REPLACE INTO pattern_history(name, level, max_level_reached, "
                     "first_seen_at, last_seen_at, last_saved_at, explanations, grounding) "
                     "VALUES (?,?,?,?,?,?,?,?)",
                     (r["name"], r["level"], r["max_level_reached"], r["first_seen_at"],
                      r["last_seen_at"], now, json.dumps(r["explanations"]),
                      json.dumps(r["grounding"])))
    return len(rec)


def _continuity_meta(path: Path) -> dict[str, Any]:
    """1.0.2's ``<stem>.continuity.meta.json`` (citations_seen, sessions_produced)."""
    try:
        data = json.loads(sidecar_path(path, ".continuity.meta.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# --------------------------------------------------------------------------- audit trail

def legacy_line_hash(line: str) -> str:
    """The hash 1.0.2 chains: sha256 of the entry's canonical JSON line."""
    entry = json.loads(line)
    canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(canonical.encode("utf-8"))


def as_entry(raw: Mapping[str, object], line: str) -> LegacyEntry:
    """A 1.0.2 entry in our shape: seq counted from 1, plain-hex hashes, its own hash
    computed as 1.0.2 chains it (1.0.2 stores none). TypeError, KeyError or ValueError
    for a line that is not one."""
    if not isinstance(raw, Mapping):
        raise TypeError(f"a 1.0.2 audit entry is an object, not {type(raw).__name__}")
    seq = raw["seq"]
    if not isinstance(seq, (int, float, str)):
        raise TypeError(f"a 1.0.2 audit entry's seq is a number, not {type(seq).__name__}")
    prev = str(raw.get("prev_hash", "")).removeprefix("sha256:")
    return {"seq": int(seq) + 1, "ts": raw.get("ts"), "actor": raw.get("actor"),
            "event": raw.get("event"), "data": raw.get("data", {}),
            "prev_hash": _GENESIS if prev == "GENESIS" else prev,
            "hash": legacy_line_hash(line), "format": LEGACY_AUDIT_FORMAT}


def _legacy_files(path: Path) -> list[Path]:
    """1.0.2's audit files, oldest first: its sealed weeks (per its manifest), then the
    active file."""
    out: list[Path] = []
    manifest = sidecar_path(path, ".audit.manifest.json")
    try:
        data = json.loads(manifest.read_text("utf-8"))
    except (OSError, ValueError):
        data = {}
    for f in data.get("files", []) if isinstance(data, dict) else []:
        name = f.get("file") if isinstance(f, dict) else f
        if isinstance(name, str) and (path.parent / name).exists():
            out.append(path.parent / name)
    active = sidecar_path(path, ".audit.jsonl")
    if active.exists():
        out.append(active)
    return out


def _read(f: Path) -> list[str]:
    import gzip

    if f.suffix == ".gz":
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            return [x for x in fh.read().splitlines() if x.strip()]
    return [x for x in f.read_text("utf-8").splitlines() if x.strip()]


def _sealed_record(name: str, entries: list[LegacyEntry]) -> SealedRecord:
    """Our manifest's record of a sealed 1.0.2 file holding ``entries`` (in our shape)."""
    return {"file": name, "first_seq": entries[0]["seq"], "last_seq": entries[-1]["seq"],
            "entries": len(entries), "first_prev_hash": entries[0]["prev_hash"],
            "last_hash": entries[-1]["hash"], "format": LEGACY_AUDIT_FORMAT}


def _legacy_audit(path: Path) -> dict[str, Any]:
    """Walk 1.0.2's chain; returns its files, count, last hash and whether it verified."""
    files, prev, total, valid, last_seq = [], _GENESIS, 0, True, 0
    for f in _legacy_files(path):
        lines = _read(f)
        if not lines:
            continue
        entries = [as_entry(json.loads(x), x) for x in lines]
        for e in entries:
            if e["prev_hash"] != prev and total:
                valid = False
            prev, last_seq = e["hash"], e["seq"]
            total += 1
        files.append({"source": f.name, **_sealed_record(_sealed_name(path, f), entries)})
    return {"files": files, "entries": total, "last_hash": prev, "last_seq": last_seq,
            "valid": valid}


def sealed_part(db_path: str | Path,
                report: Mapping[str, object] | None) -> dict[str, object] | None:
    """1.0.2's part of an upgraded store's manifest, read again from its sealed files
    (named in the upgrade report, ``meta['legacy_upgrade']``): for rebuilding a manifest
    that was lost. None for a store that never was a 1.0.2 one."""
    audit = report.get("audit") if report else None
    if not isinstance(audit, dict):
        return None
    folder = Path(db_path).parent
    records = []
    for name in audit.get("files") or []:
        f = folder / str(name)
        if Path(str(name)).name == name and f.is_file():
            with contextlib.suppress(OSError, ValueError, EOFError, KeyError, TypeError):
                entries = [as_entry(json.loads(x), x) for x in _read(f)]
                if entries:
                    records.append(_sealed_record(str(name), entries))
    return {"files": records, "legacy": {"from_version": LEGACY_VERSION,
                                         "entries": audit.get("entries")}}


def _sealed_name(path: Path, f: Path) -> str:
    """Where a 1.0.2 audit file lives once sealed: its active file gets a name of its own
    (our active file starts fresh); its sealed weeks keep theirs."""
    if f.name == sidecar_path(path, ".audit.jsonl").name:
        return f"{path.stem}.audit.{LEGACY_VERSION}.jsonl"
    return f.name


#: meta key: where the database's copy of the chain starts (after 1.0.2's entries)
LEGACY_TAIL_KEY = "audit_legacy_tail"


def legacy_tail(value: str) -> tuple[int, str]:
    """(seq, hash) of 1.0.2's last entry, from ``meta[LEGACY_TAIL_KEY]``."""
    data = json.loads(value)
    return int(data["seq"]), str(data["hash"])


def _bridge_entry(conn: Any, audit: dict[str, Any], report: dict[str, Any]
                  ) -> None:
    """Our first audit entry: the upgrade itself, chained to 1.0.2's last entry. The
    database's copy starts with it; 1.0.2's entries stay in their files."""
    entry = {"seq": audit["last_seq"] + 1, "ts": now_iso(), "actor": "operator",
             "event": "store_upgraded", "data": {
                 "from_version": LEGACY_VERSION, "legacy_entries": audit["entries"],
                 "legacy_chain_valid": audit["valid"], "episodes": report.get("episodes", 0),
                 "backup": report["backup"]},
             "prev_hash": audit["last_hash"]}
    entry["hash"] = entry_hash(entry)
    tail = json.dumps({"seq": audit["last_seq"], "hash": audit["last_hash"]})
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (LEGACY_TAIL_KEY, tail))
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                 (MIRRORED_SEQ_KEY, str(audit["last_seq"])))
    conn.execute("INSERT INTO audit_log(seq, ts, actor, event, data, prev_hash, hash) "
                 "VALUES (?,?,?,?,?,?,?)",
                 (entry["seq"], entry["ts"], entry["actor"], entry["event"],
                  json.dumps(entry["data"], sort_keys=True, ensure_ascii=False),
                  entry["prev_hash"], entry["hash"]))


def finish_pending(conn: Connection, db_path: str | Path,
                   transaction: Callable[[], contextlib.AbstractContextManager[None]]) -> None:
    """Seal 1.0.2's audit files into our manifest (after the upgrade committed). Safe to
    run again: each step checks whether it already happened."""
    path = Path(db_path)
    row = conn.execute("SELECT value FROM meta WHERE key='legacy_audit_pending'").fetchone() \
        if "meta" in _tables(conn) else None
    if row is None:
        return
    plan = json.loads(row[0])
    for f in plan["files"]:
        src, dest = path.parent / f["source"], path.parent / f["file"]
        if src != dest and src.exists() and not dest.exists():
            os.replace(src, dest)
    manifest = {"version": 1, "active_week": None,
                "files": [{k: v for k, v in f.items() if k != "source"} for f in plan["files"]],
                "legacy": {"from_version": LEGACY_VERSION, "entries": plan["entries"]}}
    atomic_write_json(sidecar_path(path, ".audit.manifest.json"), manifest)
    fsync_dir(path.parent)
    with transaction():
        conn.execute("DELETE FROM meta WHERE key='legacy_audit_pending'")


def is_legacy_entry(entry: Mapping[str, object]) -> bool:
    return "v" in entry and "hash" not in entry


def legacy_entries(lines: list[str]) -> Iterator[LegacyEntry]:
    """The entries of a sealed 1.0.2 audit file, in our shape."""
    for line in lines:
        if line.strip():
            yield as_entry(json.loads(line), line)


def upgrade_report(backend: MetaReader) -> dict[str, object] | None:
    """What the in-place upgrade of a 1.0.2 store did (kept in its meta), or None for a
    store that never was a 1.0.2 one."""
    raw = backend.get_meta("legacy_upgrade")
    if not raw:
        return None
    try:
        report = json.loads(raw)
    except ValueError:
        return None
    return report if isinstance(report, dict) else None
