"""Citation-validated graduation, one small rule per function.

A pattern line rises a rung only when every episode it cites is in this wrap's frozen
snapshot, is not replaced, and (with a quoted explanation) shares at least two
meaningful words with the explanation. It can never rise more than one rung above the
level the store last saved for it; a new pattern enters at 1x.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..clock import days_between
from ..continuity.parse import EVIDENCE_RE, MARK_RE, MARKER_RE, PatternLine
from ..storage.base import EpisodeRow
from ..text import check_explanation_overlap, meaningful_words
from ..types import RELAYED_TRUST

#: a re-grounding sharing this many meaningful words with a prior explanation demotes
CROSS_SESSION_OVERLAP = 3


@dataclass
class WrapContext:
    """What the rules read: the snapshot, the store's pattern record, today."""

    today: str
    snapshot: dict[str, EpisodeRow]
    superseded: set[str]
    trust: dict[str, str]
    history: dict[str, dict[str, Any]]
    prior_levels: dict[str, int]
    citations_seen: bool
    cold_days: int | None
    first_governed_save: bool
    revoked: dict[str, int] = field(default_factory=dict)


@dataclass
class LineOutcome:
    line: PatternLine
    final_level: int
    new_text: str
    validated: bool = False
    demoted: bool = False
    bare_demoted: bool = False
    carried: bool = False
    cold_hold: bool = False
    capped: bool = False
    cap_reason: str | None = None
    uncorroborated: bool = False
    collision: bool = False
    failures: list[str] = field(default_factory=list)
    grounding_ids: list[str] = field(default_factory=list)
    prior_level: int | None = None


def revoked_prior(hist: dict[str, Any], trust: dict[str, str]) -> int | None:
    """The level a pattern keeps once rungs earned on now-lowered grounding are taken back.

    Each rung records the episodes that earned it and the rule: with a quoted explanation
    a rung is lost when all its grounding episodes are now tool/external; without one, when
    any is. A rung earned more than once stands while any earning stands. Returns the cut
    level, or None when nothing is revoked.
    """
    by_level: dict[int, list[dict[str, Any]]] = {}
    for g in hist.get("grounding") or []:
        by_level.setdefault(int(g.get("level", 0)), []).append(g)
    for level in sorted(by_level):
        if level < 2:
            continue
        def stands(g: dict[str, Any]) -> bool:
            classes = [trust.get(i, "external") for i in g.get("ids") or []]
            if not classes:
                return True
            if g.get("rule") == "quoted":
                return not all(c in RELAYED_TRUST for c in classes)
            return not any(c in RELAYED_TRUST for c in classes)
        if not any(stands(g) for g in by_level[level]):
            cut = level - 1
            return cut if cut < int(hist["level"]) else None
    return None


def citation_failures(p: PatternLine, ctx: WrapContext) -> list[str]:
    """Why each citation fails (empty when all are valid and grounded)."""
    out = []
    for c in p.citations:
        row = ctx.snapshot.get(c.episode_id)
        if row is None:
            out.append(f"{c.episode_id}: not an episode of this wrap")
        elif c.episode_id in ctx.superseded:
            out.append(f"{c.episode_id}: replaced by a newer episode")
        elif c.explanation is not None and not check_explanation_overlap(c.explanation, row.content):
            out.append(f"{c.episode_id}: explanation shares fewer than 2 meaningful words with it")
    return out


def is_relayed(p: PatternLine, ctx: WrapContext) -> bool:
    """True when every grounding citation is tool/external content (or, without a quoted
    explanation, when any cited episode is)."""
    tr = [ctx.trust.get(c.episode_id, "agent") for c in p.citations]
    if not tr:
        return False
    if any(c.explanation is None for c in p.citations):
        return any(t in RELAYED_TRUST for t in tr)
    return all(t in RELAYED_TRUST for t in tr)


def rephrases_prior(p: PatternLine, hist: dict[str, Any] | None) -> bool:
    """A re-grounding that reuses >= 3 meaningful words of a prior explanation."""
    if not hist or not hist.get("explanations"):
        return False
    new = set()
    for c in p.citations:
        if c.explanation:
            new |= meaningful_words(c.explanation)
    if not new:
        return False
    return any(len(new & meaningful_words(old)) >= CROSS_SESSION_OVERLAP
               for old in hist["explanations"])


def prior_level(p: PatternLine, ctx: WrapContext) -> int | None:
    """The level the store last saved for this name; None for a new pattern."""
    if not p.key:
        return None
    hist = ctx.history.get(p.key)
    if hist is not None:
        return int(hist["level"])
    if ctx.first_governed_save:
        return ctx.prior_levels.get(p.key)
    return None


def carry_forward_eligible(level: int, hist: dict[str, Any] | None, ctx: WrapContext) -> bool:
    """Held, not demoted: at or below the earned high-water mark and grounded recently."""
    if ctx.cold_days is None or not hist or not hist.get("last_seen_at"):
        return False
    if level > int(hist.get("max_level_reached", 0)):
        return False
    return days_between(hist["last_seen_at"], ctx.today) <= ctx.cold_days


def is_cold(hist: dict[str, Any] | None, ctx: WrapContext) -> bool:
    if ctx.cold_days is None or not hist or not hist.get("last_seen_at"):
        return False
    return days_between(hist["last_seen_at"], ctx.today) > ctx.cold_days


