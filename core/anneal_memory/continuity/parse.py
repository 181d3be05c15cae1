"""Parsing a continuity text: its sections (matched to the schema) and its pattern lines.

A pattern line lives in a graduating section: ``- name | 2x (2026-04-01) [evidence: ID
"explanation"]``. Its identity is the text before its first ``| Nx`` marker; only the
evidence tag directly after that first marker counts for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import ContinuityValidationError
from .schema import DEFAULT_SCHEMA, heading_key

HEADING_RE = re.compile(r"^##(?!#)\s*(.*?)\s*#*\s*$")
MARKER_RE = re.compile(r"\|\s*(\d{1,9})x\b(?:\s*\((\d{4}-\d{2}-\d{2})\))?")
EVIDENCE_RE = re.compile(r"\[evidence:\s*([^\]]*)\]", re.IGNORECASE)
CITATION_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_-]*)\s*(?:\"([^\"]*)\"|“([^”]*)”)?")
CONTRADICTS_RE = re.compile(r"\[contradicts:\s*([^\]]+)\]", re.IGNORECASE)
NO_CONTRADICTS_RE = re.compile(r"\[no-contradicts\]", re.IGNORECASE)
PROVENANCE_RE = re.compile(r"\[provenance:\s*([^\]]*)\]", re.IGNORECASE)
MARKS = ("ungrounded", "needs-evidence", "carried-forward", "level-capped", "uncorroborated")
MARK_RE = re.compile(r"\s*\((?:" + "|".join(MARKS) + r")\)", re.IGNORECASE)
BULLET_RE = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")
SUPERSEDES_RE = re.compile(r"\[supersedes:\s*([A-Za-z0-9_-]+)\s+by\s+([A-Za-z0-9_-]+)\s*\]",
                           re.IGNORECASE)


@dataclass
class Section:
    heading: str
    spec: dict[str, Any] | None
    lines: list[str] = field(default_factory=list)

    @property
    def role(self) -> str | None:
        return None if self.spec is None else str(self.spec["role"])

    @property
    def body(self) -> str:
        return "\n".join(self.lines).strip("\n")


@dataclass
class ContinuityDoc:
    preamble: list[str]
    sections: list[Section]

    def by_role(self, role: str) -> list[Section]:
        return [s for s in self.sections if s.role == role]

    def render(self) -> str:
        parts = ["\n".join(self.preamble).rstrip("\n")] if any(x.strip() for x in self.preamble) else []
        for s in self.sections:
            body = s.body
            parts.append(f"## {s.heading}" + (f"\n{body}" if body else ""))
        return "\n\n".join(parts).rstrip("\n") + "\n"


def _match(heading: str, schema: Sequence[Mapping[str, object]]) -> tuple[dict[str, Any] | None, str | None]:
    key = heading_key(heading)
    exact = [dict(s) for s in schema if heading_key(str(s["heading"])) == key]
    if exact:
        return exact[0], None
    prefix = [dict(s) for s in schema if key.startswith(heading_key(str(s["heading"])) + " ")]
    if len(prefix) > 1:
        return None, (f"the heading '## {heading}' could be any of "
                      + ", ".join(repr(s["heading"]) for s in prefix) + ": rename it to one of them")
    return (prefix[0] if prefix else None), None


def parse_sections(text: str, schema: Sequence[Mapping[str, object]] | None = None, *,
                   require: bool = True) -> ContinuityDoc:
    """Split ``text`` into sections matched to ``schema``.

    Refuses (ContinuityValidationError) an ambiguous heading, a section that appears
    twice, and (with ``require``) a missing required section.
    """
    if not isinstance(text, str):
        raise ContinuityValidationError("continuity text must be a string of markdown")
    schema = list(schema or DEFAULT_SCHEMA)
    preamble: list[str] = []
    sections: list[Section] = []
    in_fence = False
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        stripped = raw.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
        m = None if in_fence else HEADING_RE.match(raw)
        if m and m.group(1).strip():
            heading = m.group(1).strip()
            spec, problem = _match(heading, schema)
            if problem:
                raise ContinuityValidationError(problem)
            sections.append(Section(heading, spec))
        elif sections:
            sections[-1].lines.append(raw)
        else:
            preamble.append(raw)
    seen: dict[str, str] = {}
    for s in sections:
        if s.spec is None:
            continue
        k = heading_key(s.spec["heading"])
        if k in seen:
            raise ContinuityValidationError(
                f"the section '## {s.spec['heading']}' appears twice ('## {seen[k]}' and "
                f"'## {s.heading}'): merge them into one")
        seen[k] = s.heading
    if require:
        missing = [s["heading"] for s in schema
                   if not s.get("optional") and heading_key(str(s["heading"])) not in seen]
        if missing:
            raise ContinuityValidationError(
                "the continuity is missing required section(s): "
                + ", ".join(f"'## {h}'" for h in missing)
                + " — every section of the schema must be present, in '## Heading' form")
    return ContinuityDoc(preamble, sections)


class Citation(NamedTuple):
    episode_id: str
    explanation: str | None


@dataclass
class PatternLine:
    """One governed line of a graduating section."""

    name: str
    key: str
    level: int
    date: str | None
    citations: list[Citation]
    line: str
    section: str
    line_index: int
    contradicts: list[str]
    no_contradicts: bool
    provenance: list[str]
    marks: list[str]

    @property
    def evidence(self) -> list[tuple[str, str]]:
        return [(c.episode_id, c.explanation or "") for c in self.citations]


def pattern_key(name: str) -> str:
    return " ".join(name.casefold().split())


def parse_citations(body: str) -> list[Citation]:
    out = []
    for m in CITATION_RE.finditer(body):
        expl = m.group(2) if m.group(2) is not None else m.group(3)
        out.append(Citation(m.group(1), expl))
    return out


def parse_pattern_line(line: str, *, section: str = "", index: int = 0) -> PatternLine | None:
    """A PatternLine for a line carrying a ``| Nx`` marker, else None."""
    m = MARKER_RE.search(line)
    if not m:
        return None
    before = line[: m.start()]
    name = BULLET_RE.sub("", before).strip().rstrip(":").strip()
    after = line[m.end():]
    citations: list[Citation] = []
    ev = EVIDENCE_RE.match(after.lstrip())
    if ev and after[: len(after) - len(after.lstrip())].strip() == "":
        citations = parse_citations(ev.group(1))
    marks = [x.strip(" ()").lower() for x in MARK_RE.findall(line)]
    return PatternLine(
        name=name, key=pattern_key(name), level=int(m.group(1)), date=m.group(2),
        citations=citations, line=line, section=section, line_index=index,
        contradicts=[c.strip() for c in CONTRADICTS_RE.findall(line)],
        no_contradicts=bool(NO_CONTRADICTS_RE.search(line)),
        provenance=[p.strip() for x in PROVENANCE_RE.findall(line) for p in x.split(",") if p.strip()],
        marks=marks,
    )


def parse_pattern_lines(text: str, schema: Sequence[Mapping[str, object]] | None = None) -> list[PatternLine]:
    """Every pattern line of the graduating sections (sections that do not parse are
    read leniently: no section is required)."""
    return pattern_lines(parse_sections(text, schema, require=False))


def pattern_lines(doc: ContinuityDoc) -> list[PatternLine]:
    """Every pattern line of the graduating sections of an already parsed ``doc``."""
    out = []
    for s in doc.sections:
        if s.role != "graduating":
            continue
        for i, line in enumerate(s.lines):
            p = parse_pattern_line(line, section=s.heading, index=i)
            if p is not None:
                out.append(p)
    return out


def pattern_levels(text: str | None, schema: Sequence[Mapping[str, object]] | None = None) -> dict[str, int]:
    """A name's level: its highest line across the graduating sections."""
    levels: dict[str, int] = {}
    if not text:
        return levels
    try:
        lines = parse_pattern_lines(text, schema)
    except ContinuityValidationError:
        return levels
    for p in lines:
        if p.key:
            levels[p.key] = max(levels.get(p.key, 0), p.level)
    return levels


