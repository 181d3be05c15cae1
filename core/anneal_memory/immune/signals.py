"""Signals the save reports without changing levels: gaming, spread, staleness,
omissions, contradiction stances, and the wrong-namespace warning (AM-WARN)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TypedDict

from ..clock import days_between
from ..continuity.parse import PatternLine

#: one episode cited this often in one wrap is flagged
GAMING_THRESHOLD = 3


class StalePattern(TypedDict):
    """A pattern line :func:`stale_patterns` names."""

    name: str
    level: int
    content: str
    last_date: str
    days_stale: int
    line: int | None


class OmittedPattern(TypedDict):
    """A Proven pattern the new continuity dropped."""

    name: str
    level: int


class Stance(TypedDict):
    """A pattern's declared contradictions (1.0.2's shape: ``name`` repeats ``pattern``)."""

    pattern: str
    name: str
    contradicts: list[str]


def citation_counts(lines: Iterable[PatternLine], among: set[str] | None = None) -> Counter[str]:
    """How often each episode is cited (only ids in ``among``, when given)."""
    return Counter(c.episode_id for p in lines for c in p.citations
                   if among is None or c.episode_id in among)


def gaming_suspects(counts: Counter[str]) -> list[str]:
    return sorted(i for i, n in counts.items() if n >= GAMING_THRESHOLD)


def citation_spread(lines: Iterable[PatternLine], snapshot_ids: set[str]) -> int:
    """Distinct episodes of this wrap that its graduation lines cited."""
    return len({c.episode_id for p in lines for c in p.citations if c.episode_id in snapshot_ids})


def stale_patterns(lines: Sequence[PatternLine], today: str, staleness_days: int,
                   text: str | None = None) -> list[StalePattern]:
    """Pattern lines whose date has fallen behind the staleness threshold.

    Each entry: ``name``, ``level``, ``content`` (the line as written), ``last_date``,
    ``days_stale`` and ``line`` (its 1-based line number in ``text``, when given).
    """
    numbers: dict[str, int] = {}
    if text:
        for i, raw in enumerate(text.splitlines(), start=1):
            numbers.setdefault(raw.strip(), i)
    out: list[StalePattern] = []
    for p in lines:
        if p.date:
            age = days_between(p.date, today)
            if age > staleness_days:
                content = p.line.strip()
                out.append({"name": p.name, "level": p.level, "content": content,
                            "last_date": p.date, "days_stale": age,
                            "line": numbers.get(content)})
    return out


def omitted_patterns(prior: dict[str, tuple[str, int]],
                     present_keys: set[str]) -> list[OmittedPattern]:
    """Proven patterns of the prior continuity that the new one dropped."""
    return [{"name": name, "level": level} for key, (name, level) in sorted(prior.items())
            if level >= 2 and key not in present_keys]


def stances(lines: Iterable[PatternLine]) -> list[Stance]:
    """Each pattern that declares contradictions, in 1.0.2's shape (``pattern`` and the
    list it ``contradicts``; ``name`` is the same as ``pattern``)."""
    return [{"pattern": p.name, "name": p.name, "contradicts": list(p.contradicts)}
            for p in lines if p.contradicts]


def am_warn(lines: Sequence[PatternLine], resolvable: set[str]) -> str | None:
    """Graduated lines cited episodes, but not one id resolves in this store."""
    cited = {c.episode_id for p in lines if p.level >= 2 for c in p.citations}
    if cited and not (cited & resolvable):
        return ("AM-WARN: graduated patterns cite episode ids, but none of them resolves to an "
                "episode in this store (ids from another store or namespace?): nothing can "
                "ground them")
    return None
