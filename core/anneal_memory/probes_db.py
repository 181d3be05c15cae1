"""The drift probes' records: declaring, listing and retiring probes, and the verdicts
of the last save, as the Store's own methods (``add_drift_probe``, ``list_drift_probes``,
...) and :mod:`.immune.probes` (which checks them on every save) use them. Kept below the
Store so its methods call down; ``anneal_memory.immune.probes`` re-exports every name."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypedDict

from ._seam import roles_of, unit_of
from .clock import now_iso
from .continuity.parse import pattern_key
from .errors import ValidationError
from .storage.rows import ProbeRow
from .text import is_meaningful, tokenize

if TYPE_CHECKING:
    from ._unit import Facade

#: words that negate what follows them (besides any word ending in n't)
NEGATIONS = frozenset({"not", "no", "never", "cannot", "without", "nor"})
#: a pattern probe guards a Proven pattern (2x and up)
MIN_PROVEN = 2


def is_negation(token: str) -> bool:
    return token in NEGATIONS or token.endswith("n't")


def word_tokens(text: str) -> list[str]:
    """Word tokens with a negation kept whole ("doesn't") and any other word split at
    its apostrophes ("o'clock" -> "o", "clock")."""
    out: list[str] = []
    for tok in tokenize(text):
        if "'" in tok and not is_negation(tok):
            out.extend(p for p in tok.split("'") if p)
        else:
            out.append(tok)
    return out


def fact_words(text: str) -> list[str]:
    """The words a fact is checked by: meaningful words and numbers, negations apart."""
    return [w for w in word_tokens(text)
            if not is_negation(w) and (w.isdigit() or is_meaningful(w))]


def add_probe(store: Facade, *, pattern: str | None = None, min_level: int | None = None,
              fact: str | None = None, section: str | None = None,
              note: str | None = None) -> int:
    """Declare a probe; returns its id, a number counted from 1 (as 1.0.2's)."""
    if (pattern is None) == (fact is None):
        raise ValidationError("a drift probe needs exactly one of pattern= or fact=")
    for name, value in (("pattern", pattern), ("fact", fact), ("section", section),
                        ("note", note)):
        if value is not None and not isinstance(value, str):
            raise ValidationError(f"{name} must be a string")
    if pattern is not None and not pattern.strip():
        raise ValidationError("pattern name is empty")
    if fact is not None and not fact_words(fact):
        raise ValidationError("fact has no words to check")
    if min_level is not None and (isinstance(min_level, bool) or not isinstance(min_level, int)
                                  or min_level < MIN_PROVEN):  # 1.0.2 refused below 2 too
        raise ValidationError(f"min_level must be a whole number >= {MIN_PROVEN}: a probe "
                              "guards a Proven pattern")
    if pattern is not None and min_level is None:
        from .continuity.parse import pattern_levels

        min_level = max(MIN_PROVEN, pattern_levels(store.load_continuity(),
                                                   store.section_schema).get(pattern_key(pattern), 1))
    with unit_of(store) as tx:
        taken = [int(p.id) for p in tx.wraps.probes() if p.id.isdigit()]
        pid = max(taken, default=0) + 1
        tx.wraps.insert_probe(ProbeRow(id=str(pid), kind="pattern" if pattern else "fact",
                                       pattern=pattern, min_level=min_level, fact=fact,
                                       section=section, created_at=now_iso()))
        if note:
            notes = probe_notes(store)
            notes[str(pid)] = note
            tx.meta.set_meta("probe_notes", json.dumps(notes, ensure_ascii=False))
        tx.audit.append("probe_added", {"id": pid, "kind": "pattern" if pattern else "fact"},
                        actor="operator")
    return pid


def probe_notes(store: Facade) -> dict[str, str]:
    """The notes probes were declared with (kept beside the probes, keyed by id)."""
    try:
        notes = json.loads(roles_of(store).meta.get_meta("probe_notes") or "{}")
    except ValueError:
        return {}
    return notes if isinstance(notes, dict) else {}


def id_value(value: str | int) -> int | str:
    """Probe ids are numbers (1.0.2's); an id of another form is kept as it is (the
    database keeps them as text)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


class DriftProbe(TypedDict):
    """A declared probe as ``list_drift_probes()`` gives it: its record and the verdict of
    the last save that checked it, also under 1.0.2's keys (``name`` for the pattern,
    ``text`` for the fact, ``note``; ``retired_at`` is always None: retired probes go)."""

    id: int | str
    kind: str
    pattern: str | None
    min_level: int | None
    fact: str | None
    section: str | None
    created_at: str
    last_status: str | None
    last_detail: str | None
    last_wrap_id: int | None
    name: str | None
    text: str | None
    note: str | None
    retired_at: None


def list_probes(store: Facade) -> list[DriftProbe]:
    """Every declared probe with the verdict of the last save that checked it; also under
    1.0.2's keys (``name`` for the pattern, ``text`` for the fact, ``note``)."""
    notes = probe_notes(store)
    return [DriftProbe(id=id_value(p.id), kind=p.kind, pattern=p.pattern,
                       min_level=p.min_level, fact=p.fact, section=p.section,
                       created_at=p.created_at, last_status=p.last_status,
                       last_detail=p.last_detail, last_wrap_id=p.last_wrap_id,
                       name=p.pattern, text=p.fact, note=notes.get(p.id),
                       retired_at=None)
            for p in roles_of(store).wraps.probes()]


def retire_probe(store: Facade, probe_id: int | str) -> bool:
    """Stop checking a probe; False when there is no such probe."""
    with unit_of(store) as tx:
        gone = tx.wraps.delete_probe(str(probe_id)) > 0
        if gone:
            tx.audit.append("probe_retired", {"id": id_value(str(probe_id))},
                            actor="operator")
    return gone


class ProbeVerdict(TypedDict):
    """One probe in ``drift_status()``: what it guards and its verdict at the last save."""

    id: int | str
    kind: str
    subject: str | None
    status: str | None
    detail: str | None
    since_wrap: int | None


class DriftStatus(TypedDict):
    """``drift_status()``: the last save (None before the first), each probe's verdict at
    it, and the patterns it graduated (as the save recorded them)."""

    wrap_id: int | None
    wrapped_at: str | None
    probes: list[ProbeVerdict]
    graduated: list[object]


def drift_status(store: Facade) -> DriftStatus:
    """Each probe's verdict at the last save, and that save's worklist: the patterns it
    graduated with a validated citation (for the operator to judge truth)."""
    wraps = store.wrap_history(1)
    last = wraps[0] if wraps else None
    # the verdicts of the last save (a probe added since has none yet)
    rows = [r for r in list_probes(store) if last and r["last_wrap_id"] == last["id"]]
    try:
        loaded = json.loads(roles_of(store).meta.get_meta("last_graduated") or "[]")
    except ValueError:
        loaded = []
    graduated: list[object] = loaded if isinstance(loaded, list) else []  # written as a list
    return {
        "wrap_id": last["id"] if last else None,
        "wrapped_at": last.get("wrapped_at") if last else None,
        "probes": [{"id": r["id"], "kind": r["kind"],
                    "subject": r["pattern"] if r["kind"] == "pattern" else r["fact"],
                    "status": r["last_status"], "detail": r["last_detail"],
                    "since_wrap": r["last_wrap_id"]} for r in rows],
        "graduated": graduated,
    }
