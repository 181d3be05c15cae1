"""Verifying the audit trail end to end: the JSONL files against the database's copy.

The walk goes through both copies in sequence order, side by side, and stops at the
first entry that does not check out, naming that entry:

- the files' own chain: every entry present once and in order from seq 1, each hash
  matching its content and linking to the entry before; a sealed week's manifest
  record matching the file;
- the database's own chain, checked the same way (an entry it keeps as its hash only,
  once mirrored, is checked through the files' entry);
- the two copies against each other, entry for entry and field for field (for an entry
  kept as its hash: the file entry's recomputed hash against it): an entry in one and
  not the other, or different in the two, is a break at that entry;
- the database's record of how far the files were mirrored: entries up to there
  must be in the files (cutting the end of the files is a break);
- optionally an *anchor* (an entry's seq and hash kept somewhere else, from
  ``anneal-memory audit head``): the chain must still hold that exact entry, which
  catches a rewrite made consistently in both copies.

What an interrupted writer leaves is not a break: a torn last line of the active
file (a crash mid-append), and an active file that still holds the week just sealed
(a crash between sealing and emptying it).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._audit_chain import GENESIS, entry_hash
from ._audit_files import AuditPaths, AuditVerifyResult, load_manifest
from .errors import AuditError
from .legacy.upgrade import LEGACY_AUDIT_FORMAT, LEGACY_TAIL_KEY, legacy_tail
from .legacy.upgrade import as_entry as legacy_entry
from .storage.driver import sqlite_driver
from .storage.sqlite_audit import chain_rows
from .storage.sqlite_peek import ChainReader

_FIELDS = ("seq", "ts", "actor", "event", "data", "prev_hash", "hash")
_HEX64 = re.compile(r"\b[0-9a-f]{64}\b")
_SEQ_HASH = re.compile(r"(\d+)\s*[:@ ]\s*([0-9a-fA-F]{64})")


class _Break(Exception):
    def __init__(self, seq: int, where: str, reason: str) -> None:
        super().__init__(reason)
        self.seq, self.where, self.reason = seq, where, reason


# ---------------------------------------------------------------------- anchors
@dataclass(frozen=True)
class Anchor:
    """An entry of the chain kept outside it: its hash, and its seq when known."""

    hash: str
    seq: int | None = None


def parse_anchor(value: Any) -> Anchor:
    """An anchor from ``audit head --json`` output (a dict, its text or a file holding
    it), ``SEQ:HASH``, or a bare 64-hex hash."""
    if isinstance(value, Anchor):
        return value
    if isinstance(value, Mapping):
        return _anchor_from(value)
    if hasattr(value, "to_dict") and hasattr(value, "hash"):  # AuditTrail.head()'s AuditHead
        return _anchor_from(value.to_dict())
    if isinstance(value, str) and (_HEX64.fullmatch(value.strip().lower())
                                   or _SEQ_HASH.fullmatch(value.strip())
                                   or value.strip().startswith("{")):  # audit head --json
        return _anchor_from_text(value, where="anchor")
    if isinstance(value, (str, Path)):
        path = Path(value)
        if not path.is_file():
            raise AuditError(f"the anchor {str(value)[:80]!r} is not a 64-hex hash, SEQ:HASH, "
                             "or an existing file holding the output of AuditTrail.head()")
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuditError(f"cannot read the anchor file {str(value)!r}: {exc}") from None
        return _anchor_from_text(text, where=f"anchor file {str(value)!r}")
    raise AuditError(f"an anchor must be a hash, SEQ:HASH, a dict or a file, not "
                     f"{type(value).__name__}")


def _anchor_from(d: Mapping[str, Any]) -> Anchor:
    h, seq = d.get("hash"), d.get("seq")
    if not isinstance(h, str) or not _HEX64.fullmatch(h.strip().lower()):
        raise AuditError("the anchor has no 64-hex 'hash': keep the output of "
                         "AuditTrail.head() (the CLI's audit head)")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or seq < 1):
        raise AuditError(f"the anchor's seq {seq!r} is not a whole number >= 1")
    return Anchor(h.strip().lower(), seq)


def _anchor_from_text(text: str, *, where: str) -> Anchor:
    t = text.strip()
    with contextlib.suppress(ValueError):
        data = json.loads(t)
        if isinstance(data, Mapping):
            return _anchor_from(data)
    m = _SEQ_HASH.fullmatch(t)
    if m:
        return Anchor(m.group(2).lower(), int(m.group(1)))
    hashes = _HEX64.findall(t.lower())
    if len(hashes) == 1:
        seq = re.search(r"\bseq\D{0,3}(\d+)", t)
        return Anchor(hashes[0], int(seq.group(1)) if seq else None)
    raise AuditError(f"the {where} holds no entry hash: pass the 64-hex hash, SEQ:HASH, or "
                     "the output of AuditTrail.head() (the CLI's audit head)")


# ---------------------------------------------------------------------- the two copies
class _DbCopy:
    """The database's copy of the chain, read in seq order with its own checks."""

    def __init__(self, db: Path) -> None:
        self.available = False
        self.mirrored = 0
        self._rows: Iterator[tuple[Any, ...]] = iter(())
        self._conn: Any = None
        self._reader: ChainReader | None = None
        self._next: dict[str, Any] | None = None
        self.prev_seq, self.prev_hash = 0, GENESIS
        sqlite3 = sqlite_driver()
        try:
            reader = ChainReader(db, LEGACY_TAIL_KEY)
            if not reader.available:
                return
            self.mirrored = reader.mirrored
            if reader.legacy_tail:  # an upgraded 1.0.2 store: its entries are in the files only
                self.prev_seq, self.prev_hash = legacy_tail(reader.legacy_tail)
            self._rows = reader.rows
            self._reader = reader
            self._conn = reader.conn
            self.available = True
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise _Break(1, "database", f"the database's copy of the chain cannot be read "
                         f"({exc})") from None
        self._advance()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()

    def refresh(self) -> None:
        """Read on past the end: entries committed since the walk began (a writer that
        mirrored them meanwhile put them in the files too)."""
        if self._conn is None or self._next is not None:
            return
        try:
            self._rows = chain_rows(self._conn, self.prev_seq)
        except sqlite_driver().DatabaseError as exc:
            raise _Break(self.prev_seq + 1, "database", f"the database's copy cannot be "
                         f"read past entry {self.prev_seq} ({exc})") from None
        self._advance()

    def _advance(self) -> None:
        try:
            r = next(self._rows, None)
        except sqlite_driver().DatabaseError as exc:
            raise _Break(self.prev_seq + 1, "database", f"the database's copy cannot be read "
                         f"past entry {self.prev_seq} ({exc})") from None
        if r is None:
            self._next = None
            return
        if r[7]:  # kept as its hash only: the text is in the files
            self._next = {"seq": int(r[0]), "hash": r[6], "compacted": True}
            return
        try:
            data = json.loads(r[4])
        except (TypeError, ValueError):
            raise _Break(int(r[0]), "database", f"the database's copy of entry {r[0]} is "
                         "malformed") from None
        self._next = dict(zip(_FIELDS, (int(r[0]), r[1], r[2], r[3], data, r[5], r[6])))

    def peek_seq(self) -> int | None:
        return None if self._next is None else int(self._next["seq"])

    def peek(self) -> dict[str, Any] | None:
        """The next entry as read, before its checks (None at the end)."""
        return self._next

    def take(self) -> dict[str, Any]:
        """The next entry, after checking it against the database's own chain."""
        e = self._next
        assert e is not None
        seq = e["seq"]
        if seq != self.prev_seq + 1:
            first = self.prev_seq + 1
            raise _Break(first, "database", (
                f"entries {first} to {seq - 1} are missing from the database's copy"
                if seq > first + 1 else f"entry {first} is missing from the database's copy"))
        if e.get("compacted"):  # its content and link are checked through the files' entry
            self.prev_seq, self.prev_hash = seq, e["hash"]
            self._advance()
            return e
        if e["hash"] != entry_hash(e):
            raise _Break(seq, "database", f"the database's copy of entry {seq} was altered: "
                         "its content does not match its hash")
        if e["prev_hash"] != self.prev_hash:
            raise _Break(seq - 1 if seq > 1 else 1, "database",
                         f"the database's copy of entry {seq - 1} was rewritten: its hash is "
                         f"not the one entry {seq} links to" if seq > 1 else
                         "the database's first entry does not start the chain")
        self.prev_seq, self.prev_hash = seq, e["hash"]
        self._advance()
        return e


