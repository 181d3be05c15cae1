"""Does a recalled memory help? Outcome records, surfaced counts and worth reports.

Graduation shows a pattern was earned, not that it ever helped. This module only
records and reports; nothing in the library ranks, decays or retires anything from it.

- ``OutcomeLog``: ``<stem>.outcomes.jsonl``, append-only. One record per write-back
  for an *exposure* (one recall the harness made, under its own id): per surfaced
  item ``followed`` / ``ignored`` / ``not_applicable``, optionally the turn's outcome
  (``success`` / ``failure``), and the items it showed (``exposed``). Records for one
  exposure merge in file order, so a later record corrects an earlier one.
- ``fold_surfaced``: once per wrap, folds a harness's retrieval receipts into each
  crystal's ``surfaced_count``. Being shown is not being used, so it never re-heats.
- ``compute_worth``: per crystal (and per cited episode) how often it was retrieved
  on a turn that succeeded or failed, split by label; unlabelled exposures and pulls
  (``crystal get``) in columns of their own.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict, cast

from ._fileio import file_lock, sidecar_path
from ._inputs import storable_text
from .clock import parse_or_none as _parse_ts
from .clock import parse_timestamp, utcnow
from .clock import stamp as _stamp
from .crystal import CrystalStore
from .errors import SidecarError, ValidationError

OUTCOME_LOG_VERSION = 1
LABELS: tuple[str, ...] = ("followed", "ignored", "not_applicable")
OUTCOMES: tuple[str, ...] = ("success", "failure")
ITEM_KINDS: tuple[str, ...] = ("crystal", "episode")
FOLD_SKEW_SECONDS = 60
_MAX_REF = 256


class LabelEntry(TypedDict):
    """One labelled item of an outcome record."""

    kind: str
    ref: str
    label: str


class RefEntry(TypedDict):
    """One item an exposure showed."""

    kind: str
    ref: str


class _OutcomeParts(TypedDict):
    v: int
    exposure_id: str
    ts: str
    outcome: str | None
    items: list[LabelEntry]


class OutcomeRecord(_OutcomeParts, total=False):
    """One line of the outcome log (``exposed`` and ``pull`` only when set)."""

    exposed: list[RefEntry]
    pull: bool


class MergedExposure(TypedDict):
    """One exposure as :meth:`OutcomeLog.merged` folds its records: the last label of
    each (kind, ref), the last known outcome, the union of items shown, and whether it
    was a pull."""

    exposure_id: str
    outcome: str | None
    labels: dict[tuple[str, str], str]
    exposed: set[tuple[str, str]]
    pull: bool


class WorthDict(TypedDict):
    """:meth:`Worth.to_dict`."""

    kind: str
    ref: str
    success: int
    failure: int
    followed: int
    labels: dict[str, dict[str, int]]
    unlabelled: dict[str, int]
    pulled: int


class WorthReportDict(TypedDict):
    """:meth:`WorthReport.to_dict`."""

    crystals: dict[str, WorthDict]
    episodes: dict[str, WorthDict]
    exposures: int
    pulls: int
    lines_skipped: int


def outcome_log_path(db_path: str | Path) -> Path:
    """``<stem>.outcomes.jsonl`` beside the database."""
    return sidecar_path(db_path, ".outcomes.jsonl")


def _ref(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string, got {value!r}")
    storable_text(value, what)
    if len(value) > _MAX_REF or any(c in value for c in "\r\n\x00"):
        raise ValidationError(f"{what} must be one line of at most {_MAX_REF} characters")
    return value.strip()


@dataclass(frozen=True)
class ExposedRef:
    """One item a recall showed, judged or not: ``crystal`` name or ``episode`` id."""

    kind: str
    ref: str

    def __post_init__(self) -> None:
        if self.kind not in ITEM_KINDS:
            raise ValidationError(f"item kind must be crystal or episode, got {self.kind!r}")
        object.__setattr__(self, "ref", _ref(self.ref, "item ref"))

    @classmethod
    def parse(cls, spec: str) -> ExposedRef:
        """``crystal:NAME`` or ``episode:ID``, the CLI's ``--exposed`` form."""
        kind, sep, ref = (spec or "").partition(":")
        if not sep:
            raise ValidationError(f"bad item {spec!r}: write KIND:REF, e.g. crystal:retry_rule")
        return cls(kind.strip(), ref)


