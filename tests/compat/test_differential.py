"""Each scenario run against the published 1.0.2 and against us, compared field by field.

A difference fails the test unless ``deviations.py`` lists it with its reason (and the
section of docs/migrating.md that tells users). A listed deviation that no longer differs
fails too, so the list stays the truth.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from compare import compare, covered, report
from conftest import REPO, scenario_names
from deviations import DEVIATIONS

NAMES = [n for n in scenario_names() if not n.startswith(("write_", "read_"))]


@pytest.mark.parametrize("name", NAMES)
def test_scenario_matches_1_0_2(name: str, observations: dict[str, Any]) -> None:
    got = observations[name]
    diffs = compare(got["peer"], got["ours"])
    allowed = DEVIATIONS.get(name, {})
    unexplained = [d for d in diffs if covered(d[0], allowed) is None]
    assert not unexplained, (f"{len(unexplained)} difference(s) from 1.0.2 in {name!r} not "
                             f"listed in deviations.py:\n{report(unexplained)}")
    stale = [p for p in allowed if not any(covered(d[0], {p: ""}) for d in diffs)]
    assert not stale, f"listed deviations of {name!r} that no longer differ: {stale}"


def test_every_scenario_ran_something(observations: dict[str, Any]) -> None:
    for name, sides in observations.items():
        assert sides["peer"] and sides["ours"], name


def test_deviations_name_real_scenarios_and_documented_sections() -> None:
    text = (REPO / "docs" / "migrating.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r"\{#([a-z0-9-]+)\}", text))
    for name, entries in DEVIATIONS.items():
        assert name in NAMES or name == "read_legacy", f"unknown scenario {name!r}"
        for path, why in entries.items():
            m = re.search(r"\(migrating#([a-z0-9-]+)\)", why)
            assert m, f"{name} {path}: the reason must cite a docs/migrating.md section"
            assert m.group(1) in anchors, f"{name} {path}: no section {{#{m.group(1)}}}"


def summary(observations: dict[str, Any]) -> dict[str, int]:
    """Scenarios compared, and how many of them differ (every difference listed)."""
    differ = sum(1 for n, s in observations.items() if compare(s["peer"], s["ours"]))
    return {"scenarios": len(observations), "differ": differ}


def test_print_summary(observations: dict[str, Any], capsys: pytest.CaptureFixture[str]
                       ) -> None:
    s = summary(observations)
    fields = sum(len(v) for o in observations.values() for v in [o["peer"]])
    with capsys.disabled():
        print(f"\ncompat: {s['scenarios']} scenarios compared ({fields} top-level "
              f"observations from 1.0.2), {s['differ']} with listed deviations")
    assert s["scenarios"] == len(NAMES) and Path(REPO).is_dir()
