"""The SHA-256 hash-chained audit trail.

Each entry is written into the store's database in the same transaction as the mutation
it records, so no mutation can commit without its entry. After the commit the chain is
mirrored to ``<stem>.audit.jsonl`` (one compact JSON object per line) under a
cross-process lock. The active file is sealed as ``<stem>.audit.<YYYY>-W<WW>.jsonl.gz``
when the ISO week moves on, and also by the mirror that takes it past ``SEAL_BYTES`` or a
sixteenth of what the week's sealed parts hold, whichever is more (a busy week then has
several sealed parts, ``<week>.<first seq>``, growing with it), each listed in
``<stem>.audit.manifest.json``. A mirror that fails (disk full) is caught up by the next
append or by ``AuditTrail.repair``; it is counted in ``audit_write_failures``.

Entries hold ids and salted hashes, never content, and by default never labels a
reader could learn from either: sources, state keys, pattern names, forget reasons,
reviewers and namespace ids are written as salted hashes too (``hash_label``: 128 bits
of the salted SHA-256; entries written before kept all 256, and ``same_label`` compares
either).

The database's copy on SQLite is compacted once mirrored: after the files holding an
entry are fsynced (and the entry written there is the row itself), the row is replaced
by its seq and 32-byte hash (``storage.sqlite_audit``), so the text is kept once, in the
files, and the database keeps what verification needs. ``AuditTrail.verify`` walks the
files and the database's copy side by side (see ``_audit_verify``): a file entry whose
recomputed hash is not the one the database keeps for its seq is named at that entry, so
a rewrite of the files, however consistent, is still caught. Entries not yet mirrored stay
in full, so a crash between the commit and the mirror loses nothing. PostgreSQL has no
files and keeps every entry in full.

The trade-off is in ``repair``: it rebuilds the files from the database's full rows and
from every line still on disk (the damaged files, sealed parts, copies set aside earlier)
whose hash is the one the database keeps. An entry whose text is in no file any more
(a sealed file deleted, a line rewritten) cannot be rebuilt from the database: repair
names those entries (``lost_entries``) and the trail keeps failing verify there, rather
than passing over the gap. Before compaction the database could rebuild them; keep
backups of the audit files (or anchors, ``AuditTrail.head``) where that matters.

``AuditTrail.head`` gives the newest entry's seq and hash to keep elsewhere as an anchor,
which ``verify(anchor=...)`` checks.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from . import tracing
from ._audit_chain import (
    GENESIS,
    MIRRORED_SEQ_KEY,
    AuditEntry,
    StagedEntry,
    canonical_json,
    chain_entry,
    entry_hash,
)
from ._audit_files import (
    AuditHead,
    AuditPaths,
    AuditVerifyResult,
    load_manifest,
)
from ._fileio import (
    atomic_write_bytes,
    atomic_write_json,
    file_lock,
    fsync_dir,
    open_append_private,
)
from ._lazy import LazyLogger, sha256_hex
from .clock import iso_week, now_iso
from .errors import AuditError
from .legacy.upgrade import LEGACY_AUDIT_FORMAT, sealed_part, upgrade_report
from .storage import sqlite_peek as peek
from .storage.audit_sql import audit_entry
from .storage.pg_location import pg_dsn
from .storage.roles import AuditChain, Meta
from .storage.rows import AuditRowValues

if TYPE_CHECKING:
    from .storage.base import Backend

log = LazyLogger("anneal_memory")

#: Hex digits of a salted label hash in new entries (128 bits of SHA-256).
LABEL_HEX = 32
_HEXDIGITS = frozenset("0123456789abcdef")

#: Data keys whose values are labels, not ids or counts: hashed unless the store opts out.
HASHED_KEYS: frozenset[str] = frozenset({
    "source", "source_id", "state_key", "key", "reviewer", "namespace", "pattern",
    "patterns", "pattern_name", "level_capped", "uncorroborated", "omitted_patterns",
    # a crystal's name and text arrive as short unsalted digests: salt them too, so no
    # dictionary of likely pattern names can read them back
    "name_sha256", "text_sha256",
})
#: Keys hashed only in some events (elsewhere ``reason`` is a stable code).
HASHED_IN_EVENT: dict[str, frozenset[str]] = {"gov_forget": frozenset({"reason"})}


#: an entry's data as the database's ``data`` column holds it
_STORED = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


def content_hash(salt: str, text: str) -> str:
    """Salted SHA-256 of content: proves what was written without revealing it."""
    return sha256_hex((salt + "\x00" + text).encode("utf-8", "surrogatepass"))


def entry_line(entry: Mapping[str, object]) -> str:
    """An entry as one line of the JSONL files: sorted keys, compact separators. (Lines
    written with spaces read the same: the hash is over the canonical JSON, not the line.)"""
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def same_label(stored: object, expected: object) -> bool:
    """Whether a label as an entry holds it is ``expected`` (from ``hash_label``): a hash
    written at full length (256 bits, older entries) matches its 128-bit prefix."""
    if isinstance(stored, str) and isinstance(expected, str):
        if stored == expected:
            return True
        n = min(len(stored), len(expected))
        return (n >= LABEL_HEX and stored[:n] == expected[:n]
                and _HEXDIGITS.issuperset(stored) and _HEXDIGITS.issuperset(expected))
    if isinstance(stored, Mapping) and isinstance(expected, Mapping):
        return stored.keys() == expected.keys() and all(
            same_label(stored[k], expected[k]) for k in stored)
    if isinstance(stored, list) and isinstance(expected, (list, tuple)):
        return len(stored) == len(expected) and all(map(same_label, stored, expected))
    return bool(stored == expected)


def _week_of(ts: Any) -> str | None:
    return iso_week(ts) if isinstance(ts, str) else None


def _int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _digests(entries: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """(seq, hash) of rows just written to the files as they are: their text is kept
    there byte for byte (even a row that does not check out: verify names it there)."""
    return [(int(e["seq"]), str(e["hash"])) for e in entries]


def _read_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    if path.suffix == ".gz":
        import gzip

        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return fh.read().splitlines()
    return path.read_text("utf-8").splitlines()


class RepairReport(TypedDict):
    """What :meth:`AuditTrail.repair` did: entries written to the rebuilt files, the files
    set aside, entries salvaged from old lines, the ``lost_entries`` ([first, last] runs)
    no file holds any more, and whether the trail verifies now (else ``reason``)."""

    rebuilt_entries: int
    mirrored_entries: int
    set_aside: list[str]
    salvaged_entries: int
    lost_entries: list[list[int]]
    valid: bool
    reason: str | None
    status: str


class AuditTrail:
    """Appends entries for one Store and verifies any store's trail."""

    def __init__(self, backend: Backend, db_path: str | Path, *, salt: str,
                 on_event: Callable[[dict[str, Any]], Any] | None = None,
                 enabled: bool = True, hash_labels: bool = True) -> None:
        self._backend = backend
        #: the database's copy of the chain (its role: the audit SQL is there)
        self._chain = AuditChain(backend)
        self._meta = Meta(backend)
        self.paths = AuditPaths(db_path)
        self.salt = salt
        self.on_event = on_event
        self.enabled = enabled
        #: write sources, keys, names, reasons, reviewers and namespaces as salted hashes
        self.hash_labels = hash_labels
        self._pending: list[AuditEntry] = []
        #: whether the chain is mirrored to files here (not on a server database)
        self._files = bool(getattr(backend, "mirrors_audit_to_files", True))
        #: seq -> (row as written, its line for the files) of the entries this trail
        #: appended since its last mirror, which then writes them without parsing the
        #: row and serialising it again (a row that differs is read as stored)
        self._lines: dict[int, tuple[tuple[Any, ...], str]] = {}
        self.write_failures_this_process = 0
        self._unmirrored = 0
        self._last_mirror = time.monotonic()
        #: whether this trail looked for full rows the files already held (once)
        self._stragglers_checked = False
        #: seq -> data fields the in-process callback gets in clear (never written)
        self._clear: dict[int, dict[str, object]] = {}
        #: a label's text -> its salted hash (``hash_label``), for the labels seen last
        self._label_cache: dict[str, str] = {}

    MIRROR_EVERY = 256
    MIRROR_SECONDS = 1.0
    #: the active file is sealed (gzipped) by the mirror that takes it past this many
    #: bytes, or past 1/SEAL_SHARE of the bytes the week's sealed parts hold when more
    SEAL_BYTES = 256 * 1024
    SEAL_SHARE = 16

    # ------------------------------------------------------------------ write side
    def hash_content(self, text: str) -> str:
        return content_hash(self.salt, text)

    def hash_label(self, value: object) -> object:
        """A label as the trail writes it: a salted hash of its text (lists and the
        fields of a namespace dict one by one; None, numbers and booleans as they are).
        Compare with ``same_label(entry_value, hash_label(the label you expect))``."""
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, Mapping):
            return {k: self.hash_label(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.hash_label(v) for v in value]
        text = str(value)
        cache = self._label_cache
        hit = cache.get(text)
        if hit is None:
            if len(cache) >= self.LABEL_CACHE:
                cache.clear()
            hit = cache[text] = content_hash(self.salt, "label\x00" + text)[:LABEL_HEX]
        return hit

    #: labels whose hashes a trail keeps (every record hashes its source: mostly "agent")
    LABEL_CACHE = 256

    def redact(self, event: str, data: Mapping[str, object]) -> dict[str, object]:
        """``data`` with its labels hashed (see ``HASHED_KEYS``)."""
        if not self.hash_labels:
            return dict(data)
        keys = HASHED_KEYS | HASHED_IN_EVENT.get(event, frozenset())
        return {k: self.hash_label(v) if k in keys else v for k, v in data.items()}

    @tracing.phase("audit_append")
    def append(self, event: str, data: Mapping[str, object], *,
               actor: str = "agent") -> AuditEntry | None:
        """Add an entry inside the caller's open transaction."""
        if not self.enabled:
            return None
        entries = self.append_staged([self.stage(event, data, actor=actor)])
        return entries[0] if entries else None

    def hand_in_clear(self, entry: AuditEntry | None, fields: Mapping[str, object]) -> None:
        """Give ``on_audit_event`` these data fields of ``entry`` (just appended) as they
        are, where the trail keeps them hashed: the in-process callback sees what 1.0.2
        handed it (a dropped durable line's text), the files and the database never do.
        The callback's copy then carries the stored entry's ``hash``, not one of its own."""
        if entry is not None and self.on_event is not None and fields:
            self._clear[int(entry["seq"])] = dict(fields)

    def stage(self, event: str, data: Mapping[str, object], *, actor: str = "agent",
              counter: str | None = None) -> StagedEntry:
        """An entry's parts that need no transaction: its data with the labels hashed and
        serialised (a writer stages its entry before it queues for a group commit)."""
        red = self.redact(event, data)
        return StagedEntry(event, actor, red, canonical_json(red), _STORED(red), counter)

    @tracing.phase("audit_append")
    def append_staged(self, staged: Sequence[StagedEntry]) -> list[AuditEntry] | None:
        """Add the staged entries inside the caller's open transaction, oldest first,
        with one read of the chain's tip and one insert; each adds one to its
        ``counter`` (a scoped view's count of the entries its namespace caused)."""
        if not self.enabled:
            return None
        if not self._backend.in_transaction:
            raise AuditError("internal: audit append outside a transaction")
        seq, prev = self._chain.audit_tip()
        ts = now_iso()  # one transaction: its entries are appended at one moment
        entries: list[AuditEntry] = []
        rows: list[AuditRowValues] = []
        counts: dict[str, int] = {}
        lines = self._lines if self._files else None
        if lines is not None and len(lines) > 8 * self.MIRROR_EVERY:
            lines.clear()  # the files are not being written: keep no more
        for st in staged:
            seq += 1
            h, line = chain_entry(seq, ts, st.actor, st.event, st.canonical, prev)
            entries.append({"seq": seq, "ts": ts, "actor": st.actor, "event": st.event,
                            "data": st.data, "prev_hash": prev, "hash": h})
            row = AuditRowValues(seq, ts, st.actor, st.event, st.stored, prev, h)
            rows.append(row)
            if lines is not None:
                lines[seq] = (row, line)
            prev = h
            if st.counter:
                counts[st.counter] = counts.get(st.counter, 0) + 1
        self._chain.audit_insert_rows(rows)
        for key, n in counts.items():
            self._meta.add_meta_int(key, n)
        self._pending.extend(entries)
        return entries

    def tip(self) -> tuple[int, str]:
        """(seq, hash) of the chain's last entry in the database ((0, "") when empty)."""
        return self._chain.audit_tip()

    def entries(self, after_seq: int = 0, limit: int | None = None) -> list[AuditEntry]:
        """The chain's entries in the database, oldest first (compacted ones read back
        from the audit files)."""
        return self._chain.audit_entries(after_seq, limit)

    def verify_stored(self) -> AuditVerifyResult:
        """Walk the chain this store's database holds (the whole trail on PostgreSQL)."""
        return verify_database(self._backend)

    def repair_files(self, *, force: bool = False) -> RepairReport:
        """:meth:`repair` for this store's own files and database."""
        return AuditTrail.repair(self.paths.db, self._backend, force=force)

    def pending_mark(self) -> int:
        """How many entries of the open transaction are pending (see :meth:`drop_pending`)."""
        return len(self._pending)

    def drop_pending(self, mark: int) -> None:
        """Forget the entries appended since ``mark``: a savepoint rolled them back."""
        for entry in self._pending[mark:]:
            self._clear.pop(int(entry["seq"]), None)
        del self._pending[mark:]

    def discard_pending(self) -> None:
        self._pending.clear()
        self._clear.clear()

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
        if not self.hold_mirror:
            self.mirror_if_due()
        clear, self._clear = self._clear, {}
        if self.on_event is not None:
            for entry in pending:
                given = dict(entry)
                if entry["seq"] in clear:
                    given["data"] = {**entry["data"], **clear[entry["seq"]]}
                try:
                    self.on_event(given)
                except Exception as exc:
                    log.warning("anneal-memory: on_audit_event callback raised %r", exc)

    #: while set, committed entries wait for ``mirror_if_due`` (a group commit's leader
    #: mirrors after it has woken the callers of its batch, not before)
    hold_mirror = False

    def mirror_if_due(self) -> None:
        """Mirror when the files are ``MIRROR_EVERY`` entries or ``MIRROR_SECONDS``
        behind (outside any transaction)."""
        if self.enabled and self._unmirrored and (
                self._unmirrored >= self.MIRROR_EVERY
                or time.monotonic() - self._last_mirror >= self.MIRROR_SECONDS):
            self.flush()

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
                with self._backend.transaction():
                    self._meta.add_meta_int("audit_write_failures", 1)
                    self._meta.set_meta("audit_last_failure", f"{now_iso()} {exc}")
            return False

    def mirror(self) -> int:
        """Append every committed entry the files lack; seal the active file when the
        week moves on or it reaches its size bound; then compact what the files now hold.

        A week is sealed once: entries stamped with an earlier week (the clock stepped
        back) stay in the active file, and a sealed file is never overwritten. After the
        files are durable, the database records how far they reach (``MIRRORED_SEQ_KEY``),
        so a cut at the end of the files is caught by ``verify``, and keeps only the hashes
        of the entries just written (in the same transaction).
        """
        if not getattr(self._backend, "mirrors_audit_to_files", True):
            return 0  # a server database keeps the one chain every host shares
        with file_lock(self.paths.lock):
            manifest = load_manifest(self.paths)
            sealed = manifest["files"]
            sealed_last = int(sealed[-1]["last_seq"]) if sealed else 0
            first, last_entry = self._active_bounds(sealed_last)
            last = int(last_entry["seq"]) if last_entry else sealed_last
            new, lines = self._unmirrored_rows(last)
            if new and int(new[0]["seq"]) != last + 1:
                log.warning("anneal-memory: the audit files end at entry %d but the next entry "
                            "the database holds in full is %d: run anneal-memory verify",
                            last, new[0]["seq"])
            self._write_entries(manifest, first, last_entry, new, lines)
            self._lines.clear()  # all in the files now
            if not self._stragglers_checked:
                self._stragglers_checked = True
                try:  # best effort: the files are written; a row left in full is harmless
                    self._compact_held(manifest, int(new[0]["seq"]) - 1 if new else last)
                except Exception as exc:
                    log.warning("anneal-memory: compacting audit entries the files already "
                                "hold failed (%s); they stay in full in the database", exc)
        self._record_mirrored(int(new[-1]["seq"]) if new else last, _digests(new))
        return len(new)

    def _unmirrored_rows(self, after_seq: int) -> tuple[list[Mapping[str, Any]], list[str]]:
        """The entries the database holds in full after ``after_seq`` (their seq, ts and
        hash at least) and their lines for the files: a row exactly as this trail wrote
        it takes the line it kept; any other is parsed and serialised."""
        new: list[Mapping[str, Any]] = []
        lines: list[str] = []
        kept = self._lines
        for row in self._chain.audit_row_values(after_seq):
            hit = kept.get(row[0])
            if hit is not None and hit[0] == tuple(row):
                new.append({"seq": row[0], "ts": row[1], "hash": row[6]})
                lines.append(hit[1])
            else:
                e = audit_entry(row)
                new.append(e)
                lines.append(entry_line(e))
        return new, lines

    def _write_entries(self, manifest: dict[str, Any], first: Mapping[str, Any] | None,
                       last_entry: Mapping[str, Any] | None,
                       entries: Sequence[Mapping[str, Any]], lines: list[str] | None = None) -> None:
        """Append ``entries`` (their ``lines`` for the files, when given) to the active
        file (held under the file lock), sealing it on a new week and at its size bound
        (``_seal_bound``)."""
        if not entries:
            return
        sealed = manifest["files"]
        marks = [w for w in (manifest.get("active_week"),
                             sealed[-1].get("week") if sealed else None,
                             _week_of(first["ts"]) if first else None,
                             _week_of(last_entry.get("ts")) if last_entry else None)
                 if isinstance(w, str)]
        high = max(marks) if marks else None  # ISO week labels sort in time order
        buf: list[str] = []
        size = self.paths.active.stat().st_size if first is not None else 0
        bound = self._seal_bound(manifest, high)
        weeks: dict[Any, str | None] = {}  # a batch's entries share one timestamp
        for i, e in enumerate(entries):
            ts = e["ts"] if isinstance(e["ts"], str) else None
            if ts not in weeks:
                weeks[ts] = _week_of(ts)
            week = weeks[ts] or high
            if high is not None and week is not None and week > high and (size or buf):
                self._write_active_append(buf)
                buf, size = [], 0
                self._rotate(manifest)
            if week is not None and (high is None or week > high):
                high = week
                bound = self._seal_bound(manifest, high)
            line = lines[i] if lines is not None else entry_line(e)
            buf.append(line)
            size += len(line) + 1
            if size >= bound * 4:  # a very large mirror (a rebuild) is cut into parts too
                self._write_active_append(buf)
                buf, size = [], 0
                self._rotate(manifest)
                bound = self._seal_bound(manifest, high)
        self._write_active_append(buf)
        if size >= bound:  # sealed once per mirror: a batch's entries go in one part
            self._rotate(manifest)
        if manifest.get("active_week") != high:
            manifest["active_week"] = high
            atomic_write_json(self.paths.manifest, manifest)

    def _seal_bound(self, manifest: Mapping[str, Any], week: str | None) -> int:
        """The size at which the active file is sealed: ``SEAL_BYTES``, or a sixteenth
        of the plain bytes the week's sealed parts hold when that is more, so a week of a
        million entries is a hundred parts or so, not thousands."""
        held = 0
        for m in reversed(manifest["files"]):
            if m.get("week") != week:
                break
            held += _int_or(m.get("bytes"), 0)
        return max(self.SEAL_BYTES, held // self.SEAL_SHARE)

    def _compact_held(self, manifest: Mapping[str, Any], upto: int, page: int = 5000) -> None:
        """Compact the full rows up to ``upto`` that the files already held before this
        mirror: left by a crash between writing the files and compacting, or by a store
        from before compaction. Only a row the files hold exactly, field for field, is
        compacted (its text stays there); any other stays in full (verify names it)."""
        from ._audit_verify import file_entries, same_entry

        b = self._backend
        head = self._chain.audit_rows(after_seq=0, limit=1)
        if not head or int(head[0]["seq"]) > upto or b.read_only:
            return
        low = int(head[0]["seq"])
        files = [m for m in manifest["files"] if _int_or(m.get("last_seq"), low) >= low]
        it = file_entries(self.paths, {**manifest, "files": files}, strict=False)
        cur = next(it, None)
        after = low - 1
        while after < upto:
            rows = [r for r in self._chain.audit_rows(after_seq=after, limit=page) if r["seq"] <= upto]
            if not rows:
                return
            held: list[tuple[int, str]] = []
            for row in rows:
                while cur is not None and cur[1]["seq"] < row["seq"]:
                    cur = next(it, None)
                if cur is not None and cur[1]["seq"] == row["seq"] and same_entry(cur[1], row):
                    held.append((int(row["seq"]), str(row["hash"])))
            if held:
                with b.transaction():
                    self._chain.audit_compact(held)
            after = int(rows[-1]["seq"])

    def _record_mirrored(self, seq: int, compact: list[tuple[int, str]] | None = None) -> None:
        """Note in the database that the files hold every entry up to ``seq``, and keep
        only the hashes of ``compact`` (entries just written there), in one transaction."""
        b = self._backend
        if b.read_only or not seq:
            return
        try:
            known = int(self._meta.get_meta(MIRRORED_SEQ_KEY) or 0)
        except ValueError:
            known = 0
        if seq <= known and not compact:
            return
        with b.transaction():
            current = self._meta.get_meta(MIRRORED_SEQ_KEY)
            if not current or not current.isdigit() or int(current) < seq:
                self._meta.set_meta(MIRRORED_SEQ_KEY, str(seq))
            if compact:
                self._chain.audit_compact(compact)

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
            raise AuditError(f"the active audit file {p.name} is damaged: "
                             "AuditTrail.repair rebuilds it from the database's copy of the chain") from None
        if int(first.get("seq", 0)) <= sealed_last:
            atomic_write_bytes(p, b"")
            return None, None
        return first, last

    def _write_active_append(self, lines: list[str]) -> None:
        if not lines:
            return
        new_file = not self.paths.active.exists()
        with open_append_private(self.paths.active) as fh:
            fh.write("\n".join(lines) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if new_file:
            fsync_dir(self.paths.active.parent)

    def _rotate(self, manifest: dict[str, Any]) -> None:
        """Seal the active file: gzip it under the week of its first entry (a week sealed
        before gets ``<week>.<first seq>``), list it in the manifest, empty the active file."""
        lines = [x for x in _read_lines(self.paths.active) if x.strip()]
        if not lines:
            return
        head, tail = json.loads(lines[0]), json.loads(lines[-1])
        week = _week_of(head.get("ts")) or manifest.get("active_week") or "unknown"
        target = self.paths.sealed(week)
        if target.exists():
            target = self.paths.unused_sealed(f"{week}.{head['seq']}")
        text = ("\n".join(lines) + "\n").encode("utf-8")
        import gzip

        atomic_write_bytes(target, gzip.compress(text, compresslevel=6))  # gzip's own default
        manifest["files"].append({
            "file": target.name, "week": week, "first_seq": head["seq"],
            "last_seq": tail["seq"], "entries": len(lines),
            "first_prev_hash": head["prev_hash"], "last_hash": tail["hash"],
            "bytes": len(text),
        })
        atomic_write_json(self.paths.manifest, manifest)
        atomic_write_bytes(self.paths.active, b"")

    # ------------------------------------------------------------------ read side
    @staticmethod
    def iter_entries(db_path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
        """(file name, entry) for every entry, oldest first: the files, then any committed
        entries the files do not hold yet (file name "database")."""
        from ._audit_verify import file_entries

        if pg_dsn(db_path) is not None:
            with _server_backend(db_path) as backend:
                entries = AuditChain(backend).audit_entries()
            yield from (("database", dict[str, Any](e)) for e in entries)
            return
        paths = AuditPaths(db_path)
        last = 0
        for name, e in file_entries(paths, load_manifest(paths), strict=False):
            last = max(last, int(e.get("seq", 0)))
            yield name, e
        for entry in peek.audit_entries_after(paths.db, last):
            yield "database", dict[str, Any](entry)

    @staticmethod
    def verify(db_path: str | Path, progress: Callable[[str, int], None] | None = None,
               *, anchor: object = None) -> AuditVerifyResult:
        """Walk the files and the database's copy side by side and report the first
        entry that does not check out (see ``_audit_verify``). ``anchor``: an entry kept
        elsewhere (``AuditTrail.head(...)``, its dict or text, ``SEQ:HASH``, a hash, or a
        file holding one) that the chain must still contain."""
        from ._audit_verify import verify_entries, verify_files

        _check_db_path(db_path)
        if pg_dsn(db_path) is not None:
            with _server_backend(db_path) as backend:
                return verify_entries(_paged(backend, progress=progress), anchor=anchor)
        if _unupgraded_legacy(db_path):
            return _verify_legacy_copy(Path(db_path), progress, anchor)
        return verify_files(db_path, progress, anchor)

    @staticmethod
    def head(db_path: str | Path) -> AuditHead:
        """The newest entry of the chain (the database's copy, else the files)."""
        _check_db_path(db_path)
        if pg_dsn(db_path) is not None:
            with _server_backend(db_path) as backend:
                chain = AuditChain(backend)
                seq, h = chain.audit_tip()
                tail = chain.audit_entries(after_seq=seq - 1, limit=1) if seq else []
                return AuditHead(seq, h, tail[0]["ts"] if tail else None,
                                 Meta(backend).get_meta("store_id"))
        paths = AuditPaths(db_path)
        if paths.db.exists() and not paths.db.is_file():
            raise AuditError(f"{str(paths.db)!r} is not a store file: pass the store's database")
        last: dict[str, Any] | None = None
        for _name, e in AuditTrail.iter_entries(db_path):
            last = e
        store_id = peek.meta_value(paths.db, "store_id")
        tip = peek.audit_tip(paths.db)  # the database's copy knows the newest even past the files
        if tip is not None and (last is None or int(last["seq"]) < tip[0]):
            return AuditHead(tip[0], tip[1], None, store_id)
        if last is None:
            return AuditHead(0, GENESIS, None, store_id)
        return AuditHead(int(last["seq"]), str(last["hash"]), last.get("ts"), store_id)

    @staticmethod
    def repair(db_path: str | Path, backend: Backend, *, force: bool = False) -> RepairReport:
        """Rebuild the JSONL files and manifest from the database's copy of the chain and
        the lines still on disk.

        A trail that verifies is left as it is (only missing entries are mirrored) unless
        ``force``; otherwise its files are set aside, never deleted, and rebuilt: entries
        the database holds in full from there, compacted ones (hash only) from any line
        on disk whose hash is the one the database keeps, 1.0.2's sealed files as they
        are. An entry no file holds any more is named in ``lost_entries`` (ranges) and
        left out, so verify keeps reporting it. The result says whether the trail
        verifies afterwards (``valid``) and, if not, why.
        """
        paths = AuditPaths(db_path)
        trail = AuditTrail(backend, db_path, salt="")
        if not force and AuditTrail.verify(db_path).valid:
            written = trail.mirror()
            return {"rebuilt_entries": 0, "mirrored_entries": written, "set_aside": [],
                    "salvaged_entries": 0, "lost_entries": [], "valid": True, "reason": None,
                    "status": "the trail verifies: nothing to repair"}
        with file_lock(paths.lock):
            try:
                old = load_manifest(paths)
            except AuditError:  # 1.0.2's records (if any) come back from its files
                old = sealed_part(db_path, upgrade_report(trail._meta)) or {"files": []}
            # 1.0.2's part exists only in its files: kept in place, listed first again
            legacy = [m for m in old["files"] if m.get("format") == LEGACY_AUDIT_FORMAT
                      and (paths.db.parent / str(m["file"])).is_file()]
            keep = {str(m["file"]) for m in legacy}
            with backend.read():  # one snapshot: no entry counted both ways, or neither
                full = {int(e["seq"]): e for e in trail._chain.audit_rows()}
                digests = trail._chain.audit_digests()
            need = {seq: h for seq, h, _c in digests if seq not in full}
            found = _salvage(paths, need, keep) if need else {}
            set_aside = _set_aside(paths, keep)
            with contextlib.suppress(Exception), backend.transaction():
                trail._meta.set_meta(MIRRORED_SEQ_KEY, None)
            entries = [full[seq] if seq in full else found[seq] for seq, _h, _c in digests
                       if seq in full or seq in found]
            manifest: dict[str, Any] = {"version": 1, "files": legacy, "active_week": None}
            if "legacy" in old:
                manifest["legacy"] = old["legacy"]
            if legacy:
                atomic_write_json(paths.manifest, manifest)
            trail._write_entries(manifest, None, None, entries)
        trail._record_mirrored(int(entries[-1]["seq"]) if entries else 0,
                               _digests([e for e in entries if int(e["seq"]) in full]))
        lost = _ranges(sorted(set(need) - set(found)))
        after = AuditTrail.verify(db_path)
        parts = ("rebuilt from the database's copy of the chain"
                 + (f" and {len(found)} entries the old files still held" if found else ""))
        if lost:
            parts = (f"rebuilt what could be; entries {ranges_text(lost)} cannot be: the "
                     "database keeps only their hashes once the files hold them, and no "
                     "audit file (set aside or not) holds text with those hashes any more")
        status = parts if after.valid else (
            f"{parts}; the trail does not verify: {after.reason} (entry "
            f"{after.chain_break_at} in {after.chain_break_file})")
        return {"rebuilt_entries": len(entries), "mirrored_entries": len(entries),
                "set_aside": set_aside, "salvaged_entries": len(found), "lost_entries": lost,
                "valid": after.valid, "reason": after.reason, "status": status}


_BODY = ("seq", "ts", "actor", "event", "data", "prev_hash")


class NamespaceAudit(AuditTrail):
    """A Store's trail as one namespace view writes to it: the very same trail (its
    pending entries, mirror state and counters are the parent's own attribute dict,
    shared, not copied), whose entries also carry the view's namespace (hashed field by
    field) and add one to the namespace's own count of entries, in their transaction."""

    __slots__ = ("namespace", "counter")

    def __init__(self, trail: AuditTrail, namespace: Mapping[str, object],
                 counter: str) -> None:
        self.__dict__ = trail.__dict__  # one trail, seen from a namespace
        self.namespace = dict(namespace)
        self.counter = counter

    def stage(self, event: str, data: Mapping[str, object], *, actor: str = "agent",
              counter: str | None = None) -> StagedEntry:
        return super().stage(event, {**data, "namespace": self.namespace}, actor=actor,
                             counter=self.counter)


def _body(e: Mapping[str, Any]) -> dict[str, Any]:
    return {k: e.get(k) for k in _BODY}


def _held(e: Mapping[str, Any], h: str) -> AuditEntry:
    """A file's line of a compacted entry as the chain's entry (its body, the hash the
    database keeps: the caller checked they match, so every field of the body is there)."""
    return AuditEntry(seq=e["seq"], ts=e["ts"], actor=e["actor"], event=e["event"],
                      data=e["data"], prev_hash=e["prev_hash"], hash=h)


def chain_entries(db_path: str | Path, backend: Backend, after_seq: int = 0,
                  limit: int | None = None) -> list[AuditEntry]:
    """The database's copy after ``after_seq``, every entry in full, oldest first: its
    full rows, and the text of compacted entries from the audit files, each checked
    against the hash the database keeps (a writer sealing a file meanwhile is read again).
    Raises AuditError at the first entry no file holds unchanged."""
    missing = 0
    for _attempt in range(3):
        try:
            return _chain_entries(AuditPaths(db_path), backend, after_seq, limit)
        except _Missing as exc:
            missing = exc.seq
    raise AuditError(
        f"entry {missing} of the audit chain cannot be read: the database keeps only its "
        "hash once mirrored, and the audit files do not hold it unchanged; check them with "
        "anneal-memory verify (audit-repair rebuilds what they still hold)")


class _Missing(Exception):
    def __init__(self, seq: int) -> None:
        super().__init__(seq)
        self.seq = seq


def _chain_entries(paths: AuditPaths, backend: Backend, after_seq: int,
                   limit: int | None) -> list[AuditEntry]:
    from ._audit_verify import file_entries

    with backend.read():  # one snapshot of both tables
        chain = AuditChain(backend)
        digests = chain.audit_digests(after_seq, limit)
        full = {int(e["seq"]): e for e in chain.audit_rows(after_seq, limit)}
    out: list[AuditEntry] = []
    files: Iterator[tuple[str, dict[str, Any]]] | None = None
    cur: tuple[str, dict[str, Any]] | None = None
    for seq, h, _compacted in digests:
        if seq in full:
            out.append(full[seq])
            continue
        if files is None:
            manifest = load_manifest(paths)
            first = digests[0][0]
            manifest = {**manifest, "files": [m for m in manifest["files"]
                                              if _int_or(m.get("last_seq"), first) >= first]}
            files = file_entries(paths, manifest, strict=False)
            cur = next(files, None)
        while cur is not None and cur[1]["seq"] < seq:
            cur = next(files, None)
        if cur is None or cur[1]["seq"] != seq or entry_hash(cur[1]) != h:
            raise _Missing(seq)
        out.append(_held(cur[1], h))
    return out


def _ranges(seqs: list[int]) -> list[list[int]]:
    """Sorted seqs as [first, last] runs."""
    out: list[list[int]] = []
    for s in seqs:
        if out and out[-1][1] == s - 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def ranges_text(ranges: list[list[int]]) -> str:
    """[first, last] runs as text: ``3, 7-9``."""
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def _file_text(path: Path) -> str:
    """A file's text for salvage: gzip (one member or more, or cut short: as much as can
    be read) or plain; undecodable bytes become replacement characters."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        out: list[bytes] = []
        while data:
            d = zlib.decompressobj(wbits=31)
            try:
                out.append(d.decompress(data))
            except zlib.error:
                break
            if not d.eof:
                break
            data = d.unused_data
        data = b"".join(out)
    return data.decode("utf-8", "replace")


def _salvage(paths: AuditPaths, need: Mapping[int, str], skip: set[str]) -> dict[int, dict[str, Any]]:
    """Entries the database keeps as hashes only, found in the audit files on disk (any
    of ``<stem>.audit*``, earlier set-aside copies too) by their hash."""
    import glob

    found: dict[int, dict[str, Any]] = {}
    prefix = paths.db.stem + ".audit"
    for f in sorted(paths.db.parent.glob(glob.escape(prefix) + "*")):
        if f.name in skip or f in (paths.lock, paths.manifest) or not f.is_file() \
                or f.name.startswith(paths.manifest.name):
            continue
        try:
            text = _file_text(f)
        except OSError:
            continue
        for line in text.splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            seq = e.get("seq") if isinstance(e, dict) else None
            if type(seq) is not int or seq not in need or seq in found:
                continue
            if entry_hash(e) == need[seq]:
                found[seq] = {**_body(e), "hash": need[seq]}
        if len(found) == len(need):
            break
    return found


def _set_aside(paths: AuditPaths, keep: set[str]) -> list[str]:
    """Rename the manifest, the active file and every sealed file (but ``keep``) to
    ``*.set-aside-<time>``: never deleted. Held under the file lock."""
    import glob

    set_aside: list[str] = []
    stamp = now_iso().replace(":", "").replace("+", "Z")[:17]
    for f in [paths.manifest, paths.active, *paths.db.parent.glob(
            glob.escape(paths.db.stem) + ".audit.*.jsonl.gz")]:
        if f.exists() and f.name not in keep:
            dest = f.with_name(f.name + f".set-aside-{stamp}")
            n = 1
            while dest.exists():
                n += 1
                dest = f.with_name(f.name + f".set-aside-{stamp}-{n}")
            os.replace(f, dest)
            set_aside.append(dest.name)
    if set_aside:
        fsync_dir(paths.db.parent)
    return set_aside


@contextlib.contextmanager
def _server_backend(location: Any) -> Iterator[Any]:
    from . import storage

    with storage.open(str(pg_dsn(location)), read_only=True) as db:
        yield db.connection


def _paged(backend: Backend, page: int = 5000,
           progress: Callable[[str, int], None] | None = None) -> Iterator[dict[str, Any]]:
    after, count = 0, 0
    chain = AuditChain(backend)
    with backend.read():
        while True:
            entries = chain.audit_entries(after_seq=after, limit=page)
            yield from (dict[str, Any](e) for e in entries)
            count += len(entries)
            if progress is not None:
                progress("database", count)
            if len(entries) < page:
                return
            after = int(entries[-1]["seq"])


def verify_database(backend: Backend, page: int = 5000) -> AuditVerifyResult:
    """Walk the chain a backend stores (the whole trail of a PostgreSQL store)."""
    from ._audit_verify import verify_entries

    return verify_entries(_paged(backend, page))


def _check_db_path(db_path: Any) -> None:
    """A store's path (str or path, no NUL) for the read side; anything else is refused."""
    if not isinstance(db_path, (str, os.PathLike)) or "\x00" in os.fspath(db_path):
        from .errors import ValidationError

        raise ValidationError(f"pass the path of the store's database (a str or a path), "
                              f"not {db_path!r:.60}")


def _unupgraded_legacy(db_path: str | Path) -> bool:
    """A store 1.0.2 wrote that no Store of ours has opened (so not upgraded yet)."""
    from .legacy.upgrade import is_legacy_store

    with peek.read_only(Path(db_path), immutable=True) as conn:
        if conn is None:  # not a database: the walk reports it
            return False
        try:
            return is_legacy_store(conn)
        except Exception:
            return False


def _verify_legacy_copy(db: Path, progress: Callable[[str, int], None] | None,
                        anchor: object) -> AuditVerifyResult:
    """Verify a 1.0.2 store's chain without writing to it: upgrade a copy (the database
    and its audit files, in a temporary folder) as opening it would, and walk that. The
    user's files are only read."""
    import glob
    import shutil
    import tempfile

    from . import storage
    from ._audit_verify import verify_files
    from .legacy import upgrade as legacy_upgrade

    with tempfile.TemporaryDirectory(prefix="anneal-verify-") as tmp:
        copy = Path(tmp) / db.name
        for p in db.parent.glob(glob.escape(db.stem) + ".*"):
            if p.is_file() and not p.name.endswith(".lock"):
                shutil.copy2(p, Path(tmp) / p.name)
        for suffix in ("-wal", "-shm"):
            side = db.with_name(db.name + suffix)
            if side.is_file():
                shutil.copy2(side, Path(tmp) / side.name)
        if not copy.exists():
            shutil.copy2(db, copy)
        # opening the copy upgrades it in place, as a Store's open would, and its trail
        # mirrors what the upgrade appended to the chain
        with storage.open(copy, legacy=legacy_upgrade,
                          compacted_entries=chain_entries) as database:
            AuditTrail(database.connection, copy,
                       salt=database.roles().meta.get_meta("audit_salt") or "").flush()
        return verify_files(copy, progress, anchor)
