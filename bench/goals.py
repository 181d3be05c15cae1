"""The bench's goals, each with its ratio and a met / missed verdict, from one bench run.

    python bench/goals.py [--results bench/results] [--readme README.md]

Reads what the bench session wrote in the same run (``latest.json`` from ``run.py``,
``scale_out.json`` and ``many_users.json`` for issue 35's goals; every
``goals54/<area>.json`` for issue 54's, each written by the script that measured it),
prints one line per goal and writes ``goals.md`` beside them. With ``--readme`` the block
between the README's ``goals54`` markers is rewritten from the same run, so the
Performance section cannot drift from the figures. Pure functions over those shapes, so
``tests/bench`` pins the arithmetic; a goal whose figure the run did not measure says so
instead of passing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import report

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Goal:
    """One goal: what is compared, the measured ratio (None: not measured), the bound."""

    name: str
    ratio: float | None
    op: str          # ">=" or "<="
    target: float
    basis: str       # what the ratio is taken against, in words

    @property
    def verdict(self) -> str:
        if self.ratio is None:
            return "not measured"
        ok = self.ratio >= self.target if self.op == ">=" else self.ratio <= self.target
        return "met" if ok else "missed"


def _get(d: Any, *path: Any) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def _div(a: Any, b: Any) -> float | None:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b:
        return None
    return float(a) / float(b)


MIXED = (("recall_keyword_mixed", "mixed queries"),
         ("recall_keyword_mixed_decision", "mixed queries, type=decision"))


def recall_goals(latest: dict[str, Any]) -> list[Goal]:
    """Keyword recall p95 on the mixed workload: <= 0.5x the peer at 1k and 10k."""
    ours, peer = _get(latest, "packages", "ours"), _get(latest, "packages", "peer")
    out = []
    for size in ("1000", "10000"):
        for key, label in MIXED:
            r = _div(_get(report.recall_run(ours or {}, size), key, "p95_ms"),
                     _get(report.recall_run(peer or {}, size), key, "p95_ms"))
            out.append(Goal(f"keyword recall p95, {label} @ {int(size):,}", r, "<=", 0.5,
                            "ours / 1.0.2"))
    return out


def record_goals(latest: dict[str, Any]) -> list[Goal]:
    """Durable record(): >= 0.8x the raw-SQLite ceiling and >= 2x the peer, per size."""
    ours, peer = _get(latest, "packages", "ours") or {}, _get(latest, "packages", "peer") or {}
    out = []
    for size in sorted({"1000", "10000", *(ours.get("ceiling") or {})}, key=int):
        rate = _get(ours, "sizes", size, "single", "load_per_second")
        n = f"{int(size):,}"
        out.append(Goal(f"durable record() @ {n}", _div(rate, _get(
            ours, "ceiling", size, "load_per_second")), ">=", 0.8, "ours / raw SQLite ceiling"))
        out.append(Goal(f"durable record() @ {n}", _div(rate, _get(
            peer, "sizes", size, "single", "load_per_second")), ">=", 2.0, "ours / 1.0.2"))
    return out


def wrap_goals(latest: dict[str, Any]) -> list[Goal]:
    """Wrap prepare + save: median <= 0.5x and p95 <= 1.0x the peer at 50 and 500."""
    ours, peer = _get(latest, "packages", "ours") or {}, _get(latest, "packages", "peer") or {}
    out = []
    for size in ("50", "500"):
        for key, label, bound in (("total_ms", "median", 0.5), ("total_p95_ms", "p95", 1.0)):
            out.append(Goal(f"wrap prepare + save {label} @ {size} episodes", _div(
                _get(ours, "wrap", size, key), _get(peer, "wrap", size, key)), "<=", bound,
                "ours / 1.0.2"))
    return out


def scale_goals(latest: dict[str, Any]) -> list[Goal]:
    """At the largest size (1M): phrase and word recall p95 <= 3x their 10k figures."""
    ours = _get(latest, "packages", "ours") or {}
    sizes = [s for s in report.sizes_of(latest) if int(s) > 100_000]
    big = sizes[-1] if sizes else None
    out = []
    for key, label in (("recall_keyword", "phrase"), ("recall_keyword_words", "word")):
        r = None if big is None else _div(_get(report.recall_run(ours, big), key, "p95_ms"),
                                          _get(report.recall_run(ours, "10000"), key, "p95_ms"))
        where = f"{int(big):,}" if big else "1M"
        out.append(Goal(f"{label} recall p95 @ {where}", r, "<=", 3.0, "ours / ours @ 10,000"))
    return out


def scale_out_goals(scale_out: dict[str, Any] | None, many_users: dict[str, Any] | None
                    ) -> list[Goal]:
    """PostgreSQL: 16 hosts >= 4x one; one process: 50 concurrent writers >= 4x one."""
    combined = _get(scale_out, "postgres", "processes", "write", "combined") or {}
    hosts = _get(combined, str(max(map(int, combined), default=16)), "records_per_s", "ratio")
    writers = _get(many_users, "concurrent_writers", "ratio")
    n = _get(many_users, "concurrent_writers", "writers") or 50
    return [Goal("PostgreSQL: 16 hosts (processes) recording", hosts, ">=", 4.0,
                 "all hosts' records/s / one host's"),
            Goal(f"{n} concurrent writers in one process", writers, ">=", 4.0,
                 "records/s / one sequential writer's")]


def all_goals(latest: dict[str, Any], scale_out: dict[str, Any] | None = None,
              many_users: dict[str, Any] | None = None) -> list[Goal]:
    return [*recall_goals(latest), *record_goals(latest), *wrap_goals(latest),
            *scale_goals(latest), *scale_out_goals(scale_out, many_users)]


def markdown(goals: list[Goal], meta: dict[str, Any] | None = None) -> str:
    meta = meta or {}
    met = sum(g.verdict == "met" for g in goals)
    lines = [f"Issue 35's goals from the run of {meta.get('date', '?')} on "
             f"{meta.get('machine', '?')}: {met} of {len(goals)} met.", "",
             "| goal | ratio | bound | against | verdict |", "|---|---:|---:|---|---|"]
    for g in goals:
        r = "n/a" if g.ratio is None else f"{g.ratio:.2f}x"
        lines.append(f"| {g.name} | {r} | {g.op} {g.target:g}x | {g.basis} | {g.verdict} |")
    return "\n".join(lines) + "\n"


#: verdicts an issue 54 goal file may give
VERDICTS = ("met", "missed", "not measured")
README_START, README_END = "<!-- goals54:start -->", "<!-- goals54:end -->"


@dataclass(frozen=True)
class AreaGoal:
    """One issue 54 goal as the script that measured it reported it."""

    area: str
    goal: str
    figure: str
    target: str
    verdict: str
    bound: str


def area_goals(doc: dict[str, Any], source: str = "?") -> list[AreaGoal]:
    """The goals of one ``goals54/<area>.json``; a malformed entry is an error, not a pass."""
    area = doc.get("area")
    if not isinstance(area, str) or not isinstance(doc.get("goals"), list):
        raise ValueError(f"{source}: needs 'area' (text) and 'goals' (a list)")
    out = []
    for i, g in enumerate(doc["goals"]):
        if not isinstance(g, dict) or any(not isinstance(g.get(k), str) for k in
                                           ("goal", "figure", "target", "verdict")):
            raise ValueError(f"{source}: goal {i} needs text 'goal', 'figure', 'target', "
                             "'verdict'")
        if g["verdict"] not in VERDICTS:
            raise ValueError(f"{source}: goal {i} verdict {g['verdict']!r} is not one of "
                             f"{', '.join(VERDICTS)}")
        bound = g.get("bound") or ""
        if g["verdict"] == "missed" and not str(bound).strip():
            raise ValueError(f"{source}: goal {i} ({g['goal']}) is missed and says no bound")
        out.append(AreaGoal(area, g["goal"], g["figure"], g["target"], g["verdict"],
                            str(bound)))
    return out


def load_area_goals(folder: Path) -> list[AreaGoal]:
    """Every ``goals54/*.json`` under ``folder``, in file-name order."""
    out: list[AreaGoal] = []
    for path in sorted((folder / "goals54").glob("*.json")):
        out += area_goals(json.loads(path.read_text("utf-8")), str(path))
    return out


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def area_markdown(goals: list[AreaGoal]) -> str:
    """Issue 54's goals as one table: figure, target, verdict and what bounds a miss."""
    met = sum(g.verdict == "met" for g in goals)
    lines = [f"Issue 54's goals: {met} of {len(goals)} met.", "",
             "| area | goal | measured | target | verdict | what bounds it |",
             "|---|---|---|---|---|---|"]
    for g in goals:
        lines.append(f"| {_cell(g.area)} | {_cell(g.goal)} | {_cell(g.figure)} | "
                     f"{_cell(g.target)} | {g.verdict} | {_cell(g.bound)} |")
    return "\n".join(lines) + "\n"


def rewrite_readme(text: str, block: str) -> str:
    """``text`` with the part between the goals54 markers replaced by ``block``."""
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {README_START} ... {README_END} block")
    return text[:start + len(README_START)] + "\n" + block + text[end:]


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text("utf-8")) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=str(HERE / "results"))
    p.add_argument("--readme", help="rewrite this README's goals54 block from this run")
    args = p.parse_args(argv)
    folder = Path(args.results)
    latest = _load(folder / "latest.json")
    if latest is None:
        print(f"goals: no {folder / 'latest.json'}: run `nox -s bench` first", file=sys.stderr)
        return 2
    goals = all_goals(latest, _load(folder / "scale_out.json"),
                      _load(folder / "many_users.json"))
    try:
        block = area_markdown(load_area_goals(folder))
    except ValueError as e:
        print(f"goals: {e}", file=sys.stderr)
        return 2
    text = markdown(goals, latest.get("meta")) + "\n" + block
    (folder / "goals.md").write_text(text, "utf-8")
    if args.readme:
        readme = Path(args.readme)
        readme.write_text(rewrite_readme(readme.read_text("utf-8"), block), "utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
