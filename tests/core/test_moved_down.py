"""What the Store's own methods run lives below the Store (issue 50): the drift probes'
records (``probes_db``), the open wrap's reading and cancelling (``wrap_state``), the
copy behind ``migrate_store`` (``store_copy``) and the run behind ``eval``
(``governance_eval``). Their old public homes keep the same objects, and each Store
method still does what it did, on a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from anneal_memory import Store
from anneal_memory.errors import ValidationError, WrapInProgressError, WrapTokenError
from anneal_memory.immune import probes
from anneal_memory.wrap import lifecycle
from anneal_memory.wrap.prepare import prepare_wrap


def test_old_homes_export_the_moved_objects() -> None:
    from anneal_memory import probes_db, store_copy, wrap_state
    from anneal_memory.migrate_store import migrate

    for name in ("add_probe", "list_probes", "retire_probe", "drift_status", "probe_notes",
                 "MIN_PROVEN", "NEGATIONS"):
        assert getattr(probes, name) is getattr(probes_db, name), name
    assert lifecycle.cancel_wrap is wrap_state.cancel_wrap
    assert lifecycle.open_wrap_info is wrap_state.open_wrap_info
    assert migrate is store_copy.migrate


def test_eval_package_is_the_run_below_the_cli() -> None:
    import anneal_memory
    from anneal_memory import eval as gov_eval
    from anneal_memory import governance_eval

    try:
        assert gov_eval.run is governance_eval.run
        assert gov_eval.FILES == governance_eval.FILES
    finally:  # importing the package binds ``eval`` on anneal_memory (see test_store)
        vars(anneal_memory).pop("eval", None)


def test_probe_added_listed_retired_with_its_audit(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        pid = s.add_drift_probe(fact="the deploy starts on Friday", note="ops rule")
        assert pid == 1
        listed = s.list_drift_probes()
        assert [(p["id"], p["kind"], p["text"], p["note"]) for p in listed] == [
            (1, "fact", "the deploy starts on Friday", "ops rule")]
        assert s.retire_drift_probe(pid) is True
        assert s.retire_drift_probe(pid) is False  # gone: nothing to retire
        assert s.list_drift_probes() == []
        events = [(e["event"], e["data"].get("id")) for e in s.audit_trail.entries()
                  if e["event"].startswith("probe_")]
        assert events == [("probe_added", 1), ("probe_retired", 1)]
        assert s.drift_status() == {"wrap_id": None, "wrapped_at": None, "probes": [],
                                    "graduated": []}


def test_bad_probe_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        for kw in ({}, {"fact": "a", "pattern": "b"}, {"fact": "the"}, {"fact": 3}):
            with pytest.raises(ValidationError):
                s.add_drift_probe(**kw)  # type: ignore[arg-type]
        assert s.list_drift_probes() == []
        assert not [e for e in s.audit_trail.entries() if e["event"].startswith("probe_")]


def test_wrap_cancelled_reads_and_cancels_the_open_wrap(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db") as s:
        s.record("the cache is cold after deploys", "observation")
        assert not s.wrap_cancelled()  # nothing open: a falsy receipt
        w = prepare_wrap(s)
        assert w["status"] == "ready"
        info = lifecycle.open_wrap_info(s)
        assert info is not None and info["token"] == w["wrap_token"]
        with pytest.raises(WrapTokenError):
            s.wrap_cancelled(wrap_token="not-the-token")
        with pytest.raises(WrapInProgressError):  # a whole wrap is no partial state
            s.wrap_cancelled(expect_partial=True)
        assert lifecycle.open_wrap_info(s) is not None  # the refusals changed nothing
        receipt = s.wrap_cancelled(expect_token=w["wrap_token"])
        assert receipt and lifecycle.open_wrap_info(s) is None
        cancels = [e["data"] for e in s.audit_trail.entries() if e["event"] == "wrap_cancelled"]
        assert cancels == [{"wrap_id": cancels[0]["wrap_id"], "episodes": 1, "forced": False}]


def test_erasure_report_dict_and_audit_data(tmp_path: Path) -> None:
    import dataclasses

    with Store(tmp_path / "m.db") as s:
        ep = s.record("the staging database password rotates every ninety days", "observation")
        s.save_continuity(f"# Continuity\n\n## State\n- [{ep.id}] the staging database "
                          "password rotates every ninety days\n- unrelated line\n")
        report = s.erase([ep.id])
        assert report.continuity_lines == [{"namespace": None, "section": "State", "line": 4,
                                            "episode_ids": [ep.id]}]
        d = report.to_dict()
        assert d == dataclasses.asdict(report)  # the 1.0.2-era shape, key for key
        assert list(d) == [f.name for f in dataclasses.fields(report)]
        d["continuity_lines"][0]["episode_ids"].append("x")  # a copy: the report is unchanged
        assert report.continuity_lines[0]["episode_ids"] == [ep.id]
        assert report.audit_data() == {
            "episodes": 1, "continuity_lines": 1, "unlocated": [], "cells": 0, "files": 0,
            "namespaces": 0, "governed_records": 0,
            "continuity_hashes": report.continuity_hashes}
