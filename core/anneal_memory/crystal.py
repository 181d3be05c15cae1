"""The crystallized tier: proven patterns kept out of the always-loaded continuity.

Past a few dozen always-loaded patterns, they drown each other out. A Proven pattern
(2x and up, with cited evidence) can therefore *crystallize*: it leaves the continuity
file and lives in ``<stem>.crystal.json``, where recall finds it on cue
(``retrieve_patterns``). Only the cue index (one line per live pattern: its name and
one clause) is meant to stay loaded.

Crystallizing is an explicit act (wrap time, CLI or library), never automatic, and is
written to the store's audit trail when a store is given. Crystals are keyed by name;
crystallizing a name again merges into it. A retired crystal stays in the file for the
record and can be restored.

Recall never counts as use: ``retrieve_patterns`` changes nothing on disk. ``touch``
marks real use; ``record_surfaced`` (fed by ``worth.fold_surfaced``) counts exposure.
"""

from __future__ import annotations

import builtins
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypedDict, cast

from .clock import as_date
from .clock import stamp as utc_now
from .clock import today as clock_today
from .errors import EpisodeNotFoundError, ValidationError, WrapInProgressError
from .spores import JsonSidecar, check_choices, check_list_of_objects, require_choice
from .text import first_clause, is_meaningful, meaningful_words, query_terms
from .types import FieldMapping, PatternMatch

if TYPE_CHECKING:
    from ._unit import Facade

CRYSTAL_SCHEMA_VERSION = 1
#: Patterns below this level are still being earned in the continuity.
MIN_PROVEN_LEVEL = 2
RETIRE_KINDS: tuple[str, ...] = ("falsified", "superseded", "merged", "obsolete")
RECALL_MODES: tuple[str, ...] = ("strict", "prompt", "query")
PERMANENCE: tuple[str, ...] = ("timeless", "phase-specific")
ACTIVATION_MODES: tuple[str, ...] = ("just-in-time", "catastrophic")


class PatternLineLike(Protocol):
    """What ``continuity.parse.parse_pattern_lines`` yields for one pattern line."""

    @property
    def name(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def date(self) -> str | None: ...
    @property
    def evidence(self) -> list[tuple[str, str]]: ...
    @property
    def section(self) -> str: ...


class _CrystalFields(TypedDict):
    """The fields a crystal's stored row and its 1.0.2 mapping share (all but evidence)."""

    name: str
    text: str
    level: int
    section: str
    graduated_on: str | None
    crystallized_on: str
    last_activated_on: str
    surfaced_count: int
    last_surfaced_on: str | None
    status: str
    retirement: dict[str, object] | None
    permanence: str
    activation_mode: str
    tags: list[str]
    source: str | None
    notes: list[str]


class CrystalDict(_CrystalFields):
    """A crystal's stored fields (:meth:`Crystal.to_dict`, a row of the crystal sidecar):
    ``evidence`` as (episode id, note) objects."""

    evidence: list[dict[str, str]]


class CrystalMapping(_CrystalFields):
    """:meth:`Crystal.as_mapping`, 1.0.2's crystal: ``evidence`` the episode ids (the
    notes in ``evidence_notes``), ``explanation`` the text, ``status`` ``crystallized``
    or ``retired``."""

    evidence: list[str]
    explanation: str
    evidence_notes: list[dict[str, str]]


@dataclass(eq=True)
class Crystal(FieldMapping):
    """One crystallized pattern.

    As a mapping (``crystal["name"]``) it is the dict 1.0.2 gave: ``explanation`` is the
    text, ``evidence`` the episode ids, ``status`` ``crystallized`` or ``retired``.
    """

    name: str
    text: str
    level: int
    evidence: list[dict[str, str]] = field(default_factory=list)  # [{"id", "why"}]
    section: str = ""
    graduated_on: str | None = None
    crystallized_on: str = ""
    last_activated_on: str = ""
    surfaced_count: int = 0
    last_surfaced_on: str | None = None
    status: str = "live"
    retirement: dict[str, Any] | None = None
    permanence: str = "timeless"
    activation_mode: str = "just-in-time"
    tags: list[str] = field(default_factory=list)
    source: str | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Crystal:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})

    def to_dict(self) -> CrystalDict:
        """The stored fields as a dict (a row of the crystal sidecar)."""
        # asdict's keys are the dataclass's fields, which CrystalDict names (test_crystal
        # checks that the two agree)
        return cast(CrystalDict, asdict(self))

    @property
    def explanation(self) -> str:
        """1.0.2's name for the pattern's text."""
        return self.text

    def as_mapping(self) -> CrystalMapping:
        """The dict 1.0.2 gave for a crystal (see the class)."""
        d = asdict(self)
        d.update(explanation=self.text, evidence=self.evidence_ids,
                 evidence_notes=[dict(e) for e in self.evidence],
                 status="crystallized" if self.status == "live" else self.status)
        return cast(CrystalMapping, d)  # the fields and the four keys just set

    @property
    def evidence_ids(self) -> list[str]:
        return [e["id"] for e in self.evidence]

    def cue(self) -> str:
        """The cue-index line: the name and one clause of the pattern."""
        clause = first_clause(self.text, limit=100)
        if not clause or self.text.strip() == self.name or clause == self.name:
            return self.name
        return f"{self.name} — {clause}"

    def words(self) -> set[str]:
        """The meaningful words recall matches against: name, text and evidence notes."""
        whys = " ".join(e.get("why", "") for e in self.evidence)
        return meaningful_words(f"{self.name} {self.text} {whys}")