@dataclass(frozen=True)
class ItemLabel:
    """One surfaced item and what became of it: followed, ignored or not_applicable."""

    kind: str
    ref: str
    label: str

    def __post_init__(self) -> None:
        ExposedRef(self.kind, self.ref)
        if self.label not in LABELS:
            raise ValidationError(f"label must be one of {', '.join(LABELS)}, got {self.label!r}")
        object.__setattr__(self, "ref", self.ref.strip())

    @classmethod
    def parse(cls, spec: str) -> ItemLabel:
        """``crystal:NAME=followed``, the CLI's ``--item`` form."""
        head, sep, label = (spec or "").rpartition("=")
        if not sep:
            raise ValidationError(f"bad item {spec!r}: write KIND:REF=LABEL, e.g. crystal:x=followed")
        ref = ExposedRef.parse(head)
        return cls(ref.kind, ref.ref, label.strip())


class OutcomeLog:
    """The append-only outcome log. Appends hold a cross-process lock and are fsynced;
    reads skip (and count) a malformed or torn line instead of failing."""

    def __init__(self, path: Any) -> None:
        from . import tiers_db

        #: the Store (or scoped view) whose database holds the log, else None
        self.store = path if tiers_db.is_store(path) else None
        if self.store is not None:
            self.path = outcome_log_path(self.store.path)
            if self.path.is_file():
                tiers_db.import_outcome_log(self.store, self.path, self._read_file()[0])
            return
        p = Path(path)
        self.path = p if p.name.endswith(".jsonl") else outcome_log_path(p)

    def record(
        self,
        exposure_id: str,
        items: Sequence[ItemLabel | str] = (),
        *,
        outcome: str | None = None,
        exposed: Sequence[ExposedRef | str] = (),
        pull: bool = False,
        ts: datetime | None = None,
    ) -> OutcomeRecord:
        """Append what happened after one exposure; returns the record written.

        A record needs a labelled item or an outcome. Strings are parsed in the CLI
        forms (``crystal:NAME=followed``, ``crystal:NAME``).
        """
        eid = _ref(exposure_id, "exposure id")
        if outcome is not None and outcome not in OUTCOMES:
            raise ValidationError(f"outcome must be success, failure or None, got {outcome!r}")
        labels = {(i.kind, i.ref): i for i in
                  (x if isinstance(x, ItemLabel) else ItemLabel.parse(x) for x in items)}
        shown = {(e.kind, e.ref): e for e in
                 (x if isinstance(x, ExposedRef) else ExposedRef.parse(x) for x in exposed)}
        if not labels and outcome is None:
            raise ValidationError("an outcome record needs at least one labelled item or an outcome")
        rec: OutcomeRecord = {
            "v": OUTCOME_LOG_VERSION, "exposure_id": eid, "ts": _stamp(ts), "outcome": outcome,
            "items": [{"kind": i.kind, "ref": i.ref, "label": i.label} for i in labels.values()],
        }
        if shown:
            rec["exposed"] = [{"kind": e.kind, "ref": e.ref} for e in shown.values()]
        if pull:
            rec["pull"] = True
        self._append(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
        return rec

    def record_pull(self, name: str, *, ts: datetime | None = None) -> OutcomeRecord:
        """Record that a crystal was read on purpose (``crystal get``): its own column."""
        return self.record(f"pull:{uuid.uuid4().hex}", [ItemLabel("crystal", name, "followed")],
                           pull=True, ts=ts)

    def _append(self, line: str) -> None:
        if self.store is not None:
            from .tiers_db import OUTCOMES

            self.store.items(OUTCOMES).append(json.loads(line))
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = line.encode("utf-8")
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            fd = os.open(str(self.path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError as exc:
                raise SidecarError(f"cannot append to the outcome log {self.path}: {exc}") from exc
            finally:
                os.close(fd)

    def read(self) -> tuple[list[OutcomeRecord], int]:
        """Every well-formed record in file order, and how many lines were skipped."""
        if self.store is not None:
            from .tiers_db import OUTCOMES

            # the collection holds only what ``record`` appended (or the log imported,
            # each line checked by ``_valid_record``)
            return [cast(OutcomeRecord, dict(i.value))
                    for i in self.store.items(OUTCOMES).list()], 0
        return self._read_file()

    def _read_file(self) -> tuple[list[OutcomeRecord], int]:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return [], 0
        records: list[OutcomeRecord] = []
        bad = 0
        for line in text.splitlines():
            if line.strip():
                rec = _valid_record(line)
                if rec is None:
                    bad += 1
                else:
                    records.append(rec)
        return records, bad

    def merged(self) -> tuple[dict[str, MergedExposure], int]:
        """Per exposure id: the last label of each item, the last known outcome, the
        union of exposed items, and whether it is a pull; plus skipped lines."""
        records, bad = self.read()
        out: dict[str, MergedExposure] = {}
        for rec in records:
            cur = out.setdefault(rec["exposure_id"], {
                "exposure_id": rec["exposure_id"], "outcome": None, "labels": {},
                "exposed": set(), "pull": False})
            for i in rec["items"]:
                cur["labels"][(i["kind"], i["ref"])] = i["label"]
            cur["exposed"] |= {(e["kind"], e["ref"]) for e in rec.get("exposed", [])}
            if rec["outcome"] is not None:
                cur["outcome"] = rec["outcome"]
            cur["pull"] = cur["pull"] or bool(rec.get("pull"))
        return out, bad


def _valid_record(line: str) -> OutcomeRecord | None:
    try:
        rec = json.loads(line)
        if not isinstance(rec, dict) or rec.get("v") != OUTCOME_LOG_VERSION:
            return None
        _ref(rec.get("exposure_id"), "exposure id")
        if rec.get("outcome") not in (None, *OUTCOMES):
            return None
        items, exposed = rec.get("items"), rec.get("exposed", [])
        if not isinstance(items, list) or not isinstance(exposed, list):
            return None
        for i in items:
            ItemLabel(i["kind"], i["ref"], i["label"])
        for e in exposed:
            ExposedRef(e["kind"], e["ref"])
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    return cast(OutcomeRecord, rec)  # checked above, field by field


# --------------------------------------------------------------------------- surfaced


@dataclass
class FoldResult:
    """What one ``fold_surfaced`` run counted."""

    previous_mark: str | None
    mark: str
    receipts_folded: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    unknown_names: dict[str, int] = field(default_factory=dict)
    lines_skipped: int = 0
    duplicates_skipped: int = 0


def _receipt_names(receipt: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for item in receipt.get("exposed") or []:
        name: Any
        if isinstance(item, str):
            name = item
        elif isinstance(item, dict):
            if item.get("kind", "crystal") != "crystal":
                continue
            name = item.get("ref", item.get("name", item.get("pattern")))
        else:
            continue
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def _read_receipts(sources: Iterable[str | Path | Mapping[str, object]]
                   ) -> tuple[list[Any], int]:
    receipts: list[Any] = []
    bad = 0
    for src in sources:
        if isinstance(src, Mapping):
            receipts.append(src)
            continue
        try:
            text = Path(src).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise ValidationError(f"receipt file {src} does not exist: check the path") from None
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                receipts.append(json.loads(line))
            except (ValueError, RecursionError):
                bad += 1
    return receipts, bad


def fold_surfaced(
    crystal_store: CrystalStore,
    receipts: Iterable[str | Path | Mapping[str, object]],
    *,
    now: datetime | None = None,
    skew_seconds: int = FOLD_SKEW_SECONDS,
) -> FoldResult:
    """Count how often recall surfaced each live crystal, from retrieval receipts.

    A receipt is a JSON object (one per line in a receipt file) with ``event_id``,
    ``ts`` and ``exposed`` (crystal names, or ``{"kind": "crystal", "ref": name}``).
    Receipts after the store's last mark and at least ``skew_seconds`` old are
    counted once (duplicate ``event_id`` skipped) and the mark moves to that cutoff,
    so folding twice never counts twice. ``last_activated_on`` is never changed.
    """
    cutoff = (parse_timestamp(now, field="now") if now is not None else utcnow()) - timedelta(
        seconds=skew_seconds)
    previous = crystal_store.surfaced_mark()
    prev_dt = _parse_ts(previous) if previous else None
    rows, bad = _read_receipts(receipts)
    result = FoldResult(previous_mark=previous, mark=_stamp(cutoff), lines_skipped=bad)
    counts: dict[str, int] = {}
    last_on: dict[str, str] = {}
    seen_ids: set[str] = set()
    for rec in rows:
        ts = _parse_ts(rec.get("ts")) if isinstance(rec, Mapping) else None
        event_id = rec.get("event_id") if isinstance(rec, Mapping) else None
        if ts is None or not isinstance(event_id, str):
            result.lines_skipped += 1
            continue
        if ts > cutoff or (prev_dt is not None and ts <= prev_dt):
            continue
        if event_id in seen_ids:
            result.duplicates_skipped += 1
            continue
        seen_ids.add(event_id)
        result.receipts_folded += 1
        for name in _receipt_names(rec):
            counts[name] = counts.get(name, 0) + 1
            day = ts.date().isoformat()
            last_on[name] = max(last_on.get(name, ""), day)
    if prev_dt is not None and cutoff <= prev_dt:
        result.mark = previous or result.mark
    result.unknown_names = crystal_store.record_surfaced(counts, last_on, mark=result.mark)
    result.counts = {k: v for k, v in counts.items() if k not in result.unknown_names}
    return result


# --------------------------------------------------------------------------- worth


def _outcome_counts() -> dict[str, int]:
    return {"success": 0, "failure": 0, "unknown": 0}


@dataclass
class Worth:
    """Counters for one crystal or episode. ``success`` / ``failure`` count labelled
    exposures whose outcome is known; unlabelled and pulled ones are kept apart."""

    kind: str
    ref: str
    success: int = 0
    failure: int = 0
    labels: dict[str, dict[str, int]] = field(
        default_factory=lambda: {label: _outcome_counts() for label in LABELS})
    unlabelled: dict[str, int] = field(default_factory=_outcome_counts)
    pulled: int = 0

    @property
    def followed(self) -> int:
        return sum(self.labels["followed"].values())

    def add_label(self, label: str, outcome: str | None) -> None:
        self.labels[label][outcome or "unknown"] += 1
        if outcome == "success":
            self.success += 1
        elif outcome == "failure":
            self.failure += 1

    def to_dict(self) -> WorthDict:
        """The counters as a JSON-ready dict."""
        return {"kind": self.kind, "ref": self.ref, "success": self.success,
                "failure": self.failure, "followed": self.followed,
                "labels": {k: dict(v) for k, v in self.labels.items()},
                "unlabelled": dict(self.unlabelled), "pulled": self.pulled}


@dataclass
class WorthReport:
    """Worth per crystal and (when asked) per cited episode. A report, not a ranking."""

    crystals: dict[str, Worth]
    episodes: dict[str, Worth]
    exposures: int
    pulls: int
    lines_skipped: int

    def to_dict(self) -> WorthReportDict:
        """The report as a JSON-ready dict (entries sorted by name)."""
        return {"crystals": {k: w.to_dict() for k, w in sorted(self.crystals.items())},
                "episodes": {k: w.to_dict() for k, w in sorted(self.episodes.items())},
                "exposures": self.exposures, "pulls": self.pulls,
                "lines_skipped": self.lines_skipped}


def compute_worth(
    log: OutcomeLog,
    crystal_store: CrystalStore | None = None,
    *,
    episodes: bool = False,
) -> WorthReport:
    """Fold the outcome log into worth counters.

    A crystal's exposure also credits the episodes it cites (once per episode per
    exposure; a direct label on that episode in the same exposure wins). Pulls count
    only in ``pulled`` and credit no episode.
    """
    merged, bad = log.merged()
    evidence: dict[str, list[str]] = {}
    if crystal_store is not None:
        evidence = {c.name: c.evidence_ids for c in crystal_store.list(status="all")}
    rows: dict[tuple[str, str], Worth] = {}

    def row(kind: str, ref: str) -> Worth:
        return rows.setdefault((kind, ref), Worth(kind, ref))

    pulls = 0
    for exp in merged.values():
        outcome = exp["outcome"]
        if exp["pull"]:
            pulls += 1
            for kind, ref in exp["labels"]:
                row(kind, ref).pulled += 1
            continue
        labelled: dict[tuple[str, str], str] = exp["labels"]
        unlabelled = [k for k in exp["exposed"] if k not in labelled]
        credited = {ref for kind, ref in labelled if kind == "episode"}
        for (kind, ref), label in labelled.items():
            row(kind, ref).add_label(label, outcome)
        for kind, ref in unlabelled:
            row(kind, ref).unlabelled[outcome or "unknown"] += 1
        if not episodes:
            continue
        judged: list[tuple[tuple[str, str], str | None]] = list(labelled.items())
        for (kind, ref), given in judged + [(k, None) for k in unlabelled]:
            if kind != "crystal":
                continue
            for eid in evidence.get(ref, []):
                if eid in credited:
                    continue
                credited.add(eid)
                if given is None:
                    row("episode", eid).unlabelled[outcome or "unknown"] += 1
                else:
                    row("episode", eid).add_label(given, outcome)
    return WorthReport(
        crystals={r: w for (k, r), w in rows.items() if k == "crystal"},
        episodes={r: w for (k, r), w in rows.items() if k == "episode"} if episodes else {},
        exposures=len(merged) - pulls, pulls=pulls, lines_skipped=bad,
    )
