"""A fact probe's verdict on a reworded State line is 1.0.2's (issue 51 item 5).

Every row below was measured on the published 1.0.2 (tests/compat runs a share of them
against it call for call): a word is kept in an inflected form ("starts" by "does not
start"), a negation counts where it governs a word of the fact, a clause ends at ``;``,
an apostrophe splits a word, and a sentence that keeps the fact wins over one that
flips it. The last test drives the rows through real saves of a real store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from anneal_memory import Store, ValidationError
from anneal_memory.immune.probes import check_fact

from wraphelp import doc, wrap

FREEZE = "deploy freeze starts Friday noon"

# (fact, saved text, verdict as 1.0.2 gives it)
CASES = [
    # the issue's case: every word kept, the negation flipped
    (FREEZE, "The deploy freeze does not start on Friday at noon.", "changed"),
    (FREEZE, "The deploy freeze starts Friday noon.", "held"),
    # inflections on either side: -s (stem of 3+), -es, -ed, -ing (stem of 4+)
    (FREEZE, "The deploy freeze started on Friday at noon.", "held"),
    (FREEZE, "The deploy freeze is starting on Friday at noon.", "held"),
    (FREEZE, "The deploys freezes start on Fridays at noon.", "held"),
    (FREEZE, "The deploying freezing starting Friday noons.", "lost"),  # freez(e)
    ("zebra tests", "zebra testing.", "held"),
    ("zebra process", "zebra processes.", "held"),
    ("zebra horses", "zebra hors.", "held"),
    ("zebra boxes", "zebra box.", "lost"),  # -es needs a stem of four
    ("zebra fixed", "zebra fix.", "lost"),  # -ed too
    ("zebra news", "zebra new.", "held"),  # -s a stem of three
    ("zebra gas", "zebra ga.", "lost"),
    ("zebra applies", "zebra apply.", "lost"),  # no -ies rule
    ("zebra testings", "zebra test.", "lost"),  # one suffix only
    ("zebra o'clock", "zebra clock.", "held"),  # an apostrophe splits a word
    ("zebra user's", "zebra users.", "held"),
    ("zebra 14", "zebra 15.", "lost"),  # numbers exactly
    # negations: any n't, not / no / never / cannot / without / nor
    (FREEZE, "The deploy freeze isn't starting Friday noon.", "changed"),
    (FREEZE, "The deploy freeze mustn't start Friday noon.", "changed"),
    (FREEZE, "The deploy freeze cannot start Friday noon.", "changed"),
    (FREEZE, "The deploy freeze without start Friday noon.", "changed"),
    (FREEZE, "The deploy freeze none starts Friday noon.", "held"),  # not one of them
    (FREEZE, "Neither the deploy freeze starts Friday noon.", "held"),
    (FREEZE, "The deploy freeze doesnt start Friday noon.", "held"),
    # ... where it governs a word of the fact: at most one other meaningful word between
    (FREEZE, "It is not true that the deploy freeze starts Friday noon.", "changed"),
    (FREEZE, "Not alpha deploy freeze starts Friday noon.", "changed"),
    (FREEZE, "Not alpha beta deploy freeze starts Friday noon.", "held"),
    (FREEZE, "Not the the the the deploy freeze starts Friday noon.", "changed"),  # stopwords
    (FREEZE, "The deploy freeze, not the release, starts Friday noon.", "changed"),
    (FREEZE, "The deploy freeze starts Friday noon, not Monday.", "held"),
    (FREEZE, "The deploy freeze starts Friday noon: no exceptions.", "held"),
    (FREEZE, "Deploy freeze starts Friday noon not", "held"),
    # a negated fact
    ("nightly export does not run on Sundays", "The nightly export runs on Sundays.",
     "changed"),
    ("nightly export does not run on Sundays", "The nightly export never runs on Sundays.",
     "held"),
    ("we never deploy on holidays", "We deploy on holidays, never on weekends.", "changed"),
    ("we never deploy on holidays", "Holidays: no deploys.", "held"),
    # units: sentences, clauses (;) and lines; one that keeps the fact wins
    (FREEZE, "The deploy freeze starts Friday; noon is when.", "lost"),
    (FREEZE, "The deploy freeze does not start on Friday.\nIt starts at noon.", "lost"),
    (FREEZE, "The deploy freeze does not start Friday noon. The deploy freeze starts Friday "
             "noon.", "held"),
    (FREEZE, "The deploy freeze begins Friday noon.", "lost"),
]


@pytest.mark.parametrize("fact,text,verdict", CASES)
def test_verdict_as_1_0_2_gives_it(fact: str, text: str, verdict: str) -> None:
    assert check_fact(fact, text)[0] == verdict


def test_a_changed_verdict_names_the_sentence_that_flipped() -> None:
    status, detail = check_fact(FREEZE, "The deploy freeze does not start on Friday at noon.")
    assert status == "changed" and "does not start on Friday at noon" in detail
    status, detail = check_fact(FREEZE, "The deploy freeze begins Friday noon.")
    assert status == "lost" and detail.startswith("1 of 5 words missing")


def test_the_issue_case_through_real_saves(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", project_name="P") as s:
        s.record("the deploy freeze starts Friday noon", "observation")
        wrap(s, doc(state="- The deploy freeze starts Friday noon."))
        pid = s.add_drift_probe(fact=FREEZE)
        verdicts = []
        for state in ("The deploy freeze does not start on Friday at noon.",
                      "The deploy freeze started on Friday at noon.",
                      "The deploy freeze begins Friday noon."):
            s.record(f"a note before saving {state}", "observation")
            res = wrap(s, doc(state=f"- {state}"))
            verdicts.append({p["id"]: p["status"] for p in res["drift"]["probes"]}[pid])
        assert verdicts == ["changed", "held", "lost"]
        assert [p["status"] for p in s.drift_status()["probes"]] == ["lost"]


@pytest.mark.parametrize("level", [1, 0, -3, True, "2"])
def test_a_pattern_probe_below_proven_is_refused(tmp_path: Path, level: object) -> None:
    """1.0.2 refused min_level below 2 (a probe guards a Proven pattern); nothing is added."""
    with Store(tmp_path / "m.db", project_name="P") as s:
        with pytest.raises(ValidationError, match="min_level"):
            s.add_drift_probe(pattern="pool", min_level=level)  # type: ignore[arg-type]
        assert s.list_drift_probes() == [] and s.add_drift_probe(pattern="pool", min_level=2) == 1
