"""Prospective memory: spores, the open loops an agent intends to close.

Episodes, the continuity and crystals are retrospective and only accrete. A spore is
the opposite kind of object: it opens, gets worked, and must close. It closes one of
two ways: *descend* (done, dropped, answered ... the loop simply ends) or *ascend*
(it became something: a project, a pattern, an episode; ``ref`` points at it).

A spore has a ``type`` (task, question, thought), a ``tier`` the agent sets (hot,
warm, cold, parked), a ``salience`` 0-3, and a *germination* computed at read time
from when it was last seen, so it never goes stale on disk:

    growing   seen less than 3 days ago
    resting   seen 3 to 7 days ago
    dormant   seen more than 7 days ago, or its ``next`` date has come
    parked    tier is parked: dormant on purpose

Closed spores leave the open set at once and are dropped from the file
``keep_closed_days`` after they closed: the store cleans itself.

The file is ``<stem>.spores.json`` beside the database. Every change is one
read-modify-write under an exclusive lock on ``<file>.lock``, written by atomic
replace, so concurrent writers lose nothing and a crash leaves the old or new file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, TypedDict, cast

from ._fileio import atomic_write_json, file_lock, sidecar_path
from ._inputs import json_text
from ._seam import unit_of
from .clock import as_date
from .clock import stamp as utc_now
from .errors import SidecarError, ValidationError
from .types import FieldMapping

SPORE_SCHEMA_VERSION = 1

SPORE_TYPES: tuple[str, ...] = ("task", "question", "thought")
SPORE_TIERS: tuple[str, ...] = ("hot", "warm", "cold", "parked")
GERMINATIONS: tuple[str, ...] = ("growing", "resting", "dormant", "parked")
MAX_SALIENCE = 3

#: How each type may close downward; ``composted`` (let go after neglect) fits all.
DESCEND_KINDS: dict[str, frozenset[str]] = {
    "task": frozenset({"done", "dropped", "composted"}),
    "question": frozenset({"answered", "mooted", "composted"}),
    "thought": frozenset({"explored", "dropped", "composted"}),
}
#: What each type may become when it closes upward.
ASCEND_KINDS: dict[str, frozenset[str]] = {
    "task": frozenset({"project", "thread"}),
    "question": frozenset({"episode", "pattern"}),
    "thought": frozenset({"essay", "pattern", "project"}),
}

_TIER_RANK = {t: i for i, t in enumerate(SPORE_TIERS)}
_GERM_RANK = {g: i for i, g in enumerate(GERMINATIONS)}
GROWING_DAYS = 3
RESTING_DAYS = 7


# --------------------------------------------------------------------------- helpers


def optional_date(value: date | str | None, what: str) -> str | None:
    """Validate an optional date argument; '' and None both mean "no date"."""
    if value is None or value == "":
        return None
    try:
        return as_date(value).isoformat()
    except ValidationError:
        raise ValidationError(f"{what} must be a date YYYY-MM-DD, got {value!r}") from None


def _optional_text(value: object, what: str) -> str | None:
    """An optional text field: None or '' mean "none"; anything else must be a string."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    return value.strip() or None


def require_text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


def require_choice(value: object, choices: tuple[str, ...] | frozenset[str], what: str) -> str:
    if value not in choices:
        raise ValidationError(f"unknown {what} {value!r}: use one of {', '.join(sorted(choices))}")
    return str(value)


def check_choices(**given: tuple[object, tuple[str, ...] | frozenset[str]]) -> None:
    """``require_choice`` for each optional filter given (``name=(value, choices)``)."""
    for what, (value, choices) in given.items():
        if value is not None:
            require_choice(value, choices, what.replace("_", " "))