class PatternSummary(NamedTuple):
    name: str
    level: int
    summary: str


def extract_pattern_summaries(text: str, schema: Sequence[Mapping[str, object]] | None = None,
                              *, min_level: int = 1) -> list[PatternSummary]:
    """One ``name (Nx): meaning`` summary per named pattern, highest level first."""
    return pattern_summaries(parse_pattern_lines(text, schema), min_level=min_level)


def pattern_summaries(lines: Sequence[PatternLine], *, min_level: int = 1) -> list[PatternSummary]:
    """``extract_pattern_summaries`` over pattern lines already parsed."""
    from ..text import first_clause

    best: dict[str, PatternSummary] = {}
    for p in lines:
        if not p.key or p.level < min_level:
            continue
        expl = next((c.explanation for c in p.citations if c.explanation), None)
        rest = MARK_RE.sub("", MARKER_RE.sub("", p.line[len(p.line) - len(p.line.lstrip()):]))
        rest = EVIDENCE_RE.sub("", rest)
        rest = BULLET_RE.sub("", rest).replace(p.name, "", 1).strip(" -:—")
        summary = first_clause(rest or expl or p.name, 100)  # the line's own meaning first
        cur = best.get(p.key)
        if cur is None or p.level > cur.level:
            best[p.key] = PatternSummary(p.name, p.level, summary)
    return sorted(best.values(), key=lambda s: (-s.level, s.name.casefold()))


def supersession_markers(text: str) -> list[tuple[str, str, str]]:
    """(old_id, new_id, the marker text) for every ``[supersedes: OLD by NEW]``."""
    return [(m.group(1), m.group(2), m.group(0)) for m in SUPERSEDES_RE.finditer(text)]
