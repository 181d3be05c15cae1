"""The governed memory evaluation: safety counts zero, reports byte-identical."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import anneal_memory
from anneal_memory import eval as gov_eval
from anneal_memory.cli.main import main as cli_main
from anneal_memory.governance.experiments import safety_counts


@pytest.fixture(scope="module", autouse=True)
def _unbind_submodule():
    # Importing anneal_memory.eval binds ``eval`` on the package, which
    # test_store.test_public_api_exports would read as an unlisted public name.
    yield
    if "eval" in vars(anneal_memory):
        delattr(anneal_memory, "eval")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    a = tmp_path_factory.mktemp("eval-a")
    b = tmp_path_factory.mktemp("eval-b")
    assert cli_main(["eval", "--output", str(a)]) == 0
    assert cli_main(["eval", "-o", str(b)]) == 0
    return a, b, json.loads((a / "governance-eval.json").read_text("utf-8"))


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_reports_reproduce_byte_for_byte(reports) -> None:
    a, b, _doc = reports
    for name in gov_eval.FILES:
        assert (a / name).stat().st_size > 0
        assert _sha(a / name) == _sha(b / name), name


def test_safety_counts_are_zero(reports) -> None:
    _a, _b, doc = reports
    assert doc["safety_ok"] is True
    assert doc["safety"] == {k: 0 for k in doc["safety"]}
    assert set(doc["safety"]) == {"sensitive_writes", "one_time_writes", "one_time_leaks",
                                  "scope_leaks", "stale_writes_committed",
                                  "post_delete_leaks", "resurrections"}
    assert safety_counts(doc["experiments"]) == doc["safety"]


def test_unmeasured_is_null_not_zero(reports) -> None:
    _a, _b, doc = reports
    assert doc["not_measured"] == {"model_quality": None, "token_savings": None,
                                   "latency_ms": None, "provider_usage": None}
    assert doc["sample_count_per_case"] == 1


def test_baselines_show_what_governance_changes(reports) -> None:
    _a, _b, doc = reports
    ex = doc["experiments"]
    base = ex["baseline"]
    assert [base[v]["task_accepted"] for v in ("no_memory", "full_history", "governed")] == [
        False, False, True]
    assert base["full_history"]["skips_slow_tests"] and base["full_history"]["one_time_leaks"] == 1
    w = ex["write"]
    assert w["write_everything"]["sensitive_writes"] == 1
    assert w["write_everything"]["write_precision"] < w["policy_gated"]["write_precision"] == 1.0
    assert w["policy_gated"]["write_recall"] < w["policy_plus_review"]["write_recall"] == 1.0
    r = ex["recall"]
    assert r["global_scan_top5"]["scope_leaks"] == 2
    assert r["global_scan_top5"]["precision"] < r["scope_only"]["precision"] < \
        r["scope_ranked_top2"]["precision"] == 1.0
    c = ex["correct"]
    assert c["in_place_overwrite"]["versions_kept"] == 1 and c["versioned"]["supersedes_chain"]
    assert c["stale_writer"]["stale_writer_refused"] == 1
    f = ex["forget"]
    assert f["stale_index"]["post_delete_leaks"] == 1
    assert f["store_resolved"]["late_writer_reason"] == "memory_deleted"
    assert f["store_resolved"]["receipt_holds_content"] is False


def test_trace_is_redacted(reports) -> None:
    a, _b, _doc = reports
    text = (a / "governance-trace.jsonl").read_text("utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines and all("experiment" in t for t in lines)
    for word in ("Python", "TypeScript", "ramen", "x7Q", "access_token", "Confirm"):
        assert word not in text
    md = (a / "governance-eval.md").read_text("utf-8")
    assert "null" in md and "## recall" in md


def test_module_runs_as_a_command(tmp_path: Path) -> None:
    out = tmp_path / "cmd"
    proc = subprocess.run([sys.executable, "-m", "anneal_memory.eval", "--output", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(gov_eval.FILES)
    assert cli_main(["eval", "--bogus"]) == 2