class CrystallizeResult(NamedTuple):
    """A crystallization out of the continuity: the crystal and the continuity left."""

    crystal: Crystal
    continuity: str
    removed_lines: list[str]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _audit(store: Facade | None, event: str, data: dict[str, Any], actor: str) -> None:
    if store is not None:
        store.audit_event(event, data, actor=actor)


class CrystalStore(JsonSidecar):
    """The crystal sidecar, ``<stem>.crystal.json``.

    ``path`` is the database path (the sidecar goes beside it) or the sidecar itself.
    """

    suffix = ".crystal.json"
    kind = "crystal"
    schema_version = CRYSTAL_SCHEMA_VERSION

    def empty(self) -> dict[str, Any]:
        return {"schema_version": CRYSTAL_SCHEMA_VERSION, "crystals": [], "surfaced_mark": None}

    def adopt(self, data: dict[str, Any]) -> dict[str, Any]:
        from .legacy.formats import adopt_crystals

        return adopt_crystals(data)

    def check(self, data: Mapping[str, object]) -> None:
        """Refuse a document whose ``crystals`` is not a list of objects."""
        check_list_of_objects(data, ("crystals",), self.path)

    # -- write

    def crystallize(
        self,
        name: str | None = None,
        *,
        level: int,
        text: str | None = None,
        explanation: str | None = None,
        evidence: Sequence[object] | None = None,
        permanence: str = "timeless",
        activation_mode: str = "just-in-time",
        tags: Sequence[str] | None = None,
        source: str | None = None,
        section: str = "",
        graduated_on: str | None = None,
        today: date | str | None = None,
        store: Facade | None = None,
        actor: str = "operator",
    ) -> Crystal:
        """Store a Proven pattern as a crystal (or merge into the one with this name).

        ``explanation`` is 1.0.2's name for ``text``; ``evidence`` takes episode ids,
        ``(id, why)`` pairs or ``{"id", "why"}`` dicts. Refuses a pattern below
        ``MIN_PROVEN_LEVEL``: only earned patterns leave the continuity. A merge keeps the
        higher level and the union of evidence; a retired crystal of the same name comes
        back live.
        """
        if not isinstance(name, str) or (text is not None and not isinstance(text, str)):
            raise ValidationError("a crystal's name and text must be strings")
        name = name.strip()
        if not name:
            raise ValidationError("a crystal needs a name: pass the pattern's name")
        if isinstance(level, bool) or not isinstance(level, int) or level < MIN_PROVEN_LEVEL:
            raise ValidationError(
                f"pattern {name!r} is at level {level!r}; only Proven patterns "
                f"({MIN_PROVEN_LEVEL}x and up) crystallize: let it graduate first"
            )
        if text is not None and explanation is not None and text != explanation:
            raise ValidationError("pass the pattern's text once: text= or explanation=")
        body = text if text is not None else explanation
        if body is not None and not isinstance(body, str):
            raise ValidationError("the crystal's explanation must be text")
        require_choice(permanence, PERMANENCE, "permanence")
        require_choice(activation_mode, ACTIVATION_MODES, "activation mode")
        labels = _tags(tags)
        cited = _evidence_rows(evidence or [])
        day = as_date(today).isoformat()
        with self.transaction() as data:
            row = _find(data, name)
            revived = False
            if row is None:
                crystal = Crystal(
                    name=name, text=(body or name).strip(), level=level, evidence=cited,
                    section=section, graduated_on=graduated_on, crystallized_on=day,
                    last_activated_on=day, permanence=permanence,
                    activation_mode=activation_mode, tags=labels, source=source,
                )
                data["crystals"].append(crystal.to_dict())
            else:
                crystal = Crystal.from_dict(row)
                revived = crystal.status != "live"
                known = set(crystal.evidence_ids)
                crystal.evidence += [e for e in cited if e["id"] not in known]
                crystal.level = max(crystal.level, level)
                crystal.text = (body or crystal.text).strip()
                crystal.section = section or crystal.section
                crystal.graduated_on = graduated_on or crystal.graduated_on
                crystal.tags = sorted(set(crystal.tags) | set(labels))
                crystal.source = source or crystal.source
                crystal.status, crystal.retirement = "live", None
                crystal.last_activated_on = day
                row.clear()
                row.update(crystal.to_dict())
        _audit(store, "crystallize", {
            "name_sha256": _sha(name), "text_sha256": _sha(crystal.text),
            "level": crystal.level, "evidence": crystal.evidence_ids,
            "merged": row is not None, "revived": revived,
        }, actor)
        return crystal

    def update(
        self, name: str, *, explanation: str | None = None, text: str | None = None,
        level: int | None = None, evidence: Sequence[object] | None = None,
        permanence: str | None = None, activation_mode: str | None = None,
        tags: Sequence[str] | None = None, source: str | None = None,
        add_note: str | None = None, today: date | str | None = None,
    ) -> Crystal:
        """Change a live crystal's fields; arguments left as None stay as they were.
        ``evidence`` replaces the list; ``add_note`` appends a dated note."""
        changes: dict[str, Any] = {}
        body = text if text is not None else explanation
        if body is not None:
            changes["text"] = require_text_value(body, "explanation")
        if level is not None:
            if isinstance(level, bool) or not isinstance(level, int) or level < MIN_PROVEN_LEVEL:
                raise ValidationError(f"level must be a whole number >= {MIN_PROVEN_LEVEL}")
            changes["level"] = level
        if evidence is not None:
            changes["evidence"] = _evidence_rows(evidence)
        if permanence is not None:
            changes["permanence"] = require_choice(permanence, PERMANENCE, "permanence")
        if activation_mode is not None:
            changes["activation_mode"] = require_choice(activation_mode, ACTIVATION_MODES,
                                                        "activation mode")
        if tags is not None:
            changes["tags"] = _tags(tags)
        if source is not None:
            changes["source"] = source or None
        with self.transaction() as data:
            row = _require(data, name, live=True)
            row.update(changes)
            if add_note is not None:
                row.setdefault("notes", []).append(
                    f"{as_date(today).isoformat()} {require_text_value(add_note, 'note')}")
            return Crystal.from_dict(row)

    def crystallize_line(
        self, line: PatternLineLike, *, earlier_evidence: Sequence[str] = (),
        today: date | str | None = None, store: Facade | None = None, actor: str = "operator",
    ) -> Crystal:
        """Crystallize one parsed continuity pattern line (it must cite evidence).

        ``earlier_evidence`` adds the episode ids that grounded its earlier rungs (the
        line itself only cites this wrap's episodes).
        """
        if line.level >= MIN_PROVEN_LEVEL and not line.evidence and not earlier_evidence:
            raise ValidationError(
                f"pattern {line.name!r} cites no evidence; a crystal must keep the episodes "
                "that earned it: add its [evidence: ID \"why\"] citations")
        return self.crystallize(
            line.name, text=line.name, level=line.level,
            evidence=[(e, "") for e in earlier_evidence] + list(line.evidence),
            section=line.section, graduated_on=line.date,
            today=today, store=store, actor=actor,
        )

    def crystallize_out(
        self,
        continuity: str,
        name: str,
        *,
        schema: Sequence[Mapping[str, object]] | None = None,
        today: date | str | None = None,
        store: Facade | None = None,
        actor: str = "operator",
    ) -> CrystallizeResult:
        """Crystallize the Proven pattern ``name`` out of a continuity text.

        With a ``store``, the episodes that grounded its earlier rungs join its
        evidence. Returns the crystal and the continuity without that pattern's
        lines; saving that text is the caller's step (the wrap or the CLI), so a refused save
        leaves the pattern where it was.
        """
        from .continuity.parse import parse_pattern_lines, pattern_key

        key = pattern_key(name)
        lines = [p for p in parse_pattern_lines(continuity, schema) if pattern_key(p.name) == key]
        if not lines:
            raise ValidationError(
                f"no pattern named {name!r} in the continuity: check the name against "
                "the pattern lines of its graduating sections"
            )
        best = max(lines, key=lambda p: p.level)
        earlier = _grounding_ids(store, key) if store is not None else []
        crystal = self.crystallize_line(best, earlier_evidence=earlier, today=today,
                                        store=store, actor=actor)
        return CrystallizeResult(crystal, remove_lines(continuity, [p.line for p in lines]),
                                 [p.line for p in lines])

    def crystallize_from_store(
        self, store: Facade, name: str, *, today: date | str | None = None,
        actor: str = "operator",
    ) -> CrystallizeResult:
        """Crystallize ``name`` out of the store's continuity and save what is left.

        Refused while a wrap is open (the wrap's save would put the line back). The
        crystal is written first, so a failed continuity save duplicates the pattern
        rather than losing it.
        """
        status = store.status()
        if getattr(status, "wrap_in_progress", False):
            raise WrapInProgressError(
                "a wrap is open: crystallize after it is saved or cancelled"
            )
        text = store.load_continuity()
        if not text:
            raise ValidationError("the store has no continuity yet: wrap at least once first")
        result = self.crystallize_out(text, name, schema=store.section_schema, today=today,
                                      store=store, actor=actor)
        store.save_continuity(result.continuity)
        return result

    def touch(self, name: str, *, today: date | str | None = None) -> Crystal:
        """Mark a live crystal as used today (recall alone never does this)."""
        with self.transaction() as data:
            row = _require(data, name, live=True)
            row["last_activated_on"] = as_date(today).isoformat()
            return Crystal.from_dict(row)

    def retire(
        self, name: str, *, kind: str = "obsolete", reason: str | None = None,
        today: date | str | None = None, store: Facade | None = None, actor: str = "operator",
    ) -> Crystal:
        """Take a crystal out of recall; it stays in the file and can be restored."""
        require_choice(kind, RETIRE_KINDS, "retire kind")
        with self.transaction() as data:
            row = _require(data, name, live=True)
            row["status"] = "retired"
            row["retirement"] = {"kind": kind, "reason": reason,
                                 "on": as_date(today).isoformat(), "at": utc_now()}
            crystal = Crystal.from_dict(row)
        _audit(store, "crystal_retire", {"name_sha256": _sha(name), "kind": kind}, actor)
        return crystal

    def restore(self, name: str, *, store: Facade | None = None, actor: str = "operator") -> Crystal:
        """Bring a retired crystal back into recall."""
        with self.transaction() as data:
            row = _require(data, name, live=False)
            row["status"], row["retirement"] = "live", None
            crystal = Crystal.from_dict(row)
        _audit(store, "crystal_restore", {"name_sha256": _sha(name)}, actor)
        return crystal

    def record_surfaced(
        self, counts: dict[str, int], last_on: dict[str, str], *, mark: str | None = None,
    ) -> dict[str, int]:
        """Add recall-exposure counts to live crystals; returns the names not found.

        Exposure is not use: ``last_activated_on`` is left alone. ``mark`` stores the
        fold's high-water mark in the same write.
        """
        unknown: dict[str, int] = {}
        with self.transaction() as data:
            for name, n in counts.items():
                row = _find(data, name)
                if row is None or row.get("status") != "live":
                    unknown[name] = n
                    continue
                row["surfaced_count"] = int(row.get("surfaced_count") or 0) + n
                day = last_on.get(name)
                if day and day > (row.get("last_surfaced_on") or ""):
                    row["last_surfaced_on"] = day
            if mark is not None:
                data["surfaced_mark"] = mark
        return unknown

    # -- read

    def get(self, name: str) -> Crystal | None:
        """The crystal with this name (live or retired), or None."""
        row = _find(self.load(), name)
        return Crystal.from_dict(row) if row is not None else None

    def list(self, *, status: str = "live") -> builtins.list[Crystal]:
        """Crystals by status (``live``, ``retired`` or ``all``), highest level first."""
        require_choice(status, ("live", "retired", "all"), "status")
        rows = [Crystal.from_dict(r) for r in self.load()["crystals"]]
        rows = [c for c in rows if status == "all" or c.status == status]
        return sorted(rows, key=lambda c: (-c.level, c.name))

    def active(self) -> builtins.list[Crystal]:
        """Live crystals (1.0.2's name)."""
        return self.list()

    def list_crystal(
        self, *, permanence: str | None = None, activation_mode: str | None = None,
        tag: str | None = None, activation: str | None = None,
        today: date | str | None = None,
    ) -> builtins.list[Crystal]:
        """Live crystals filtered as 1.0.2's ``list_crystal`` does. ``activation`` (hot,
        warm, cold, dormant) is computed from the days since the crystal was last used."""
        check_choices(permanence=(permanence, PERMANENCE),
                      activation_mode=(activation_mode, ACTIVATION_MODES),
                      activation=(activation, ACTIVATIONS))
        day = as_date(today)
        return [c for c in self.list()
                if (permanence is None or c.permanence == permanence)
                and (activation_mode is None or c.activation_mode == activation_mode)
                and (tag is None or tag in c.tags)
                and (activation is None or activation_of(c, day) == activation)]

    def surfaced_mark(self) -> str | None:
        mark = self.load().get("surfaced_mark")
        return mark if isinstance(mark, str) else None

    def cue_index(self) -> str:
        """One line per live crystal, name and one clause: the always-loaded part."""
        return "\n".join(c.cue() for c in sorted(self.list(), key=lambda c: c.name))


