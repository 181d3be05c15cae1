"""Drift probes: declared things that must survive consolidation, checked on every save.

A pattern probe holds while the pattern stands at or above its level; a fact probe holds
while every word of the fact stays together in one sentence or bullet. Verdicts: held,
changed (words kept, negation flipped), weakened, crystallized, lost, unchecked.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..clock import now_iso
from ..continuity.parse import parse_pattern_lines, parse_sections, pattern_key
from ..continuity.schema import heading_key
from ..errors import ValidationError
from ..text import tokenize

if TYPE_CHECKING:
    from ..store import Store

NEGATIONS = frozenset({"not", "no", "never", "none", "cannot", "can't", "don't", "doesn't",
                       "isn't", "won't", "without", "nor", "neither", "aren't", "wasn't"})
VERDICTS = ("held", "changed", "weakened", "crystallized", "lost", "unchecked")


def add_probe(store: Store, *, pattern: str | None = None, min_level: int | None = None,
              fact: str | None = None, section: str | None = None) -> str:
    if (pattern is None) == (fact is None):
        raise ValidationError("a drift probe needs exactly one of pattern= or fact=")
    for name, value in (("pattern", pattern), ("fact", fact), ("section", section)):
        if value is not None and not isinstance(value, str):
            raise ValidationError(f"{name} must be a string")
    if pattern is not None and not pattern.strip():
        raise ValidationError("pattern name is empty")
    if fact is not None and len([w for w in tokenize(fact)]) == 0:
        raise ValidationError("fact has no words to check")
    if min_level is not None and (isinstance(min_level, bool) or not isinstance(min_level, int)
                                  or min_level < 1):
        raise ValidationError("min_level must be a whole number >= 1")
    if pattern is not None and min_level is None:
        from ..continuity.parse import pattern_levels

        min_level = pattern_levels(store.load_continuity(), store.section_schema).get(
            pattern_key(pattern), 1)
    pid = "p-" + secrets.token_hex(4)
    with store._write():
        store.backend.insert_probe({"id": pid, "kind": "pattern" if pattern else "fact",
                                    "pattern": pattern, "min_level": min_level, "fact": fact,
                                    "section": section, "created_at": now_iso()})
        store.audit_trail.append("probe_added", {"id": pid, "kind": "pattern" if pattern else "fact"},
                                 actor="operator")
    return pid


def list_probes(store: Store) -> list[dict[str, Any]]:
    """Every declared probe with the verdict of the last save that checked it."""
    return store.backend.probes()


def _units(text: str) -> list[str]:
    """Sentences and bullets: the spans a fact's words must stay together in."""
    out = []
    for line in text.splitlines():
        for part in re.split(r"(?<=[.!?])\s+", line):
            if part.strip():
                out.append(part)
    return out


def check_fact(fact: str, text: str) -> tuple[str, str]:
    words = [w for w in tokenize(fact) if w not in NEGATIONS]
    want_neg = any(w in NEGATIONS for w in tokenize(fact))
    best = 0.0
    for unit in _units(text):
        toks = tokenize(unit)
        have = set(toks)
        share = sum(1 for w in words if w in have) / max(1, len(words))
        if share == 1.0:
            neg = any(w in NEGATIONS for w in toks)
            if neg != want_neg:
                return "changed", "every word kept but the negation flipped"
            return "held", "all words in one sentence or bullet"
        best = max(best, share)
    if best >= 0.5:
        return "weakened", f"{round(best * 100)}% of the words remain together"
    return "lost", "the fact's words are no longer together"


def evaluate(store: Store, text: str, schema: Sequence[dict[str, Any]], crystal_names: set[str],
             wrap_id: int | None) -> dict[str, Any]:
    """Check every probe against the saved text; store verdicts; return counts and ids."""
    probes = store.backend.probes()
    counts: dict[str, int] = {}
    results = []
    levels: dict[str, int] = {}
    for p in parse_pattern_lines(text, schema):
        levels[p.key] = max(levels.get(p.key, 0), p.level)
    for pr in probes:
        try:
            if pr["kind"] == "pattern":
                key = pattern_key(pr["pattern"] or "")
                lvl = levels.get(key)
                need = int(pr["min_level"] or 1)
                if lvl is None:
                    status, detail = (("crystallized", "moved to the crystal store")
                                      if key in crystal_names else ("lost", "pattern is gone"))
                elif lvl >= need:
                    status, detail = "held", f"at {lvl}x (needs {need}x)"
                else:
                    status, detail = "weakened", f"at {lvl}x (needs {need}x)"
            else:
                scope = text
                if pr.get("section"):
                    doc = parse_sections(text, schema, require=False)
                    secs = [s for s in doc.sections if heading_key(s.heading) == heading_key(pr["section"])]
                    if not secs:
                        status, detail = "lost", f"section {pr['section']!r} is gone"
                        scope = ""
                    else:
                        scope = "\n".join(s.body for s in secs)
                if scope:
                    status, detail = check_fact(pr["fact"] or "", scope)
        except Exception as exc:  # a probe never blocks a save
            status, detail = "unchecked", f"could not be checked: {exc}"
        counts[status] = counts.get(status, 0) + 1
        results.append({"id": pr["id"], "status": status})
        store.backend.update_probe(pr["id"], status, detail, wrap_id)
    return {"counts": counts, "probes": results}
