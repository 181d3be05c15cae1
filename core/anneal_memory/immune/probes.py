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

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from .._seam import roles_of
from ..continuity.parse import parse_pattern_lines, parse_sections, pattern_key
from ..continuity.schema import SectionSpec, heading_key

# the probes' records, public here as they were (``X as X``: re-exported)
from ..probes_db import MIN_PROVEN as MIN_PROVEN
from ..probes_db import NEGATIONS as NEGATIONS
from ..probes_db import add_probe as add_probe
from ..probes_db import drift_status as drift_status
from ..probes_db import fact_words as _words
from ..probes_db import id_value as _id
from ..probes_db import is_negation as _is_negation
from ..probes_db import list_probes as list_probes
from ..probes_db import probe_notes as probe_notes
from ..probes_db import retire_probe as retire_probe
from ..probes_db import word_tokens as _tokens
from ..text import is_meaningful

if TYPE_CHECKING:
    from .._unit import Facade

#: meaningful words allowed between a negation and the fact's word it governs
NEGATION_REACH = 1
VERDICTS = ("held", "changed", "weakened", "crystallized", "lost", "unchecked")


class ProbeVerdict(TypedDict):
    """A probe's verdict at a save (its id a number, as 1.0.2's)."""

    id: int | str
    status: str


class DriftCheck(TypedDict):
    """What :func:`evaluate` found: how many probes got each verdict, and each one's."""

    counts: dict[str, int]
    probes: list[ProbeVerdict]


def _units(text: str) -> list[str]:
    """Sentences, clauses and bullets: the spans a fact's words must stay together in."""
    out = []
    for line in text.splitlines():
        for part in re.split(r"(?<=[.!?;])\s+", line):
            if part.strip():
                out.append(part)
    return out


def _forms(word: str) -> set[str]:
    """The word and the stems it may be an inflection of: a fact word is kept by a word
    that shares one of these ("starts", "started", "starting" share "start")."""
    forms = {word}
    for suffix, least in (("ing", 4), ("ed", 4), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= least:
            forms.add(word[: -len(suffix)])
    return forms


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


def evaluate(store: Facade, text: str, schema: Sequence[SectionSpec], crystal_names: set[str],
             wrap_id: int | None) -> DriftCheck:
    """Check every probe against the saved text; store verdicts; return counts and ids."""
    probes = roles_of(store).wraps.probes()
    counts: dict[str, int] = {v: 0 for v in VERDICTS}
    results: list[ProbeVerdict] = []
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
        roles_of(store).wraps.update_probe(pr.id, status, detail, wrap_id)
    return {"counts": counts, "probes": results}