def rewrite_line(p: PatternLine, level: int, date: str | None, marks: list[str],
                 drop_evidence: bool) -> str:
    """The line with its first marker set to ``level``/``date`` and its marks replaced."""
    text = MARK_RE.sub("", p.line).rstrip()
    m = MARKER_RE.search(text)
    if m is None:
        return text
    marker = f"| {level}x" + (f" ({date})" if date else "")
    tail = text[m.end():]
    if drop_evidence:
        ev = EVIDENCE_RE.match(tail.lstrip())
        if ev and tail[: len(tail) - len(tail.lstrip())].strip() == "":
            tail = tail.lstrip()[ev.end():]
    text = text[: m.start()] + marker + tail
    return text.rstrip() + "".join(f" ({mk})" for mk in marks)


def is_candidate(p: PatternLine, ctx: WrapContext) -> bool:
    """A graduation claim of this wrap: 2x or higher, dated the wrap's day. A 1x line is a
    sighting, not a claim; a back-dated line cannot validate (it keeps the level the store
    entitles it to) and its citations are not counted."""
    return p.level >= 2 and p.date == ctx.today


def _demoted_level(claimed: int, prior: int | None) -> int:
    """One rung below the claim, never above what the store last saved."""
    return max(1, min(claimed - 1, prior if prior is not None else 1))


def govern_line(p: PatternLine, ctx: WrapContext) -> LineOutcome:
    """Apply every graduation rule to one pattern line.

    A claim whose citation fails (unknown or replaced episode, an explanation sharing too
    few words, a prior-wrap id, a rephrased prior explanation) demotes one rung, marked
    ``(ungrounded)``, its evidence tag dropped; a bare claim once citations were seen
    demotes the same way, marked ``(needs-evidence)``. Either is held instead, marked
    ``(carried-forward)``, when the pattern is at or below its high-water mark and was
    grounded recently. Every line is then cut to the store's record (one rung above it
    when the line validated; a new pattern enters at 1x), marked ``(level-capped)``.
    """
    prior = prior_level(p, ctx)
    hist = ctx.history.get(p.key) if p.key else None
    revoked = ctx.revoked.get(p.key) if p.key else None
    if prior is not None and revoked is not None and revoked < prior:
        prior = revoked
    out = LineOutcome(line=p, final_level=1, new_text=p.line, prior_level=prior)
    claimed = p.level
    date = p.date
    marks: list[str] = []
    drop_evidence = False
    entitled = 1 if prior is None else prior
    candidate = is_candidate(p, ctx)
    if candidate and p.citations:
        out.failures = citation_failures(p, ctx)
        out.validated = not out.failures
        if out.validated and prior is not None and rephrases_prior(p, hist):
            out.validated = False
            out.collision = True
            out.failures.append("re-grounding rephrases a prior explanation")
    elif p.citations and claimed == 1 and not citation_failures(p, ctx):
        # a grounded first sighting: not a graduation, but its evidence is kept for the
        # pattern's record (a crystal later carries every rung's grounding)
        out.grounding_ids = [c.episode_id for c in p.citations]
    if out.validated:
        out.grounding_ids = [c.episode_id for c in p.citations]
        if prior is not None:
            entitled = prior + 1
        level = min(claimed, entitled)
        if is_relayed(p, ctx) and level > 1:
            level, out.uncorroborated, drop_evidence = 1, True, True
        elif claimed > level:
            out.capped = True
            out.cap_reason = ("a new pattern enters at 1x" if prior is None
                              else f"one rung per wrap: saved at {prior}x")
    elif out.failures:
        if not out.collision and carry_forward_eligible(claimed, hist, ctx):
            level, out.carried = min(claimed, entitled), True
            date = ctx.today
        else:
            level, out.demoted = _demoted_level(claimed, prior), True
        drop_evidence = True
    elif claimed >= 2 and not p.citations and ctx.citations_seen and prior is not None:
        if claimed <= entitled and _held(claimed, hist, ctx):
            level, out.carried = claimed, True
            if is_cold(hist, ctx):
                out.cold_hold = True
                date = str(hist["last_seen_at"])[:10] if hist else date
            else:
                date = ctx.today
        else:
            level, out.bare_demoted = _demoted_level(claimed, prior), True
    else:
        level = min(claimed, entitled)
        if claimed > level:
            out.capped = True
            out.cap_reason = ("a new pattern enters at 1x" if prior is None
                              else f"saved at {prior}x")
    if revoked is not None and level <= revoked < claimed and not out.validated:
        out.capped, out.cap_reason = True, "revoked: grounding lowered"
    if out.uncorroborated:
        marks.append("uncorroborated")
    if out.demoted:
        marks.append("ungrounded")
    if out.bare_demoted:
        marks.append("needs-evidence")
    if out.carried:
        marks.append("carried-forward")
    if out.capped and level < claimed and not (out.demoted or out.bare_demoted
                                               or out.uncorroborated):
        marks.append("level-capped")
    out.final_level = level
    out.new_text = rewrite_line(p, level, date, marks, drop_evidence)
    return out


def _held(claimed: int, hist: dict[str, Any] | None, ctx: WrapContext) -> bool:
    """A bare claim at or below its high-water mark is held, recent or cold: a cold one is
    dated back to its last grounding and surfaced, never eroded."""
    if ctx.cold_days is None or not hist or not hist.get("last_seen_at"):
        return False
    return claimed <= int(hist.get("max_level_reached", 0))
