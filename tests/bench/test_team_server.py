"""bench/team_server.py's own arithmetic: the request mix, percentiles, the cross-user
check on a recall reply and the verdicts (a wrong one would publish a wrong figure)."""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import team_server as ts  # noqa: E402


def test_mix_is_half_record_45_recall_5_status() -> None:
    assert ts.pick_tool(0.0) == "record" and ts.pick_tool(0.4999) == "record"
    assert ts.pick_tool(0.5) == "recall" and ts.pick_tool(0.9499) == "recall"
    assert ts.pick_tool(0.95) == "status" and ts.pick_tool(0.99999) == "status"
    rng = random.Random(3)
    n = Counter(ts.pick_tool(rng.random()) for _ in range(20000))
    assert abs(n["record"] / 20000 - 0.50) < 0.02
    assert abs(n["recall"] / 20000 - 0.45) < 0.02
    assert abs(n["status"] / 20000 - 0.05) < 0.01


def test_percentile_by_nearest_rank() -> None:
    xs = [float(i) for i in range(1, 101)]
    assert ts.percentile(xs, 0.5) == 51.0  # rank round(0.5 * 99) = 50 (0-based)
    assert ts.percentile(xs, 0.95) == 95.0
    assert ts.percentile(xs, 0.99) == 99.0
    assert ts.percentile([], 0.95) == 0.0
    assert ts.percentile([7.0], 0.99) == 7.0


def test_leaked_lines_are_other_users_episodes() -> None:
    reply = ("3 matching episode(s) (words); showing 3.\n"
             "- [aa11] (observation, 2026-12-06 21:15) u0001 orchard note 1\n"
             "- [bb22] (observation, 2026-12-06 21:15) u0002 orchard note 2\n"
             "- [cc33] (observation, 2026-12-06 21:15) u00011 orchard note 3\n")
    assert ts.leaked_lines(reply, "u0001") == ["u0002 orchard note 2",
                                               "u00011 orchard note 3"]
    assert ts.leaked_lines("No matching episodes.", "u0001") == []


def test_summary_counts_only_successes_in_rate_and_percentiles() -> None:
    samples = [("record", 10.0, True)] * 50 + [("recall", 20.0, True)] * 45 + [
        ("status", 1.0, True)] * 4 + [("status", 999.0, False)]
    s = ts.summarize(samples, 10.0)
    assert s["requests"] == 100 and s["errors"] == 1 and s["requests_per_s"] == 9.9
    assert s["record"]["p95_ms"] == 10.0 and s["recall"]["n"] == 45
    assert s["status"]["p99_ms"] == 1.0


def _run(p95_recall: float, p95_record: float, **extra: object) -> dict[str, object]:
    run = {"tokens": 1000, "clients": 200, "requests_per_s": 4000.0, "seconds": 30,
           "recall": {"p95_ms": p95_recall}, "record": {"p95_ms": p95_record},
           "status": {"p95_ms": 1.0}, "lost": 0, "wrong_content": 0, "leaks": 0,
           "verify_rc": 0, "errors": 0, "acknowledged": 10, "cpu_s_machine": 1.0,
           "server_cpu_s": 1.0, "server_cpu_ms_per_request": 0.5, "client_cpu_s": 1.0,
           "label": "x"}
    run.update(extra)
    return run


def test_verdicts_need_every_condition() -> None:
    base = {"raw": _run(500, 500, requests_per_s=400.0)}
    met = ts.verdicts({"sqlite, 2 workers, raw clients": _run(50, 100)}, base)
    assert [g["verdict"] for g in met] == ["met", "met"]
    for bad in (_run(50.1, 100), _run(50, 100.1), _run(1, 1, lost=1), _run(1, 1, leaks=1),
                _run(1, 1, verify_rc=1), _run(1, 1, errors=2)):
        got = ts.verdicts({"sqlite, 2 workers, raw clients": bad}, base)
        assert got[0]["verdict"] == "missed" and got[0]["bound"], bad
    slow = ts.verdicts({"sqlite, 2 workers, raw clients": _run(1, 1, requests_per_s=3000.0)},
                       base)
    assert slow[1]["verdict"] == "missed" and "7.50x" in slow[1]["figure"]


def test_a_run_whose_clients_crashed_gives_no_throughput_ratio() -> None:
    """A client process that died ran for part of the run only: its requests/s over the
    run's seconds is no throughput, so a ratio to it is not measured, never met."""
    crash = {"client_crashes": ["RecursionError: maximum recursion depth exceeded"],
             "wall_s": 7.7}
    for runs, base in (
            ({"sqlite, 2 workers, sdk clients": _run(500, 500, requests_per_s=600.0)},
             {"sdk": _run(900, 900, requests_per_s=29.5, **crash)}),
            ({"sqlite, 2 workers, sdk clients": _run(500, 500, requests_per_s=9000.0,
                                                    **crash)},
             {"sdk": _run(900, 900, requests_per_s=400.0)})):
        got = ts.verdicts(runs, base)
        assert got[1]["verdict"] == "not measured", got[1]
        assert "crashed after 7.7 s" in got[1]["figure"] and got[1]["bound"]
    # a crash at teardown, after the run's seconds, leaves a valid figure
    late = ts.verdicts({"sqlite, 2 workers, sdk clients": _run(500, 500, requests_per_s=600.0)},
                       {"sdk": _run(900, 900, requests_per_s=300.0,
                                    **{**crash, "wall_s": 30.99})})
    assert late[1]["verdict"] == "missed" and "2.00x" in late[1]["figure"], late[1]
    # the run's own p95 goal is missed when its clients crashed, whatever its figures
    assert ts.verdicts({"sqlite, 2 workers, raw clients": _run(1, 1, **crash)},
                       {})[0]["verdict"] == "missed"


def test_the_baseline_runs_without_the_compiled_parser_and_loop(tmp_path: Path) -> None:
    """The baseline's code sees httptools and uvloop as not installed, both as a later
    checkout asks (importlib.util.find_spec) and as uvicorn does (an import)."""
    import subprocess

    made = ts.baseline_env("HEAD", tmp_path)
    assert made is not None
    env, sha = made
    probe = ("import importlib.util\n"
             "for name in ('httptools', 'uvloop'):\n"
             "    assert importlib.util.find_spec(name) is None, name\n"
             "    try:\n"
             "        __import__(name)\n"
             "    except ImportError:\n"
             "        pass\n"
             "    else:\n"
             "        raise SystemExit(name + ' imported')\n"
             "import anneal_memory\n"
             "print(anneal_memory.__file__)\n")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env={**__import__("os").environ, **env}, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().startswith(str(tmp_path / "baseline_code")), res.stdout
    assert len(sha) == 12


def test_out_dir_takes_the_report_instead_of_the_results_folder(tmp_path: Path) -> None:
    ts.write({"runs": {}}, [], False, measured_at="2026-01-01T00:00:00+00:00", out_dir=tmp_path)
    assert (tmp_path / "team_server.json").exists() and (tmp_path / "team_server.md").exists()
    # a named folder takes a quick run's report too (the bench session names one)
    quick = tmp_path / "q"
    ts.write({"runs": {}}, [], True, measured_at="2026-01-01T00:00:00+00:00", out_dir=quick)
    assert (quick / "team_server.json").exists() and not (quick / "quick").exists()


def test_a_quick_run_without_a_folder_stays_out_of_the_gathered_results(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ts, "OUT", tmp_path)
    ts.write({"runs": {}}, [], True, measured_at="2026-01-01T00:00:00+00:00")
    assert (tmp_path / "quick" / "team_server.json").exists()
    assert not (tmp_path / "team_server.json").exists()
