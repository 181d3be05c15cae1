"""The audit trail's files and what a walk over them reports: where a store's audit
files live (:class:`AuditPaths`), its manifest, and the results of verify and head.
Shared by the writer (``audit``) and the verifier (``_audit_verify``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._fileio import sidecar_path
from .errors import AuditError

#: how often verify reports progress within one file (entries)
PROGRESS_EVERY = 5000


@dataclass
class AuditVerifyResult:
    """Outcome of walking the whole chain. ``chain_break_at`` is the seq of the first
    entry that does not check out; ``chain_break_file`` the file (or ``database``,
    ``anchor``) where it was found."""

    valid: bool
    total_entries: int
    files_verified: int
    chain_break_at: int | None = None
    chain_break_file: str | None = None
    reason: str | None = None
    unmirrored_entries: int = 0
    files: list[str] = field(default_factory=list)
    anchor: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AuditHead:
    """The newest entry of a chain: keep ``seq`` and ``hash`` elsewhere as an anchor."""

    seq: int
    hash: str
    ts: str | None
    store_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"


class AuditPaths:
    def __init__(self, db_path: str | Path) -> None:
        self.db = Path(db_path)
        if not self.db.name:
            raise AuditError(f"{str(db_path)!r} names no store file: pass the path of the "
                             "store's database (e.g. ./memory.db)")
        self.active = sidecar_path(db_path, ".audit.jsonl")
        self.manifest = sidecar_path(db_path, ".audit.manifest.json")
        self.lock = sidecar_path(db_path, ".audit.lock")

    def sealed(self, week: str) -> Path:
        return sidecar_path(self.db, f".audit.{week}.jsonl.gz")

    def unused_sealed(self, week: str) -> Path:
        """The sealed file name for ``week``, never one that exists: a week sealed twice
        (the clock stepped back) gets ``<week>.2``, ``<week>.3``..."""
        target, n = self.sealed(week), 1
        while target.exists():
            n += 1
            target = self.sealed(f"{week}.{n}")
        return target


def load_manifest(paths: AuditPaths) -> dict[str, Any]:
    if not paths.manifest.exists():
        return {"version": 1, "files": [], "active_week": None}
    try:
        data = json.loads(paths.manifest.read_text("utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("files"), list) or not all(
                isinstance(f, dict) and isinstance(f.get("file"), str) for f in data["files"]):
            raise ValueError("bad shape")
        if any(Path(f["file"]).name != f["file"] or f["file"].startswith(".")
               for f in data["files"]):
            raise ValueError("it names a file outside the store's folder")
        return data
    except (OSError, ValueError) as exc:
        raise AuditError(
            f"the audit manifest {str(paths.manifest)!r} is unreadable ({exc}): "
            "AuditTrail.repair rebuilds it from the database's copy of the chain"
        ) from None
