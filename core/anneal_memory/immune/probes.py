"""Drift probes: declared things that must survive consolidation, checked on every save.

A pattern probe holds while the pattern stands Proven (2x or higher) at or above its
level, weakened below it, crystallized or lost when it left the file. A fact probe holds
while every word of the fact (and every number) stays together in one sentence, clause
(a ``;`` ends one) or bullet, is changed when they do with the negation flipped, lost
otherwise. These verdicts are 1.0.2's, measured call for call against it (tests/compat):

- a word is kept in an inflected form: a plural or third person ``-s`` (the stem at least
  three letters), ``-es``, ``-ed`` or ``-ing`` (the stem at least four), on either side,
  so "starts" is kept by "does not start"; an apostrophe splits a word ("o'clock" keeps
  "clock", "Friday's" keeps "Friday");
- a negation (not, no, never, cannot, without, nor, any ``n't``) counts where it governs
  a word of the fact: at most one other meaningful word between it and the next word of
  the fact. "does not start on Friday" is negated; "starts Friday noon, not Monday" is not.
- a sentence that keeps the fact as it was wins over one that flips it.

A probe that cannot be checked is unchecked; none ever blocks a save.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..clock import now_iso
from ..continuity.parse import parse_pattern_lines, parse_sections, pattern_key
from ..continuity.schema import heading_key
from ..errors import ValidationError
from ..storage.rows import ProbeRow
from ..text import is_meaningful, tokenize

if TYPE_CHECKING:
    from .._unit import Facade

#: words that negate what follows them (besides any word ending in n't)
NEGATIONS = frozenset({"not", "no", "never", "cannot", "without", "nor"})
#: meaningful words allowed between a negation and the fact's word it governs
NEGATION_REACH = 1
VERDICTS = ("held", "changed", "weakened", "crystallized", "lost", "unchecked")
#: a pattern probe guards a Proven pattern (2x and up)
MIN_PROVEN = 2


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
    if fact is not None and not _words(fact):
        raise ValidationError("fact has no words to check")
    if min_level is not None and (isinstance(min_level, bool) or not isinstance(min_level, int)
                                  or min_level < MIN_PROVEN):  # 1.0.2 refused below 2 too
        raise ValidationError(f"min_level must be a whole number >= {MIN_PROVEN}: a probe "
                              "guards a Proven pattern")
    if pattern is not None and min_level is None:
        from ..continuity.parse import pattern_levels

        min_level = max(MIN_PROVEN, pattern_levels(store.load_continuity(),
                                                   store.section_schema).get(pattern_key(pattern), 1))
    with store.transaction() as tx:
        taken = [int(p.id) for p in tx.wraps.probes() if str(p.id).isdigit()]
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
        notes = json.loads(store.repos.meta.get_meta("probe_notes") or "{}")
    except ValueError:
        return {}
    return notes if isinstance(notes, dict) else {}


def _id(value: Any) -> Any:
    """Probe ids are numbers (1.0.2's); an id of another form is kept as it is."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def list_probes(store: Facade) -> list[dict[str, Any]]:
    """Every declared probe with the verdict of the last save that checked it; also under
    1.0.2's keys (``name`` for the pattern, ``text`` for the fact, ``note``)."""
    notes = probe_notes(store)
    return [dict(p._asdict(), id=_id(p.id), name=p.pattern, text=p.fact,
                 note=notes.get(str(p.id)), retired_at=None)
            for p in store.repos.wraps.probes()]


def retire_probe(store: Facade, probe_id: int | str) -> bool:
    """Stop checking a probe; False when there is no such probe."""
    with store.transaction() as tx:
        gone = tx.wraps.delete_probe(str(probe_id)) > 0
        if gone:
            tx.audit.append("probe_retired", {"id": _id(str(probe_id))},
                            actor="operator")
    return gone


def drift_status(store: Facade) -> dict[str, Any]:
    """Each probe's verdict at the last save, and that save's worklist: the patterns it
    graduated with a validated citation (for the operator to judge truth)."""
    wraps = store.wrap_history(1)
    last = wraps[0] if wraps else None
    # the verdicts of the last save (a probe added since has none yet)
    rows = [r for r in list_probes(store) if last and r["last_wrap_id"] == last["id"]]
    try:
        graduated = json.loads(store.repos.meta.get_meta("last_graduated") or "[]")
    except ValueError:
        graduated = []
    return {
        "wrap_id": last["id"] if last else None,
        "wrapped_at": last.get("wrapped_at") if last else None,
        "probes": [{"id": r["id"], "kind": r["kind"],
                    "subject": r["pattern"] if r["kind"] == "pattern" else r["fact"],
                    "status": r["last_status"], "detail": r["last_detail"],
                    "since_wrap": r["last_wrap_id"]} for r in rows],
        "graduated": graduated,
    }


def _units(text: str) -> list[str]:
    """Sentences, clauses and bullets: the spans a fact's words must stay together in."""
    out = []
    for line in text.splitlines():
        for part in re.split(r"(?<=[.!?;])\s+", line):
            if part.strip():
                out.append(part)
    return out


def _is_negation(token: str) -> bool:
    return token in NEGATIONS or token.endswith("n't")


def _tokens(text: str) -> list[str]:
    """Word tokens with a negation kept whole ("doesn't") and any other word split at
    its apostrophes ("o'clock" -> "o", "clock")."""
    out: list[str] = []
    for tok in tokenize(text):
        if "'" in tok and not _is_negation(tok):
            out.extend(p for p in tok.split("'") if p)
        else:
            out.append(tok)
    return out


def _forms(word: str) -> set[str]:
    """The word and the stems it may be an inflection of: a fact word is kept by a word
    that shares one of these ("starts", "started", "starting" share "start")."""
    forms = {word}
    for suffix, least in (("ing", 4), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= least:
            forms.add(word[: -len(suffix)])
    return forms


def _words(text: str) -> list[str]:
    """The words a fact is checked by: meaningful words and numbers, negations apart."""
    return [w for w in _tokens(text)
            if not _is_negation(w) and (w.isdigit() or is_meaningful(w))]


def _negated(toks: list[str], fact_forms: list[set[str]]) -> bool:
    """Whether a negation governs one of the fact's words in ``toks``: the next word of
    the fact comes after it with at most NEGATION_REACH other meaningful words between."""
    def is_fact(tok: str) -> bool:
        f = _forms(tok)
        return any(f & forms for forms in fact_forms)

    for i, tok in enumerate(toks):
        if not _is_negation(tok):
            continue
        between = 0
        for nxt in toks[i + 1:]:
            if is_fact(nxt):
                return True
            if _is_negation(nxt) or not (nxt.isdigit() or is_meaningful(nxt)):
                continue
            between += 1
            if between > NEGATION_REACH:
                break
    return False


def check_fact(fact: str, text: str) -> tuple[str, str]:
    """held: every word in one sentence, clause or bullet; changed: every word kept but
    the negation differs; lost: any word (or number) missing from every sentence."""
    words = sorted(set(_words(fact)))
    fact_forms = [_forms(w) for w in words]
    want_neg = _negated(_tokens(fact), fact_forms)
    best, closest, flipped = -1, "", ""
    for unit in _units(text):
        toks = _tokens(unit)
        have: set[str] = set()
        for t in toks:
            have |= _forms(t)
        kept = sum(1 for forms in fact_forms if forms & have)
        if kept == len(words):
            if _negated(toks, fact_forms) == want_neg:
                return "held", unit.strip()
            flipped = flipped or unit.strip()
        elif kept > best:
            best, closest = kept, unit.strip()
    if flipped:
        return "changed", f"every word kept but the negation differs: {flipped!r}"
    missing = len(words) - max(best, 0)
    return "lost", (f"{missing} of {len(words)} words missing"
                    + (f"; closest: {closest!r}" if closest else ""))


def evaluate(store: Facade, text: str, schema: Sequence[dict[str, Any]], crystal_names: set[str],
             wrap_id: int | None) -> dict[str, Any]:
    """Check every probe against the saved text; store verdicts; return counts and ids."""
    probes = store.repos.wraps.probes()
    counts: dict[str, int] = {v: 0 for v in VERDICTS}
    results = []
    # the text is parsed only for the probes that need it, and once
    levels: dict[str, int] = {}
    if any(pr.kind == "pattern" for pr in probes):
        for p in parse_pattern_lines(text, schema):
            levels[p.key] = max(levels.get(p.key, 0), p.level)
    doc = None
    for pr in probes:
        try:
            if pr.kind == "pattern":
                key = pattern_key(pr.pattern or "")
                lvl = levels.get(key)
                need = max(MIN_PROVEN, int(pr.min_level or 1))
                if lvl is None or lvl < MIN_PROVEN:  # a probe guards a Proven pattern
                    status, detail = (("crystallized", "moved to the crystal store")
                                      if key in crystal_names
                                      else ("lost", "not in the file (at 2x or higher) or the "
                                            "crystal store"))
                elif lvl >= need:
                    status, detail = "held", f"at {lvl}x (needs {need}x)"
                else:
                    status, detail = "weakened", f"at {lvl}x (needs {need}x)"
            else:
                scope = text
                if pr.section:
                    doc = doc or parse_sections(text, schema, require=False)
                    secs = [s for s in doc.sections if heading_key(s.heading) == heading_key(pr.section)]
                    if not secs:
                        status, detail = "lost", f"section {pr.section!r} is gone"
                        scope = ""
                    else:
                        scope = "\n".join(s.body for s in secs)
                if scope:
                    status, detail = check_fact(pr.fact or "", scope)
        except Exception as exc:  # a probe never blocks a save
            status, detail = "unchecked", f"could not be checked: {exc}"
        counts[status] = counts.get(status, 0) + 1
        results.append({"id": _id(pr.id), "status": status})
        store.repos.wraps.update_probe(pr.id, status, detail, wrap_id)
    return {"counts": counts, "probes": results}