ACTIVATIONS: tuple[str, ...] = ("hot", "warm", "cold", "dormant")


def activation_of(crystal: Crystal, today: date) -> str:
    """hot (used within 7 days), warm (30), cold (90), dormant (longer or never)."""
    try:
        age = (today - as_date(crystal.last_activated_on or crystal.crystallized_on)).days
    except ValidationError:
        return "dormant"
    return "hot" if age <= 7 else "warm" if age <= 30 else "cold" if age <= 90 else "dormant"


def require_text_value(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be non-empty text, got {value!r}")
    return value.strip()


def _tags(tags: Sequence[str] | None) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str) or not all(isinstance(t, str) and t.strip() for t in tags):
        raise ValidationError("tags must be a list of non-empty strings")
    return sorted({t.strip() for t in tags})


def _evidence_rows(evidence: Iterable[object]) -> list[dict[str, str]]:
    """``[{"id", "why"}]`` in first-seen order; a repeated id keeps a non-empty why.
    Takes bare ids (1.0.2's form), ``(id, why)`` pairs or ``{"id", "why"}`` dicts."""
    if isinstance(evidence, str):
        raise ValidationError("evidence must be a list of episode ids, not one string")
    rows: dict[str, dict[str, str]] = {}
    for item in evidence:
        eid: object
        why: object
        if isinstance(item, str):
            eid, why = item, ""
        elif isinstance(item, dict):
            eid, why = item.get("id"), item.get("why", "")
        elif isinstance(item, (list, tuple)) and item:
            eid, why = item[0], item[1] if len(item) > 1 else ""
        else:
            eid, why = None, ""
        if not isinstance(eid, str) or not eid.strip():
            raise ValidationError(f"an evidence entry needs an episode id, got {item!r}")
        row = rows.setdefault(eid.strip(), {"id": eid.strip(), "why": ""})
        row["why"] = row["why"] or str(why or "")
    return list(rows.values())


