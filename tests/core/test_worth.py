"""Outcome write-back, surfaced counts and the worth report (report-only)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from test_spores import run_processes

from anneal_memory.crystal import CrystalStore
from anneal_memory.errors import ValidationError
from anneal_memory.worth import (
    ExposedRef,
    ItemLabel,
    OutcomeLog,
    compute_worth,
    fold_surfaced,
    outcome_log_path,
)

NOW = datetime(2026, 5, 10, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def log(tmp_path: Path) -> OutcomeLog:
    return OutcomeLog(tmp_path / "memory.db")


@pytest.fixture
def cs(tmp_path: Path) -> CrystalStore:
    store = CrystalStore(tmp_path / "memory.db")
    store.crystallize("retry", text="Retry with backoff.", level=3,
                      evidence=[("ep-1", "a"), ("ep-2", "b")], today=date(2026, 5, 1))
    store.crystallize("pin", text="Pin dependencies.", level=2,
                      evidence=[("ep-2", "c")], today=date(2026, 5, 1))
    return store


def test_log_path_and_record_shape(log: OutcomeLog, tmp_path: Path) -> None:
    assert log.path == tmp_path / "memory.outcomes.jsonl" == outcome_log_path(tmp_path / "memory.db")
    rec = log.record("exp-1", ["crystal:retry=followed", ItemLabel("episode", "ep-9", "ignored")],
                     outcome="success", exposed=["crystal:pin"], ts=NOW)
    assert rec == {
        "v": 1, "exposure_id": "exp-1", "ts": "2026-05-10T12:00:00Z", "outcome": "success",
        "items": [{"kind": "crystal", "ref": "retry", "label": "followed"},
                  {"kind": "episode", "ref": "ep-9", "label": "ignored"}],
        "exposed": [{"kind": "crystal", "ref": "pin"}],
    }
    lines = log.path.read_text().splitlines()
    assert [json.loads(x) for x in lines] == [rec]


@pytest.mark.parametrize("call, fragment", [
    (lambda lg: lg.record("e", []), "at least one"),
    (lambda lg: lg.record("e", ["crystal:x=loved"]), "label"),
    (lambda lg: lg.record("e", ["memo:x=followed"]), "kind"),
    (lambda lg: lg.record("e", ["crystal-x=followed"]), "KIND:REF"),
    (lambda lg: lg.record("e", outcome="meh"), "outcome"),
    (lambda lg: lg.record("a\nb", outcome="success"), "one line"),
    (lambda lg: lg.record(" ", outcome="success"), "exposure id"),
])
def test_record_refuses_bad_input(log: OutcomeLog, call, fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        call(log)
    assert not log.path.exists()


def test_later_records_correct_earlier_ones(log: OutcomeLog) -> None:
    log.record("e1", ["crystal:retry=ignored"], exposed=[ExposedRef("crystal", "pin")])
    log.record("e1", ["crystal:retry=followed"], outcome="failure")
    log.record("e1", outcome="success")
    merged, bad = log.merged()
    assert bad == 0
    assert merged["e1"]["labels"] == {("crystal", "retry"): "followed"}
    assert merged["e1"]["outcome"] == "success"
    assert merged["e1"]["exposed"] == {("crystal", "pin")}


def test_malformed_and_torn_lines_are_skipped(log: OutcomeLog) -> None:
    log.record("e1", ["crystal:retry=followed"], outcome="success")
    with log.path.open("a") as fh:
        fh.write("not json\n")
        fh.write('{"v": 1, "exposure_id": "e2", "outcome": "maybe", "items": []}\n')
        fh.write('{"v": 1, "exposure_id": "e3", "outcome": null, "items": [{"kind": "cr')
    records, bad = log.read()
    assert [r["exposure_id"] for r in records] == ["e1"] and bad == 3
    assert compute_worth(log).lines_skipped == 3


def test_worth_splits_by_label_and_outcome(log: OutcomeLog, cs: CrystalStore) -> None:
    log.record("e1", ["crystal:retry=followed"], outcome="success", exposed=["crystal:pin"])
    log.record("e2", ["crystal:retry=ignored"], outcome="failure")
    log.record("e3", ["crystal:retry=followed"])  # outcome not known yet
    log.record("e4", ["crystal:pin=not_applicable"], outcome="failure")
    report = compute_worth(log, cs)
    retry, pin = report.crystals["retry"], report.crystals["pin"]
    assert (retry.success, retry.failure, retry.followed) == (1, 1, 2)
    assert retry.labels["followed"] == {"success": 1, "failure": 0, "unknown": 1}
    assert retry.labels["ignored"] == {"success": 0, "failure": 1, "unknown": 0}
    # pin was shown in e1 without a label: its own column, never success.
    assert (pin.success, pin.failure) == (0, 1)
    assert pin.unlabelled == {"success": 1, "failure": 0, "unknown": 0}
    assert report.exposures == 4 and report.pulls == 0 and report.episodes == {}
    assert report.to_dict()["crystals"]["retry"]["followed"] == 2


def test_pulls_have_their_own_column_and_credit_no_episode(log: OutcomeLog,
                                                           cs: CrystalStore) -> None:
    rec = log.record_pull("retry", ts=NOW)
    assert rec["pull"] is True and rec["exposure_id"].startswith("pull:")
    assert rec["outcome"] is None
    log.record_pull("retry")
    report = compute_worth(log, cs, episodes=True)
    retry = report.crystals["retry"]
    assert (retry.pulled, retry.followed, retry.success, retry.failure) == (2, 0, 0, 0)
    assert retry.unlabelled == {"success": 0, "failure": 0, "unknown": 0}
    assert report.episodes == {} and report.pulls == 2 and report.exposures == 0


def test_crystal_exposure_credits_its_episodes_once(log: OutcomeLog, cs: CrystalStore) -> None:
    # retry cites ep-1, ep-2; pin cites ep-2: ep-2 is credited once per exposure.
    log.record("e1", ["crystal:retry=followed", "crystal:pin=followed"], outcome="success")
    log.record("e2", ["episode:ep-1=ignored"], outcome="failure", exposed=["crystal:retry"])
    report = compute_worth(log, cs, episodes=True)
    ep1, ep2 = report.episodes["ep-1"], report.episodes["ep-2"]
    assert ep1.labels["followed"]["success"] == 1
    # In e2 the direct label on ep-1 wins over the credit from the unlabelled crystal.
    assert ep1.labels["ignored"]["failure"] == 1 and ep1.unlabelled["failure"] == 0
    assert (ep2.success, ep2.labels["followed"]["success"]) == (1, 1)
    assert ep2.unlabelled["failure"] == 1
    assert compute_worth(log).episodes == {}


def test_worth_is_a_report_only(log: OutcomeLog, cs: CrystalStore) -> None:
    before = cs.path.read_bytes()
    log.record("e1", ["crystal:retry=followed"], outcome="failure")
    compute_worth(log, cs, episodes=True)
    assert cs.path.read_bytes() == before


def _receipts(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "receipts.jsonl"
    with p.open("a") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return p


def _ts(minutes_before_now: float) -> str:
    return (NOW - timedelta(minutes=minutes_before_now)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_fold_surfaced_counts_once_and_never_reheats(tmp_path: Path, cs: CrystalStore) -> None:
    path = _receipts(tmp_path, [
        {"event_id": "r1", "ts": _ts(30), "exposed": [{"pattern": "retry"}, {"name": "pin"}]},
        {"event_id": "r2", "ts": _ts(20), "exposed": ["retry", {"kind": "crystal", "ref": "gone"}]},
        {"event_id": "r2", "ts": _ts(20), "exposed": ["retry"]},
        {"event_id": "r3", "ts": _ts(0.5), "exposed": ["retry"]},  # too fresh: next fold
        {"ts": _ts(10), "exposed": ["retry"]},
    ])
    with path.open("a") as fh:
        fh.write("{torn\n")
    first = fold_surfaced(cs, [path], now=NOW)
    assert first.previous_mark is None and first.mark == "2026-05-10T11:59:00Z"
    assert (first.receipts_folded, first.duplicates_skipped, first.lines_skipped) == (2, 1, 2)
    assert first.counts == {"retry": 2, "pin": 1} and first.unknown_names == {"gone": 1}
    retry = cs.get("retry")
    assert (retry.surfaced_count, retry.last_surfaced_on) == (2, "2026-05-10")
    assert retry.last_activated_on == "2026-05-01"

    again = fold_surfaced(cs, [path], now=NOW)
    assert again.receipts_folded == 0 and cs.get("retry").surfaced_count == 2
    later = fold_surfaced(cs, [path], now=NOW + timedelta(minutes=5))
    assert later.previous_mark == "2026-05-10T11:59:00Z" and later.counts == {"retry": 1}
    assert cs.get("retry").surfaced_count == 3


def test_fold_refuses_a_missing_receipt_file(tmp_path: Path, cs: CrystalStore) -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        fold_surfaced(cs, [tmp_path / "nope.jsonl"], now=NOW)
    assert cs.surfaced_mark() is None


def _append_outcomes(path: str, tag: str, n: int) -> None:
    lg = OutcomeLog(path)
    for i in range(n):
        lg.record(f"{tag}-{i}", [f"crystal:p{i}=followed"], outcome="success",
                  exposed=[f"crystal:{'x' * 200}"])


@pytest.mark.slow
def test_concurrent_appends_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    run_processes(_append_outcomes, (path, "a", 100), (path, "b", 100))
    records, bad = OutcomeLog(path).read()
    assert bad == 0 and len(records) == 200
    assert len({r["exposure_id"] for r in records}) == 200