def _require_salience(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SALIENCE:
        raise ValidationError(f"salience must be an integer 0-{MAX_SALIENCE}, got {value!r}")
    return value


class JsonSidecar:
    """A JSON document beside the database, changed only inside ``transaction()``.

    Shared by the spore and crystal stores. Reads take no lock (atomic replace means
    a reader sees a whole file); a corrupt or newer-schema file is refused, never
    silently re-initialised, so nothing recoverable is overwritten.
    """

    suffix = ".json"
    kind = "sidecar"
    schema_version = 1

    def __init__(self, path: Any) -> None:
        from . import tiers_db

        #: the Store (or scoped view) whose database holds the document, else None
        self.store = path if tiers_db.is_store(path) else None
        if self.store is not None:
            self.path = tiers_db.sidecar_of(self.store, self.suffix)
            tiers_db.import_sidecar(self.store, self.suffix, self._load_file)
            return
        if not isinstance(path, (str, os.PathLike)) or "\x00" in os.fspath(path):
            raise ValidationError(f"{type(self).__name__} takes a Store or the path of its "
                                  f"database (a str or a path without NUL), not {path!r:.60}")
        p = Path(path)
        # A database path gets its sidecar beside it; a sidecar path is used as is.
        self.path = p if p.name.endswith(self.suffix) else sidecar_path(p, self.suffix)

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def empty(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version}

    def load(self) -> dict[str, Any]:
        """The current document (an empty one when there is none yet)."""
        if self.store is not None:
            from . import tiers_db

            doc = tiers_db.load_doc(self.store, self.suffix)
            return self.empty() if doc is None else self._checked(doc)
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return self.empty()
        except OSError as exc:
            raise SidecarError(f"cannot read the {self.kind} file {self.path}: {exc}") from exc
        return self._parse(raw)

    def _load_file(self, path: Path) -> dict[str, Any]:
        try:
            return self._parse(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise SidecarError(f"cannot read the {self.kind} file {path}: {exc}") from exc

    def _parse(self, raw: str) -> dict[str, Any]:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise SidecarError(
                f"the {self.kind} file {self.path} is not valid JSON ({exc}); nothing was "
                "changed: repair it by hand or move it aside to start an empty one"
            ) from exc
        if not isinstance(data, dict):
            raise SidecarError(f"the {self.kind} file {self.path} must hold a JSON object")
        return self._checked(data)

    def _checked(self, data: dict[str, Any]) -> dict[str, Any]:
        version = data.get("schema_version", self.schema_version)
        if not isinstance(version, int) or version > self.schema_version:
            raise SidecarError(
                f"the {self.kind} file {self.path} has schema version {version!r}, newer than "
                f"this library reads ({self.schema_version}): upgrade anneal-memory"
            )
        base = self.empty()
        base.update(self.adopt(data))
        self.check(base)
        return base

    def adopt(self, data: dict[str, Any]) -> dict[str, Any]:
        """The document in this library's layout (subclasses read 1.0.2's layout here)."""
        return data

    def check(self, data: Mapping[str, object]) -> None:
        """Refuse a structurally wrong document (subclasses name their lists)."""

    @contextmanager
    def transaction(self) -> Iterator[dict[str, Any]]:
        """Load, let the caller change, and write back, all under the file lock.

        An exception inside the block writes nothing. Not re-entrant. A tier kept in the
        store's database changes inside one of its write transactions instead.
        """
        if self.store is not None:
            from . import tiers_db

            with unit_of(self.store):
                data = self.load()
                before = json.dumps(data, sort_keys=True)
                yield data
                data["schema_version"] = self.schema_version
                if json.dumps(data, sort_keys=True) != before:
                    json_text(data, f"the {self.kind} update")
                    tiers_db.save_doc(self.store, self.suffix, data)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.lock_path):
            data = self.load()
            before = json.dumps(data, sort_keys=True)
            yield data
            data["schema_version"] = self.schema_version
            after = json.dumps(data, sort_keys=True)
            if after != before:
                # refuse text no file can hold (a lone surrogate) before writing anything
                json_text(data, f"the {self.path.name} update")
                atomic_write_json(self.path, data)


def check_list_of_objects(data: Mapping[str, object], keys: tuple[str, ...], where: Path) -> None:
    """Refuse (SidecarError) a document whose ``keys`` are not each a list of objects."""
    for key in keys:
        rows = data.get(key)
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise SidecarError(
                f"{where}: {key!r} must be a list of objects; repair the file by hand"
            )


# --------------------------------------------------------------------------- spores


class SporeDict(TypedDict):
    """A spore's stored fields (:meth:`Spore.as_mapping`, a row of the spore sidecar)."""

    id: str
    type: str
    text: str
    tier: str
    salience: int
    domain: str
    seen: str
    next: str | None
    created: str
    pointer: str | None
    notes: list[str]
    status: str
    resolution: dict[str, object] | None


class SporeView(SporeDict):
    """:meth:`Spore.to_dict`: the stored fields and the computed ``germination``."""

    germination: str


@dataclass(eq=True)
class Spore(FieldMapping):
    """One open (or recently resolved) loop; also a mapping (``spore["id"]``), the dict
    1.0.2 returned."""

    id: str
    type: str
    text: str
    tier: str = "warm"
    salience: int = 0
    domain: str = ""
    seen: str = ""
    next: str | None = None
    created: str = ""
    pointer: str | None = None
    notes: list[str] = field(default_factory=list)
    status: str = "open"
    resolution: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Spore:
        known = {k: row[k] for k in cls.__dataclass_fields__ if k in row}
        spore = cls(**known)
        spore.notes = list(spore.notes or [])
        if spore.status == "closed":  # this library's name before 2.0
            spore.status = "resolved"
        return spore

    def as_mapping(self) -> SporeDict:
        """The stored fields as a dict (1.0.2's spore)."""
        # asdict's keys are the dataclass's fields, which SporeDict names (test_spores
        # checks that the two agree)
        return cast(SporeDict, asdict(self))

    def to_dict(self, today: date | str | None = None) -> SporeView:
        """The stored fields plus the computed ``germination``."""
        return {**self.as_mapping(), "germination": self.germination(today)}

    def germination(self, today: date | str | None = None) -> str:
        """growing / resting / dormant / parked, computed from ``seen`` and ``next``."""
        if self.tier == "parked":
            return "parked"
        day = as_date(today)
        if self.next and day >= as_date(self.next):
            return "dormant"
        try:
            age = (day - as_date(self.seen)).days
        except ValidationError:
            return "dormant"
        if age < GROWING_DAYS:
            return "growing"
        if age <= RESTING_DAYS:
            return "resting"
        return "dormant"

    def due(self, today: date | str | None = None) -> bool:
        """True when the spore asked to come back (``next``) on or before today."""
        return bool(self.next) and as_date(today) >= as_date(self.next)


def _rank(spores: list[Spore], today: date) -> list[Spore]:
    return sorted(
        spores,
        key=lambda s: (
            _TIER_RANK.get(s.tier, 9),
            -s.salience,
            _GERM_RANK.get(s.germination(today), 9),
            s.created,
            s.id,
        ),
    )


class SporeStore(JsonSidecar):
    """The spore sidecar, ``<stem>.spores.json``: add, read, work and close spores.

    ``path`` is the database path (the sidecar goes beside it) or the sidecar itself.
    """

    suffix = ".spores.json"
    kind = "spore"
    schema_version = SPORE_SCHEMA_VERSION

    def __init__(self, path: Any, *, keep_closed_days: int = 30) -> None:
        super().__init__(path)
        if keep_closed_days < 0:
            raise ValidationError("keep_closed_days must be 0 or more")
        self.keep_closed_days = keep_closed_days

    def empty(self) -> dict[str, Any]:
        return {"schema_version": SPORE_SCHEMA_VERSION, "last_id": 0, "open": [], "closed": []}

    def adopt(self, data: dict[str, Any]) -> dict[str, Any]:
        from .legacy.formats import adopt_spores

        return adopt_spores(data)

    def check(self, data: Mapping[str, object]) -> None:
        """Refuse a document whose spore lists or ``last_id`` are malformed."""
        check_list_of_objects(data, ("open", "closed"), self.path)
        if not isinstance(data.get("last_id"), int):
            raise SidecarError(f"{self.path}: 'last_id' must be an integer; repair it by hand")

    # -- plant

    def add(
        self,
        *,
        type: str,
        text: str,
        tier: str = "warm",
        salience: int = 0,
        domain: str = "",
        next: date | str | None = None,
        pointer: str | None = None,
        today: date | str | None = None,
    ) -> Spore:
        """Open a new spore and return it. Ids (``spore-001`` ...) are never reused."""
        kind = require_choice(type, SPORE_TYPES, "spore type")
        body = require_text(text, "text")
        tier = require_choice(tier, SPORE_TIERS, "tier")
        salience = _require_salience(salience)
        nxt = optional_date(next, "next")
        day = as_date(today).isoformat()
        with self.transaction() as data:
            data["last_id"] += 1
            spore = Spore(
                id=f"spore-{data['last_id']:03d}", type=kind, text=body, tier=tier,
                salience=salience, domain=_optional_text(domain, "domain") or "", seen=day,
                next=nxt, created=day, pointer=_optional_text(pointer, "pointer"),
            )
            data["open"].append(asdict(spore))
            self._clean(data, as_date(today))
        return spore

    # -- read

    def get(self, spore_id: str) -> Spore | None:
        """The spore with this id, open or closed (until it is cleaned), or None."""
        data = self.load()
        for row in data["open"] + data["closed"]:
            if row.get("id") == spore_id:
                return Spore.from_dict(row)
        return None

    def list_open(
        self,
        *,
        type: str | None = None,
        tier: str | None = None,
        domain: str | None = None,
        germination: str | None = None,
        today: date | str | None = None,
    ) -> list[Spore]:
        """Open spores, filtered, ranked by tier, then salience, then germination."""
        check_choices(spore_type=(type, SPORE_TYPES), tier=(tier, SPORE_TIERS),
                      germination=(germination, GERMINATIONS))
        day = as_date(today)
        spores = [Spore.from_dict(r) for r in self.load()["open"]]
        spores = [
            s for s in spores
            if (type is None or s.type == type)
            and (tier is None or s.tier == tier)
            and (domain is None or s.domain == domain)
            and (germination is None or s.germination(day) == germination)
        ]
        return _rank(spores, day)

    def list_closed(self) -> list[Spore]:
        """Closed spores not yet cleaned away, most recently closed first."""
        rows = self.load()["closed"]
        spores = [Spore.from_dict(r) for r in rows]
        return sorted(spores, key=lambda s: (s.resolution or {}).get("at", ""), reverse=True)

    def surface(self, *, today: date | str | None = None, limit: int | None = None,
                top_of_mind: bool = False) -> list[Spore]:
        """What deserves attention now: hot, growing or due spores, ranked; due first.

        Parked spores never surface; a resting or dormant spore surfaces only when it
        is hot or its ``next`` date has come. ``top_of_mind`` keeps only the first three.
        """
        if top_of_mind:
            limit = 3 if limit is None else min(limit, 3)
        day = as_date(today)
        pool = [
            s for s in (Spore.from_dict(r) for r in self.load()["open"])
            if s.tier != "parked"
            and (s.tier == "hot" or s.due(day) or s.germination(day) == "growing")
        ]
        due = _rank([s for s in pool if s.due(day)], day)
        rest = _rank([s for s in pool if not s.due(day)], day)
        ranked = due + rest
        return ranked if limit is None else ranked[: max(limit, 0)]

    # -- work

    def touch(self, spore_id: str, *, today: date | str | None = None) -> Spore:
        """Mark a spore seen today; a ``next`` date that has come is cleared (it fired)."""
        day = as_date(today)
        with self.transaction() as data:
            row = self._open_row(data, spore_id)
            row["seen"] = day.isoformat()
            if row.get("next") and day >= as_date(row["next"]):
                row["next"] = None
            return Spore.from_dict(row)

    def update(
        self,
        spore_id: str,
        *,
        text: str | None = None,
        type: str | None = None,
        tier: str | None = None,
        salience: int | None = None,
        domain: str | None = None,
        next: date | str | None = None,
        clear_next: bool = False,
        pointer: str | None = None,
        note: str | None = None,
        today: date | str | None = None,
        add_note: str | None = None,
    ) -> Spore:
        """Change an open spore's fields; arguments left as None stay as they were
        (``add_note`` is 1.0.2's name for ``note``).

        Updating does not count as seeing the spore: call ``touch`` for that, so
        germination keeps measuring real attention.
        """
        changes: dict[str, Any] = {}
        note = note if note is not None else add_note
        if text is not None:
            changes["text"] = require_text(text, "text")
        if type is not None:
            changes["type"] = require_choice(type, SPORE_TYPES, "spore type")
        if tier is not None:
            changes["tier"] = require_choice(tier, SPORE_TIERS, "tier")
        if salience is not None:
            changes["salience"] = _require_salience(salience)
        if domain is not None:
            changes["domain"] = _optional_text(domain, "domain") or ""
        if clear_next:
            changes["next"] = None
        elif next is not None:
            changes["next"] = optional_date(next, "next")
        if pointer is not None:
            changes["pointer"] = _optional_text(pointer, "pointer")
        with self.transaction() as data:
            row = self._open_row(data, spore_id)
            row.update(changes)
            if note is not None:
                row.setdefault("notes", []).append(
                    f"{as_date(today).isoformat()} {require_text(note, 'note')}"
                )
            return Spore.from_dict(row)

    # -- close

    def descend(
        self, spore_id: str, *, kind: str, note: str | None = None,
        today: date | str | None = None,
    ) -> Spore:
        """Close a spore downward: the loop ends (done, dropped, answered, ...)."""
        return self._close(spore_id, "descend", kind, None, note, today)

    def ascend(
        self, spore_id: str, *, kind: str, ref: str, note: str | None = None,
        today: date | str | None = None,
    ) -> Spore:
        """Close a spore upward: it became something; ``ref`` points at what it became."""
        return self._close(spore_id, "ascend", kind, require_text(ref, "ref"), note, today)

    def clean(self, *, today: date | str | None = None) -> int:
        """Drop closed spores past ``keep_closed_days``; returns how many were dropped."""
        with self.transaction() as data:
            return self._clean(data, as_date(today))

    # -- internals

    def _close(
        self, spore_id: str, direction: str, kind: str, ref: str | None,
        note: str | None, today: date | str | None,
    ) -> Spore:
        day = as_date(today)
        with self.transaction() as data:
            row = self._open_row(data, spore_id)
            allowed = (DESCEND_KINDS if direction == "descend" else ASCEND_KINDS)[row["type"]]
            require_choice(kind, allowed, f"{direction} kind for a {row['type']}")
            row["status"] = "resolved"
            row["resolution"] = {
                "direction": direction, "kind": kind, "ref": ref,
                "note": note, "on": day.isoformat(), "at": utc_now(),
            }
            data["open"].remove(row)
            data["closed"].append(row)
            self._clean(data, day)
            return Spore.from_dict(row)

    def _clean(self, data: dict[str, Any], today: date) -> int:
        cutoff = today - timedelta(days=self.keep_closed_days)
        keep = []
        for row in data["closed"]:
            closed_on = (row.get("resolution") or {}).get("on")
            try:
                stale = closed_on is not None and as_date(closed_on) < cutoff
            except ValidationError:
                stale = False
            if not stale:
                keep.append(row)
        dropped = len(data["closed"]) - len(keep)
        data["closed"] = keep
        return dropped

    def _open_row(self, data: dict[str, Any], spore_id: str) -> dict[str, Any]:
        row: dict[str, Any]
        for row in data["open"]:
            if row.get("id") == spore_id:
                return row
        for row in data["closed"]:
            if row.get("id") == spore_id:
                res = row.get("resolution") or {}
                raise ValidationError(
                    f"spore {spore_id} is already closed ({res.get('direction')} "
                    f"{res.get('kind')} on {res.get('on')}): add a new spore to reopen the loop"
                )
        raise ValidationError(f"no spore {spore_id!r}: list open spores to find its id")
