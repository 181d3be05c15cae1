"""The SHA-256 hash-chained audit trail.

Each entry is written into the store's database in the same transaction as the mutation
it records, so no mutation can commit without its entry. After the commit the chain is
mirrored to ``<stem>.audit.jsonl`` (the current ISO week) under a cross-process lock;
older weeks are sealed as ``<stem>.audit.<YYYY>-W<WW>.jsonl.gz`` and indexed in
``<stem>.audit.manifest.json``. A mirror that fails (disk full) is caught up by the
next append or by ``AuditTrail.repair``; it is counted in ``audit_write_failures``.
Entries hold ids and salted content hashes, never content.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._fileio import atomic_write_bytes, atomic_write_json, file_lock, sidecar_path
from .clock import now_iso
from .errors import AuditError
from .storage.legacy import LEGACY_AUDIT_FORMAT
from .storage.legacy import as_entry as legacy_entry
from .storage.pg_location import pg_dsn

if TYPE_CHECKING:
    from .storage.base import Backend

log = logging.getLogger("anneal_memory")

GENESIS = "0" * 64


def entry_hash(entry: dict[str, Any]) -> str:
    """Hash of an entry's canonical JSON, every field but ``hash`` itself."""
    body = {k: entry[k] for k in ("seq", "ts", "actor", "event", "data", "prev_hash")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def content_hash(salt: str, text: str) -> str:
    """Salted SHA-256 of content: proves what was written without revealing it."""
    return hashlib.sha256((salt + "\x00" + text).encode("utf-8")).hexdigest()


def _week_of(ts: str) -> str:
    try:
        d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return "unknown"
    y, w, _ = d.isocalendar()
    return f"{y}-W{w:02d}"


@dataclass
class AuditVerifyResult:
    """Outcome of walking the whole chain."""

    valid: bool
    total_entries: int
    files_verified: int
    chain_break_at: int | None = None
    chain_break_file: str | None = None
    reason: str | None = None
    unmirrored_entries: int = 0
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


class AuditPaths:
    def __init__(self, db_path: str | Path) -> None:
        self.db = Path(db_path)
        self.active = sidecar_path(db_path, ".audit.jsonl")
        self.manifest = sidecar_path(db_path, ".audit.manifest.json")
        self.lock = sidecar_path(db_path, ".audit.lock")

    def sealed(self, week: str) -> Path:
        return sidecar_path(self.db, f".audit.{week}.jsonl.gz")


def _load_manifest(paths: AuditPaths) -> dict[str, Any]:
    if not paths.manifest.exists():
        return {"version": 1, "files": [], "active_week": None}
    try:
        data = json.loads(paths.manifest.read_text("utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("files"), list):
            raise ValueError("bad shape")
        return data
    except (OSError, ValueError) as exc:
        raise AuditError(
            f"the audit manifest {str(paths.manifest)!r} is unreadable ({exc}): run "
            "'anneal-memory audit-repair' to rebuild it"
        ) from None


def _read_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return fh.read().splitlines()
    return path.read_text("utf-8").splitlines()


def _db_entries(db: Path) -> list[dict[str, Any]]:
    """The database's copy of the chain (empty when the database cannot be read)."""
    if not db.exists():
        return []
    try:
        conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT seq, ts, actor, event, data, prev_hash, hash "
                                "FROM audit_log ORDER BY seq").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return []
    return [{"seq": r[0], "ts": r[1], "actor": r[2], "event": r[3], "data": json.loads(r[4]),
             "prev_hash": r[5], "hash": r[6]} for r in rows]


class AuditTrail:
    """Appends entries for one Store and verifies any store's trail."""

    def __init__(self, backend: Backend, db_path: str | Path, *, salt: str,
                 on_event: Callable[[dict[str, Any]], Any] | None = None,
                 enabled: bool = True) -> None:
        self.backend = backend
        self.paths = AuditPaths(db_path)
        self.salt = salt
        self.on_event = on_event
        self.enabled = enabled
        self._pending: list[dict[str, Any]] = []
        self.write_failures_this_process = 0
        self._unmirrored = 0
        self._last_mirror = time.monotonic()

    MIRROR_EVERY = 256
    MIRROR_SECONDS = 1.0

    # ------------------------------------------------------------------ write side
    def hash_content(self, text: str) -> str:
        return content_hash(self.salt, text)

    def append(self, event: str, data: dict[str, Any], *, actor: str = "agent") -> dict[str, Any] | None:
        """Add an entry inside the caller's open transaction."""
        if not self.enabled:
            return None
        if not self.backend.in_transaction:
            raise AuditError("internal: audit append outside a transaction")
        seq, prev = self.backend.audit_tip()
        entry = {"seq": seq + 1, "ts": now_iso(), "actor": actor, "event": event,
                 "data": data, "prev_hash": prev}
        entry["hash"] = entry_hash(entry)
        self.backend.audit_insert(entry)
        self._pending.append(entry)
        return entry

    def discard_pending(self) -> None:
        self._pending.clear()

    def after_commit(self) -> None:
        """Notify the callback of committed entries and mirror them to the JSONL files.

        The database copy is the durable record; the files are mirrored in batches (at
        most ``MIRROR_EVERY`` entries or ``MIRROR_SECONDS`` behind, and always at close),
        so an acknowledged write costs one fsync, not two.
        """
        if not self.enabled or not self._pending:
            return
        pending, self._pending = self._pending, []
        self._unmirrored += len(pending)
        now = time.monotonic()
        if self._unmirrored >= self.MIRROR_EVERY or now - self._last_mirror >= self.MIRROR_SECONDS:
            self.flush()
        if self.on_event is not None:
            for entry in pending:
                try:
                    self.on_event(dict(entry))
                except Exception as exc:
                    log.warning("anneal-memory: on_audit_event callback raised %r", exc)

    def flush(self) -> bool:
        """Mirror every committed entry to the files now. A failure is counted in the
        store's durable ``audit_write_failures`` and never raised."""
        if not self.enabled:
            return True
        self._last_mirror = time.monotonic()
        try:
            self.mirror()
            self._unmirrored = 0
            return True
        except Exception as exc:  # the mutation is committed; never fail the caller
            self.write_failures_this_process += 1
            log.warning("anneal-memory: audit mirror failed (%s); entries are safe in the "
                        "database and will be mirrored by the next flush", exc)
            with contextlib.suppress(Exception):
                with self.backend.transaction():
                    self.backend.add_meta_int("audit_write_failures", 1)
                    self.backend.set_meta("audit_last_failure", f"{now_iso()} {exc}")
            return False

    def mirror(self) -> int:
        """Append every committed entry the files lack; rotate at week boundaries."""
        if not getattr(self.backend, "mirrors_audit_to_files", True):
            return 0  # a server database keeps the one chain every host shares
        with file_lock(self.paths.lock):
            manifest = _load_manifest(self.paths)
            sealed_last = manifest["files"][-1]["last_seq"] if manifest["files"] else 0
            first, last_entry = self._active_bounds(sealed_last)
            last = last_entry["seq"] if last_entry else sealed_last
            active_week = _week_of(first["ts"]) if first else manifest.get("active_week")
            new = self.backend.audit_entries(after_seq=last)
            if not new:
                return 0
            buf: list[str] = []
            has_active = first is not None
            for e in new:
                week = _week_of(e["ts"])
                if active_week is not None and week != active_week and (has_active or buf):
                    self._write_active_append(buf)
                    buf = []
                    self._rotate(manifest, active_week)
                    has_active = False
                active_week = week
                buf.append(json.dumps(e, sort_keys=True, ensure_ascii=False))
            self._write_active_append(buf)
            if manifest.get("active_week") != active_week:
                manifest["active_week"] = active_week
                atomic_write_json(self.paths.manifest, manifest)
            return len(new)

    def _active_bounds(self, sealed_last: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """First and last entries of the active file, reading only its ends. A torn last
        line (crash mid-append) is cut off; a file left by an interrupted rotation is reset."""
        p = self.paths.active
        if not p.exists() or p.stat().st_size == 0:
            return None, None
        with open(p, "r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            tail_start = max(0, size - 65536)
            fh.seek(tail_start)
            tail = fh.read()
            if not tail.endswith(b"\n"):
                cut = tail.rfind(b"\n")
                if cut < 0 and tail_start == 0:
                    fh.truncate(0)
                    return None, None
                fh.truncate(tail_start + cut + 1)
                tail = tail[: cut + 1]
            fh.seek(0)
            head = fh.readline()
        try:
            first = json.loads(head)
            last_line = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
            last = json.loads(last_line)
        except ValueError:
            return None, {"seq": sealed_last}
        if int(first.get("seq", 0)) <= sealed_last:
            atomic_write_bytes(p, b"")
            return None, None
        return first, last

    def _write_active_append(self, lines: list[str]) -> None:
        if not lines:
            return
        with open(self.paths.active, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
            fh.flush()

    def _rotate(self, manifest: dict[str, Any], week: str) -> None:
        lines = _read_lines(self.paths.active)
        if not lines:
            return
        entries = [json.loads(x) for x in lines]
        target = self.paths.sealed(week)
        atomic_write_bytes(target, gzip.compress(("\n".join(lines) + "\n").encode("utf-8")))
        manifest["files"].append({
            "file": target.name, "week": week, "first_seq": entries[0]["seq"],
            "last_seq": entries[-1]["seq"], "entries": len(entries),
            "first_prev_hash": entries[0]["prev_hash"], "last_hash": entries[-1]["hash"],
        })
        manifest["active_week"] = None
        atomic_write_json(self.paths.manifest, manifest)
        atomic_write_bytes(self.paths.active, b"")

    # ------------------------------------------------------------------ read side
    @staticmethod
    def iter_entries(db_path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
        """(file name, entry) for every entry, oldest first: the files, then any committed
        entries the files do not hold yet (file name "database")."""
        if pg_dsn(db_path) is not None:
            with _server_backend(db_path) as backend:
                entries = backend.audit_entries()
            yield from (("database", e) for e in entries)
            return
        paths = AuditPaths(db_path)
        manifest = _load_manifest(paths)
        files = [paths.db.parent / f["file"] for f in manifest["files"]] + [paths.active]
        formats = [f.get("format") for f in manifest["files"]] + [None]
        last = 0
        for f, fmt in zip(files, formats):
            for line in _read_lines(f):
                if line.strip():
                    e = json.loads(line)
                    if fmt == LEGACY_AUDIT_FORMAT:  # written by 1.0.2, kept verbatim
                        e = legacy_entry(e, line)
                    last = max(last, int(e.get("seq", 0)))
                    yield f.name, e
        for e in _db_entries(paths.db):
            if e["seq"] > last:
                yield "database", e

    @staticmethod
    def verify(db_path: str | Path,
               progress: Callable[[str, int], None] | None = None) -> AuditVerifyResult:
        """Walk every file of the chain (and the database's copy) and report the first
        entry that does not check out."""
        if pg_dsn(db_path) is not None:
            with _server_backend(db_path) as backend:
                return verify_database(backend)
        paths = AuditPaths(db_path)
        try:
            manifest = _load_manifest(paths)
        except AuditError as exc:
            return AuditVerifyResult(False, 0, 0, None, paths.manifest.name, str(exc))
        files = [paths.db.parent / f["file"] for f in manifest["files"]]
        files.append(paths.active)
        prev_hash, prev_seq, total, nfiles = GENESIS, 0, 0, 0
        seen: dict[int, str] = {}
        first = True
        for f, meta in zip(files, manifest["files"] + [None]):
            if progress is not None:
                progress(f.name, total)
            if not f.exists():
                if meta is not None:
                    return AuditVerifyResult(False, total, nfiles, meta["first_seq"], f.name,
                                             "sealed audit file is missing")
                continue
            try:
                lines = _read_lines(f)
            except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
                return AuditVerifyResult(False, total, nfiles, prev_seq + 1, f.name,
                                         f"unreadable: {exc}")
            nfiles += 1
            legacy = meta is not None and meta.get("format") == LEGACY_AUDIT_FORMAT
            for line in lines:
                if not line.strip():
                    continue
                try:
                    e = json.loads(line)
                    if legacy:  # 1.0.2 chained each line's hash into the next prev_hash
                        e = legacy_entry(e, line)
                    seq = int(e["seq"])
                except (ValueError, KeyError, TypeError):
                    return AuditVerifyResult(False, total, nfiles, prev_seq + 1, f.name,
                                             "malformed entry")
                if first and seq != 1:
                    # the trail may start after a retention cut: trust its first link
                    prev_seq, prev_hash = seq - 1, e.get("prev_hash", GENESIS)
                first = False
                if seq != prev_seq + 1:
                    return AuditVerifyResult(False, total, nfiles, prev_seq + 1, f.name,
                                             f"entry {prev_seq + 1} is missing or out of order")
                if e.get("prev_hash") != prev_hash:
                    return AuditVerifyResult(False, total, nfiles, seq, f.name,
                                             "prev_hash does not match the previous entry")
                if not legacy and e.get("hash") != entry_hash(e):
                    return AuditVerifyResult(False, total, nfiles, seq, f.name,
                                             "entry content does not match its hash")
                prev_hash, prev_seq = e["hash"], seq
                seen[seq] = e["hash"]
                total += 1
        # Cross-check against the database's copy; entries not yet mirrored continue the walk.
        unmirrored = 0
        if paths.db.exists():
            for e in _db_entries(paths.db):
                seq, h, ph = e["seq"], e["hash"], e["prev_hash"]
                if seq in seen:
                    if seen[seq] != h:
                        return AuditVerifyResult(False, total, nfiles, seq, paths.active.name,
                                                 "file entry differs from the database's copy")
                    continue
                if seq <= prev_seq:
                    continue
                if seq != prev_seq + 1 or ph != prev_hash or entry_hash(e) != h:
                    return AuditVerifyResult(False, total, nfiles, seq, "database",
                                             "database chain breaks")
                prev_hash, prev_seq = h, seq
                total += 1
                unmirrored += 1
        return AuditVerifyResult(True, total, nfiles, None, None, None, unmirrored,
                                 [f.name for f in files if f.exists()])

    @staticmethod
    def repair(db_path: str | Path, backend: Backend, *, force: bool = False) -> dict[str, Any]:
        """Rebuild the JSONL files and manifest from the database's copy of the chain.

        A trail that verifies is left as it is (only missing entries are mirrored) unless
        ``force``; otherwise its files are set aside, never deleted, and rebuilt.
        """
        paths = AuditPaths(db_path)
        if not force and AuditTrail.verify(db_path).valid:
            written = AuditTrail(backend, db_path, salt="").mirror()
            return {"rebuilt_entries": 0, "mirrored_entries": written, "set_aside": [],
                    "status": "the trail verifies: nothing to repair"}
        with file_lock(paths.lock):
            set_aside: list[str] = []
            stamp = now_iso().replace(":", "").replace("+", "Z")[:17]
            for f in [paths.manifest, paths.active, *paths.db.parent.glob(
                    paths.db.stem + ".audit.*.jsonl.gz")]:
                if f.exists():
                    dest = f.with_name(f.name + f".set-aside-{stamp}")
                    os.replace(f, dest)
                    set_aside.append(dest.name)
        trail = AuditTrail(backend, db_path, salt="")
        written = trail.mirror()
        return {"rebuilt_entries": written, "mirrored_entries": written, "set_aside": set_aside,
                "status": "rebuilt from the database's copy of the chain"}


@contextlib.contextmanager
def _server_backend(location: Any) -> Iterator[Any]:
    from .storage.postgres import PostgresBackend

    backend = PostgresBackend(str(pg_dsn(location)), read_only=True)
    try:
        yield backend
    finally:
        backend.close()


def verify_database(backend: Any, page: int = 5000) -> AuditVerifyResult:
    """Walk the chain a backend stores (the whole trail of a PostgreSQL store)."""
    prev_seq, prev_hash, total, first = 0, GENESIS, 0, True
    with backend.read():
        while True:
            entries = backend.audit_entries(after_seq=prev_seq, limit=page)
            for e in entries:
                if first and e["seq"] != 1:  # the trail may start after a retention cut
                    prev_seq, prev_hash = e["seq"] - 1, e["prev_hash"]
                first = False
                reason = ("entry is missing or out of order" if e["seq"] != prev_seq + 1 else
                          "prev_hash does not match the previous entry"
                          if e["prev_hash"] != prev_hash else
                          "entry content does not match its hash"
                          if e["hash"] != entry_hash(e) else None)
                if reason:
                    return AuditVerifyResult(False, total, 0, prev_seq + 1, "database", reason)
                prev_seq, prev_hash = e["seq"], e["hash"]
                total += 1
            if len(entries) < page:
                break
    return AuditVerifyResult(True, total, 0, None, None, None, 0, ["database"])
