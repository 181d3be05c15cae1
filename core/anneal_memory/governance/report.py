"""Rendering of the evaluation: JSON, Markdown and a redacted JSONL trace.

The three outputs are pure functions of the results, with sorted keys and a fixed
clock, so two runs produce the same bytes. What was not measured is ``null`` (never 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from .experiments import CLOCK, safety_counts

NOT_MEASURED: dict[str, None] = {"model_quality": None, "token_savings": None, "latency_ms": None,
                "provider_usage": None}

CLAIMS = [
    "With no memory the scripted agent does not recover the language preference or the API rule.",
    "Full history carries the one-time permission into a new task and the agent uses it.",
    "The gate rejects the secret, the one-time permission, the low-confidence inference and the repeat.",
    "Human review brings back a labelled-positive inference, committed as human_reviewed.",
    "Namespace filtering before ranking removes the cross-tenant and cross-project leaks.",
    "After scoping, ranking with a top-2 budget returns only the relevant records.",
    "Versions with expected_record_id keep the correction chain and refuse a stale writer.",
    "A tombstone resolved against the ledger stops a stale cache, a late writer and a replay.",
]
NON_CLAIMS = [
    "Nothing here measures a real model's extraction, recall or use of memory.",
    "The weights, the top-K and the thresholds are not shown to be optimal.",
    "A tombstone is not proof that backups, exports or third-party copies are erased.",
    "One fixture of a coding agent does not represent other domains.",
]


class EvalDocument(TypedDict):
    """The evaluation's report: each experiment's results by variant, the safety counts
    that must be zero, what was not measured, and what the results do and do not show."""

    report: str
    format_version: int
    clock: str
    sample_count_per_case: int
    experiments: dict[str, dict[str, Any]]  # experiment -> its results (variants, scalars)
    safety: dict[str, int]
    safety_ok: bool
    not_measured: dict[str, None]
    claims: list[str]
    non_claims: list[str]


def document(results: dict[str, Any]) -> EvalDocument:
    """The report of ``run_all``'s results."""
    safety = safety_counts(results)
    return EvalDocument(
        report="anneal-memory governed memory evaluation", format_version=1,
        clock=CLOCK.isoformat(), sample_count_per_case=1,
        experiments=results, safety=safety,
        safety_ok=all(v == 0 for v in safety.values()),
        not_measured=NOT_MEASURED, claims=CLAIMS, non_claims=NON_CLAIMS,
    )


def to_json(doc: EvalDocument) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def to_jsonl(trace: Sequence[Mapping[str, object]]) -> str:
    return "".join(json.dumps(t, sort_keys=True, ensure_ascii=False,
                              separators=(",", ":")) + "\n" for t in trace)


def _cell(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return "; ".join(_cell(x) for x in v)
    return str(v)


def _table(rows: dict[str, dict[str, Any]]) -> list[str]:
    cols = sorted({k for r in rows.values() for k in r})
    lines = ["| variant | " + " | ".join(cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for name, r in rows.items():
        lines.append(f"| {name} | " + " | ".join(_cell(r.get(c)) for c in cols) + " |")
    return lines


def to_markdown(doc: EvalDocument) -> str:
    out = ["# Governed memory evaluation", "",
           f"Fixed clock {doc['clock']}; one sample per case; scripted decision policy.", ""]
    for name, res in doc["experiments"].items():
        out += [f"## {name}", ""]
        variants = {k: v for k, v in res.items() if isinstance(v, dict)}
        scalars = {k: v for k, v in res.items() if not isinstance(v, dict)}
        out += [f"- {k}: {_cell(v)}" for k, v in sorted(scalars.items())]
        if scalars:
            out.append("")
        out += _table(variants) + [""]
    out += ["## Safety counts (must all be zero)", ""]
    out += [f"- {k}: {v}" for k, v in sorted(doc["safety"].items())]
    out += ["", "## Not measured", ""]
    out += [f"- {k}: null" for k in sorted(doc["not_measured"])]
    out += ["", "## What this shows", ""] + [f"- {c}" for c in doc["claims"]]
    out += ["", "## What this does not show", ""] + [f"- {c}" for c in doc["non_claims"]]
    return "\n".join(out) + "\n"