def _read_lines(path: Path) -> tuple[list[str], bool]:
    """(lines, torn): the file's lines, and whether its last line lacks its newline."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = path.read_text("utf-8")
    return text.splitlines(), bool(text) and not text.endswith("\n")


def _sealed_meta_problem(meta: Mapping[str, Any],
                         got: list[dict[str, Any]]) -> tuple[int, str] | None:
    """(first seq concerned, what differs) when a sealed file is not what its manifest
    record says, else None."""
    if not got:
        return int(meta.get("first_seq") or 1), "it holds no entries"
    first, last = got[0]["seq"], got[-1]["seq"]
    bad: list[tuple[int, str]] = []
    if meta.get("first_seq") != first:
        bad.append((min(first, _int(meta.get("first_seq"), first)), "first_seq"))
    if meta.get("first_prev_hash") != got[0].get("prev_hash"):
        bad.append((first, "first_prev_hash"))
    if meta.get("last_seq") != last:
        bad.append((min(last, _int(meta.get("last_seq"), last)) + 1, "last_seq"))
    elif meta.get("last_hash") != got[-1].get("hash"):
        bad.append((last, "last_hash"))
    names = [b[1] for b in bad]
    if meta.get("entries") != len(got):
        names.append("entries")
        bad = bad or [(first, "entries")]
    if not bad:
        return None
    return min(b[0] for b in bad), "its manifest record differs in " + ", ".join(names)


def _progress_every() -> int:
    from . import _audit_files

    return int(_audit_files.PROGRESS_EVERY)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def file_entries(paths: AuditPaths, manifest: Mapping[str, Any], *,
                 progress: Callable[[str, int], None] | None = None,
                 strict: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, entry) for every entry the files hold, oldest first.

    ``strict``: raise :class:`_Break` on a missing, unreadable or malformed file or a
    sealed file its manifest record does not describe; otherwise skip what cannot be
    read (for listing the trail). A torn last line of the active file and the
    leftover copy of a week just sealed are skipped either way.
    """
    sealed = list(manifest["files"])
    files = [(paths.db.parent / str(m.get("file")), m) for m in sealed] + [(paths.active, None)]
    last_sealed: dict[int, Any] = {}
    count = 0
    follows = 0
    while files:
        path, meta = files.pop(0)
        if progress is not None:
            progress(path.name, count)
        if not path.exists():
            if meta is not None and strict:
                raise _Break(int(meta.get("first_seq") or 1), path.name,
                             "a sealed audit file listed in the manifest is missing")
            if meta is None and (more := _sealed_since(paths, sealed)) and follows < _FOLLOW:
                follows += 1
                sealed += more
                files = [(paths.db.parent / str(m["file"]), m) for m in more] + [(path, None)]
            continue
        try:
            lines, torn = _read_lines(path)
        except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError, ValueError) as exc:
            if strict:
                raise _Break(int((meta or {}).get("first_seq") or 1), path.name,
                             f"the file cannot be read ({exc})") from None
            continue
        if meta is None and (more := _sealed_since(paths, sealed)) and follows < _FOLLOW:
            # a writer sealed the active file while the walk read the files before it:
            # what was read of it may be emptied or newer; walk the new parts, then re-read
            follows += 1
            sealed += more
            files = [(paths.db.parent / str(m["file"]), m) for m in more] + [(path, None)]
            continue
        got: list[dict[str, Any]] = []
        leading = meta is None
        legacy = meta is not None and meta.get("format") == LEGACY_AUDIT_FORMAT
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
                if legacy:  # kept verbatim from 1.0.2: read in our shape
                    e = legacy_entry(e, line)
                e["seq"] = int(e["seq"])
                if not isinstance(e, dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                if meta is None and torn and n == len(lines):
                    break  # a crash mid-append: the entry is safe in the database
                if strict:
                    prev = got[-1]["seq"] if got else None
                    raise _Break(prev + 1 if prev else int((meta or {}).get("first_seq") or 1),
                                 path.name, f"line {n} is not an audit entry") from None
                continue
            if leading and e["seq"] in last_sealed and last_sealed[e["seq"]] == e.get("hash"):
                continue  # a rotation stopped before emptying the active file
            leading = False
            got.append(e)
            count += 1
            if progress is not None and count % _progress_every() == 0:
                progress(path.name, count)  # a long file keeps reporting as it goes
            yield path.name, e
        if meta is not None:
            problem = _sealed_meta_problem(meta, got)
            if problem and strict:
                raise _Break(problem[0], path.name, f"sealed file {path.name}: {problem[1]}")
            if meta is sealed[-1]:
                last_sealed = {e["seq"]: e.get("hash") for e in got}


_FOLLOW = 1000  # rotations followed in one walk before the active file is taken as read


def _sealed_since(paths: AuditPaths, sealed: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Parts the manifest lists now beyond ``sealed`` (which it must still begin with)."""
    try:
        now = load_manifest(paths)["files"]
    except AuditError:
        return []
    names = [m.get("file") for m in sealed]
    if len(now) <= len(sealed) or [m.get("file") for m in now[: len(sealed)]] != names:
        return []
    return [dict(m) for m in now[len(sealed):]]


def same_entry(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two copies of an entry agree on every field."""
    return all(a.get(k) == b.get(k) for k in _FIELDS)


def _differs(e: Mapping[str, Any], d: Mapping[str, Any]) -> bool:
    """Whether the file's entry ``e`` is not the database's ``d`` (kept in full, or as
    its hash only: then the file entry's recomputed hash must be that hash)."""
    if d.get("compacted"):
        return bool(e.get("hash") != d["hash"] or entry_hash(e) != d["hash"])
    return not same_entry(e, d)


# ---------------------------------------------------------------------- the walk
def verify_files(db_path: str | Path, progress: Callable[[str, int], None] | None = None,
                 anchor: Any = None) -> AuditVerifyResult:
    """Verify a SQLite store's trail: files, database copy and (optionally) an anchor.

    Writers are never blocked: a walk that finds a break while the trail moved under it
    (another process appended or rotated meanwhile) is walked again, up to a few times.
    """
    paths = AuditPaths(db_path)
    if paths.db.exists() and not paths.db.is_file():
        raise AuditError(f"{str(paths.db)!r} is not a store file (a folder, pipe or device): "
                         "pass the path of the store's database")
    want = parse_anchor(anchor) if anchor is not None else None
    for _attempt in range(_RETRIES):
        before = _fingerprint(paths)
        result = _walk_once(paths, progress, want)
        if result.valid or _fingerprint(paths) == before:
            return result
    return result


_RETRIES = 5


def _fingerprint(paths: AuditPaths) -> tuple[Any, ...]:
    """What changes when a writer appends, mirrors or rotates."""
    def stat(p: Path) -> tuple[int, int] | None:
        try:
            st = p.stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)

    wal = paths.db.with_name(paths.db.name + "-wal")
    return stat(paths.manifest), stat(paths.active), stat(paths.db), stat(wal)


def _walk_once(paths: AuditPaths, progress: Callable[[str, int], None] | None,
               want: Anchor | None) -> AuditVerifyResult:
    try:
        manifest = load_manifest(paths)
    except AuditError as exc:
        return AuditVerifyResult(False, 0, 0, 1, paths.manifest.name, str(exc))
    walk = _Walk(want)
    db: _DbCopy | None = None
    try:
        db = _DbCopy(paths.db)
        walk.run(file_entries(paths, manifest, progress=progress), db,
                 lambda after: _entries_after(paths, after))
    except _Break as b:
        return AuditVerifyResult(False, walk.total, walk.files_seen, b.seq, b.where, b.reason,
                                 walk.unmirrored, walk.file_names, anchor=walk.anchor_report())
    finally:
        if db is not None:
            db.close()
    return AuditVerifyResult(True, walk.total, walk.files_seen, None, None, None,
                             walk.unmirrored, walk.file_names, anchor=walk.anchor_report())


def _entries_after(paths: AuditPaths, seq: int) -> list[tuple[str, dict[str, Any]]]:
    """The files' entries after ``seq`` as they are now (re-read: a writer appended or
    sealed meanwhile); none when they cannot be read whole at this moment."""
    try:
        return [(n, e) for n, e in file_entries(paths, load_manifest(paths))
                if int(e["seq"]) > seq]
    except (_Break, AuditError, OSError, ValueError):
        return []


def verify_entries(entries: Iterator[dict[str, Any]], anchor: Any = None) -> AuditVerifyResult:
    """Verify a chain held in one place (a server database's copy)."""
    walk = _Walk(parse_anchor(anchor) if anchor is not None else None)
    try:
        walk.run(iter(()), _ListCopy(entries))
    except _Break as b:
        return AuditVerifyResult(False, walk.total, 0, b.seq, b.where, b.reason, 0,
                                 ["database"], anchor=walk.anchor_report())
    return AuditVerifyResult(True, walk.total, 0, None, None, None, 0, ["database"],
                             anchor=walk.anchor_report())


class _ListCopy(_DbCopy):
    """A chain from any iterator of entries, checked like the database's copy."""

    def __init__(self, entries: Iterator[dict[str, Any]]) -> None:  # noqa: D107
        self.available = True
        self.mirrored = 0
        self._conn = None
        self.prev_seq, self.prev_hash = 0, GENESIS
        self._it = iter(entries)
        self._next = None
        self._advance()

    def _advance(self) -> None:
        e = next(self._it, None)
        self._next = None if e is None else {**e, "seq": int(e["seq"])}


class _Walk:
    def __init__(self, anchor: Anchor | None) -> None:
        self.anchor = anchor
        self.anchor_found: str | None = None
        self.total = 0
        self.unmirrored = 0
        self.prev_seq, self.prev_hash, self.prev_where = 0, GENESIS, ""
        self.file_names: list[str] = []
        self.seen_at: dict[int, str] = {}

    @property
    def files_seen(self) -> int:
        return len(self.file_names)

    def anchor_report(self) -> dict[str, Any] | None:
        if self.anchor is None:
            return None
        return {"seq": self.anchor.seq, "hash": self.anchor.hash,
                "matched": self.anchor_found == self.anchor.hash}

    def _check_anchor(self, e: Mapping[str, Any]) -> None:
        a = self.anchor
        if a is None:
            return
        if a.seq is None:
            if e["hash"] == a.hash:
                self.anchor_found = a.hash
        elif e["seq"] == a.seq:
            self.anchor_found = e["hash"]
            if e["hash"] != a.hash:
                raise _Break(a.seq, "anchor", (
                    f"entry {a.seq} no longer has the anchored hash {a.hash[:12]}... (it has "
                    f"{str(e['hash'])[:12]}...): the trail up to entry {a.seq} was rewritten"))

    def _link(self, e: Mapping[str, Any], where: str) -> None:
        seq = e["seq"]
        # a 1.0.2 entry's hash is computed from its line (it stores none): an altered one
        # shows as the next entry's broken link
        if e.get("format") != LEGACY_AUDIT_FORMAT and e.get("hash") != entry_hash(e):
            raise _Break(seq, where, f"entry {seq}'s content does not match its hash")
        if e.get("prev_hash") != self.prev_hash:
            if self.prev_seq == 0:
                raise _Break(seq, where, "the first entry does not start the chain")
            raise _Break(self.prev_seq, self.prev_where or where,
                         f"entry {self.prev_seq} was rewritten: its hash is not the one entry "
                         f"{seq} links to")

    def _accept(self, e: Mapping[str, Any], where: str) -> None:
        self._check_anchor(e)
        self.prev_seq, self.prev_hash, self.prev_where = e["seq"], e["hash"], where
        self.total += 1

    def run(self, files: Iterator[tuple[str, dict[str, Any]]], db: _DbCopy,
            reread: Callable[[int], list[tuple[str, dict[str, Any]]]] | None = None) -> None:
        """Walk the files' entries beside the database's copy. ``reread(seq)`` gives the
        entries the files hold after ``seq`` now: a writer that mirrored entries after
        the walk read the active file put them there, so they are read again rather than
        reported as gone."""
        self._walk_files(files, db)
        rereads = 0
        # entries after the files: only the database has them
        while db.available and db.peek_seq() is not None:
            nxt = db.peek() or {}
            if (reread is not None and rereads < _FOLLOW
                    and (nxt.get("compacted") or int(nxt["seq"]) <= db.mirrored)):
                rereads += 1
                more = reread(self.prev_seq)
                if more:
                    self._walk_files(iter(more), db)
                    continue
            d = db.take()
            seq = d["seq"]
            if seq <= db.mirrored:
                raise _Break(seq, self.prev_where or "files", (
                    f"entries {seq} to {db.mirrored} were mirrored to the files and are gone "
                    "from them (the trail was cut)") if seq < db.mirrored else
                    f"entry {seq} was mirrored to the files and is gone from them")
            if seq != self.prev_seq + 1:
                raise _Break(self.prev_seq + 1, "database",
                             f"entry {self.prev_seq + 1} is missing")
            if d.get("compacted"):
                raise _Break(seq, self.prev_where or "files", (
                    f"entry {seq} is missing from the files, and the database keeps only its "
                    "hash (it had been mirrored): its text is in no copy"))
            self._link(d, "database")
            self._accept(d, "database")
            self.unmirrored += 1
        self._final_anchor()

    def _walk_files(self, files: Iterator[tuple[str, dict[str, Any]]], db: _DbCopy) -> None:
        for name, e in files:
            if not self.file_names or self.file_names[-1] != name:
                self.file_names.append(name)
            seq = e["seq"]
            # entries the database holds below this one must have come first in the files
            while db.available and (db.peek_seq() or seq) < seq:
                d = db.take()
                if d["seq"] > self.prev_seq:
                    raise _Break(d["seq"], name, f"entry {d['seq']} is in the database's copy "
                                 "but missing from the files (removed or out of order)" + (
                                     "; the database keeps only its hash, so its text is in "
                                     "no copy" if d.get("compacted") else ""))
            if seq <= self.prev_seq:
                raise _Break(seq, name, f"entry {seq} appears twice" if seq in self.seen_at
                             else f"entry {seq} is out of order (after entry {self.prev_seq})")
            if seq > self.prev_seq + 1:
                first = self.prev_seq + 1
                raise _Break(first, name, f"entry {first} is missing from the files" +
                             (" (the trail must start at entry 1)" if first == 1 else ""))
            if db.available and e.get("format") != LEGACY_AUDIT_FORMAT:  # 1.0.2's: files only
                if db.peek_seq() is None:
                    db.refresh()
                if db.peek_seq() != seq:
                    raise _Break(seq, name, f"entry {seq} is in the files but not in the "
                                 "database's copy (removed from the database)")
                d = db.take()
                if _differs(e, d):
                    # the database's copy passed its own chain checks in take()
                    file_ok = (e.get("hash") == entry_hash(e)
                               and e.get("prev_hash") == self.prev_hash)
                    raise _Break(seq, name, f"entry {seq} differs between the file and the "
                                 "database's copy: " + (
                                     "the file's entry was altered" if not file_ok else
                                     "one of them was rewritten with a new hash"))
            self._link(e, name)
            self.seen_at[seq] = name
            self._accept(e, name)

    def _final_anchor(self) -> None:
        a = self.anchor
        if a is None or self.anchor_found == a.hash:
            return
        if a.seq is not None and a.seq > self.prev_seq:
            raise _Break(self.prev_seq + 1, "anchor", (
                f"the trail ends at entry {self.prev_seq}, before the anchored entry {a.seq}: "
                "entries were removed"))
        raise _Break(a.seq or 1, "anchor", f"no entry has the anchored hash {a.hash[:12]}...: "
                     "the trail was rewritten")
