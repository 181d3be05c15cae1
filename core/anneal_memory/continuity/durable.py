"""Durable facts: one fact per bullet under the durable section, kept by mechanism.

A line may end with cue words (``— cues: restaurant, dinner``). At save, every prior
line must still be there (compared by its fact part); one the wrap left out is put
back with a warning. Only ``[drop-durable: exact line]`` removes a line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..text import meaningful_words
from ..types import DurableFact
from .parse import BULLET_RE, ContinuityDoc, Section, parse_sections

CUES_RE = re.compile(r"\s+(?:—|–|--|\|)\s*cues:\s*(.*)$", re.IGNORECASE)
DROP_RE = re.compile(r"^\s*\[drop-durable:\s*(.*?)\s*\]\s*$", re.IGNORECASE)
PENDING_RE = re.compile(
    r"\b(until|only (?:at|when|after|once)|switch(?:es)? to|will (?:switch|change|move)|"
    r"pending|has not happened|not yet|cutover|scheduled|from next)\b", re.IGNORECASE)
IDENT_RE = re.compile(r"\b\w*\d\w*\b|\b\w+_\w+\b")


def fact_key(fact: str) -> str:
    return " ".join(fact.casefold().split()).rstrip(".")


def split_fact(line_text: str) -> tuple[str, list[str]]:
    """(fact, cues) of one bullet's text (bullet marker already removed)."""
    m = CUES_RE.search(line_text)
    if not m:
        return line_text.strip(), []
    cues = [c.strip() for c in re.split(r"[,;]", m.group(1)) if c.strip()]
    return line_text[: m.start()].strip(), cues


def facts_in_section(section: Section) -> list[DurableFact]:
    out: list[DurableFact] = []
    current: list[str] | None = None
    for raw in section.lines:
        if DROP_RE.match(raw):
            continue
        if BULLET_RE.match(raw):
            if current:
                out.append(_fact(current))
            current = [raw.rstrip()]
        elif current is not None and raw.strip() and raw[:1].isspace():
            current.append(raw.rstrip())
        else:
            if current:
                out.append(_fact(current))
            current = None
    if current:
        out.append(_fact(current))
    return out


def _fact(lines: list[str]) -> DurableFact:
    line = "\n".join(lines)
    text = BULLET_RE.sub("", lines[0]).strip()
    if len(lines) > 1:
        text = " ".join([text] + [x.strip() for x in lines[1:]])
    fact, cues = split_fact(text)
    return DurableFact(line, fact, cues, [x.strip() for x in lines[1:]])


def parse_durable_facts(text: str, schema: Sequence[Mapping[str, object]] | None = None) -> list[DurableFact]:
    """Every durable fact of ``text`` (no section is required)."""
    return durable_facts(parse_sections(text, schema, require=False))


def durable_facts(doc: ContinuityDoc) -> list[DurableFact]:
    """Every durable fact of an already parsed continuity."""
    return [f for s in doc.by_role("durable") for f in facts_in_section(s)]


def pending_lines(doc: ContinuityDoc | None) -> list[str]:
    """Durable lines of a parsed continuity that state a value due to change on a
    future event."""
    if doc is None:
        return []
    return [f.line for f in durable_facts(doc) if PENDING_RE.search(f.fact)]


def merge_durable(prior: ContinuityDoc | None, doc: ContinuityDoc,
                  schema: Sequence[Mapping[str, object]]) -> tuple[list[str], list[str]]:
    """Keep every durable line of the ``prior`` continuity (parsed; None for none or one
    that does not parse) in ``doc`` (mutated in place).

    Returns (warnings, dropped lines).
    """
    warnings: list[str] = []
    dropped: list[str] = []
    durable_spec = next((dict(s) for s in schema if s["role"] == "durable"), None)
    if durable_spec is None:
        return warnings, dropped
    sections = doc.by_role("durable")
    drops: list[str] = []
    for s in sections:
        kept = []
        for raw in s.lines:
            m = DROP_RE.match(raw)
            if m:
                drops.append(m.group(1))
            else:
                kept.append(raw)
        s.lines = kept
    prior_facts = [] if prior is None else durable_facts(prior)
    new_facts = [f for s in sections for f in facts_in_section(s)]
    new_keys = {fact_key(f.fact) for f in new_facts}
    drop_keys = {fact_key(split_fact(BULLET_RE.sub("", d).strip())[0]) for d in drops}
    drop_lines = {d.strip() for d in drops}
    missing: list[DurableFact] = []
    for f in prior_facts:
        if fact_key(f.fact) in new_keys:
            continue
        line_text = BULLET_RE.sub("", f.line.split("\n")[0]).strip()
        if f.line.strip() in drop_lines or line_text in drop_lines or fact_key(f.fact) in drop_keys:
            dropped.append(f.line.strip())
            continue
        missing.append(f)
    for d in drops:
        if d.strip() not in dropped and fact_key(split_fact(BULLET_RE.sub("", d).strip())[0]) not in {
                fact_key(split_fact(BULLET_RE.sub("", x).strip())[0]) for x in dropped}:
            warnings.append(f"[drop-durable: {d}] names no prior durable line; nothing was dropped")
    if missing:
        if not sections:
            sec = Section(str(durable_spec["heading"]), durable_spec, [])
            _insert_in_schema_order(doc, sec, schema)
            sections = [sec]
        target = sections[0]
        while target.lines and not target.lines[-1].strip():
            target.lines.pop()
        for f in missing:
            target.lines.append(f.line)
            warnings.append(f"durable fact re-inserted (the wrap left it out): {f.line.strip()}")
            fw = meaningful_words(f.fact)
            cues = {c.casefold() for c in f.cues}
            idents = set(IDENT_RE.findall(f.fact))
            for nf in new_facts:
                nw = meaningful_words(nf.fact)
                if fw and len(fw & nw) >= max(2, len(fw) // 2):
                    warnings.append(f"possible reword without [drop-durable: ...]: "
                                    f"{f.line.strip()!r} is near {nf.line.strip()!r}")
                    break
                if (cues & {c.casefold() for c in nf.cues}) or (idents & set(IDENT_RE.findall(nf.fact))):
                    warnings.append(f"re-inserted line may be superseded by {nf.line.strip()!r}: "
                                    f"{f.line.strip()!r}")
                    break
    return warnings, dropped


def _insert_in_schema_order(doc: ContinuityDoc, sec: Section, schema: Sequence[Mapping[str, object]]) -> None:
    order = [s["heading"] for s in schema]
    idx = order.index(sec.spec["heading"]) if sec.spec else len(order)
    for i, s in enumerate(doc.sections):
        if s.spec is not None and s.spec["heading"] in order and order.index(s.spec["heading"]) > idx:
            doc.sections.insert(i, sec)
            return
    doc.sections.append(sec)


def durable_chars(doc: ContinuityDoc) -> int:
    return sum(len(f"## {s.heading}\n{s.body}") + 2 for s in doc.by_role("durable"))