def _grounding_ids(store: Facade, key: str) -> list[str]:
    """Episode ids that grounded each rung the store recorded for pattern ``key``."""
    from .continuity.parse import pattern_key

    history = getattr(store, "pattern_grounding", None)
    if not callable(history):
        return []
    ids: list[str] = []
    for name, rungs in history().items():
        if pattern_key(name) == key:
            ids += [e for rung in rungs for e in rung.get("ids", []) if e not in ids]
    return ids


def _find(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    row: dict[str, Any]
    for row in data["crystals"]:
        if row.get("name") == name:
            return row
    return None


def _require(data: dict[str, Any], name: str, *, live: bool) -> dict[str, Any]:
    row = _find(data, name)
    if row is None:
        raise ValidationError(f"no crystal named {name!r}: list crystals to see the names")
    if (row.get("status") == "live") != live:
        state = "retired" if live else "live"
        hint = "restore it first" if live else "nothing to restore"
        raise ValidationError(f"crystal {name!r} is {state}: {hint}")
    return row


def remove_lines(text: str, lines: Iterable[str]) -> str:
    """``text`` without the first occurrence of each of ``lines`` (whole lines)."""
    out = text.split("\n")
    for target in lines:
        for i, current in enumerate(out):
            if current.rstrip() == target.rstrip():
                del out[i]
                break
    return "\n".join(out)


# --------------------------------------------------------------------------- recall


def _doc_freq(docs: Sequence[set[str]]) -> dict[str, int]:
    df: dict[str, int] = {}
    for words in docs:
        for w in words:
            df[w] = df.get(w, 0) + 1
    return df


def _weight(word: str, df: dict[str, int], n_docs: int) -> float:
    """Inverse document frequency: a word few documents hold weighs more."""
    return math.log(1.0 + n_docs / df.get(word, 1))


def _qualifies(shared: set[str], name_words: set[str], df: dict[str, int],
               n_docs: int, strict: bool) -> bool:
    if not shared:
        return False
    if not strict:
        return True
    # In a corpus of four or more, a word in over half the documents is boilerplate.
    distinct = {w for w in shared if n_docs < 4 or df.get(w, 0) * 2 <= n_docs}
    return len(distinct) >= 2 or bool(distinct & name_words)


def _episode_words(store: Facade, ids: Sequence[str]) -> dict[str, set[str]]:
    """Meaningful words of each cited episode still standing (not gone, not replaced)."""
    get_many = getattr(store, "get_many", None)
    if callable(get_many):
        found: dict[str, Any] = dict(get_many(list(ids)))
    else:
        found = {}
        for eid in ids:
            try:
                found[eid] = store.get(eid)
            except (EpisodeNotFoundError, LookupError):
                continue
    out: dict[str, set[str]] = {}
    for eid, episode in found.items():
        content = getattr(episode, "content", None)
        if isinstance(content, str) and not getattr(episode, "superseded_by", None):
            out[eid] = meaningful_words(content)
    return out


def retrieve_patterns(
    crystal_store: CrystalStore,
    query: str,
    *,
    max_patterns: int = 3,
    mode: str = "strict",
    store: Facade | None = None,
) -> list[PatternMatch]:
    """Live crystals relevant to ``query``, best first.

    Two routes, summed: the query's words against each crystal's own words, weighted
    by how rare each word is among crystals; and, when ``store`` is given, the query
    against the episodes each crystal cites (the citation edge), so a question about
    what happened finds the pattern it taught even with no word in common with it.

    ``mode="strict"`` (alias ``"prompt"``, the default, for whole prompts) needs two
    distinctive shared words, or one that is in the pattern's name; ``mode="query"``
    (a deliberate question) takes a single shared word. Reads only: being recalled
    does not count as being used.
    """
    require_choice(mode, RECALL_MODES, "recall mode")
    if not isinstance(crystal_store, CrystalStore):
        raise ValidationError(f"crystal_store must be a CrystalStore (or None where allowed), "
                              f"not {type(crystal_store).__name__}: open one with "
                              "CrystalStore(path)")
    strict = mode != "query"
    words = {w for w in query_terms(query or "") if is_meaningful(w)}
    crystals = crystal_store.list()
    if not words or not crystals or max_patterns <= 0:
        return []

    docs = [c.words() for c in crystals]
    df = _doc_freq(docs)
    ep_words: dict[str, set[str]] = {}
    if store is not None:
        ep_words = _episode_words(store, sorted({e for c in crystals for e in c.evidence_ids}))
    ep_df, n_eps = _doc_freq(list(ep_words.values())), len(ep_words)

    matches: list[PatternMatch] = []
    for crystal, doc in zip(crystals, docs, strict=True):
        name_words = meaningful_words(crystal.name)
        shared = words & doc
        score, via, matched = 0.0, [], set()
        if _qualifies(shared, name_words, df, len(docs), strict):
            score += sum(_weight(w, df, len(docs)) * (1.5 if w in name_words else 1.0)
                         for w in shared)
            via.append("keyword")
            matched |= shared
        hit_eps, edge = [], 0.0
        for eid in crystal.evidence_ids:
            ep_shared = words & ep_words.get(eid, set())
            if _qualifies(ep_shared, set(), ep_df, n_eps, strict):
                hit_eps.append(eid)
                edge = max(edge, sum(_weight(w, ep_df, n_eps) for w in ep_shared))
                matched |= ep_shared
        if hit_eps:
            score += 0.8 * edge
            via.append("citation")
        if via:
            matches.append(PatternMatch(
                crystal.name, crystal.level, crystal.text, round(score, 4), tuple(via),
                sorted(matched), hit_eps, crystal.evidence_ids, tuple(crystal.tags),
                activation_of(crystal, clock_today()),
            ))
    matches.sort(key=lambda m: (-m.score, -m.level, m.name))
    return matches[:max_patterns]


def cue_index(crystal_store: CrystalStore | str | Path) -> str:
    """The cue index of a crystal store (or of the store at a path)."""
    cs = crystal_store if isinstance(crystal_store, CrystalStore) else CrystalStore(crystal_store)
    return cs.cue_index()
