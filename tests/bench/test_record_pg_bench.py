"""The arithmetic of issue 54's durable-record and PostgreSQL benches (goals 4 and 6):
ratios, verdicts, strace counts and the lock-hold model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import pg_bench  # noqa: E402
import record_ceiling as rc  # noqa: E402

STRACE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 50.31    0.028223           2     12933           pwrite64
 32.31    0.018124          53       336           fdatasync
  0.60    0.000334          55         6           fsync
  1.07    0.000598           2       273        74 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.056094           3     17726       158 total
"""


def test_ratios_are_taken_per_round_then_the_median() -> None:
    r = rc.median_ratio([100.0, 300.0, 200.0], [200.0, 300.0, 100.0])
    assert r == {"median": 1.0, "min": 0.5, "max": 2.0}
    assert rc.median_ratio([], [])["median"] is None
    assert rc.median_ratio([1.0], [0.0])["median"] is None  # no base: no ratio


def test_verdicts_against_the_goal() -> None:
    assert rc.verdict(0.8, 0.8) == "met"
    assert rc.verdict(0.79, 0.8) == "missed"
    assert rc.verdict(None, 0.8) == "not measured"


def test_strace_counts_per_record() -> None:
    counts = rc.parse_strace(STRACE)
    assert counts == {"pwrite64": 12933, "fdatasync": 336, "fsync": 6, "openat": 273}
    assert rc.per_record({"fdatasync": 300}, 200) == {"fdatasync": 1.5}


def test_the_lock_hold_model() -> None:
    # one writer 10 ms a record, 2 ms of it holding the lock, 1 ms of CPU, 2 cores
    m = pg_bench.hold_model(10.0, 2.0, 1.0, 2, 16)
    assert m["one_writer_per_s"] == pytest.approx(100.0)
    assert m["lock_bound_per_s"] == pytest.approx(500.0)
    assert m["cpu_bound_per_s"] == pytest.approx(2000.0)
    assert m["ratio_with_cores"] == pytest.approx(5.0)  # the lock bounds, not 16 writers
    assert pg_bench.hold_model(10.0, 0.1, 1.0, 2, 16)["ratio_with_cores"] == pytest.approx(16.0)
    assert pg_bench.hold_model(10.0, 0.1, 5.0, 2, 16)["ratio_here"] == pytest.approx(4.0)
    with pytest.raises(ValueError):
        pg_bench.hold_model(10.0, 0.0, 1.0, 2)


def test_statements_run_once_a_record_or_more_are_kept() -> None:
    rows = [("SELECT  1\n FROM x", 200, 40.0), ("CREATE TABLE y", 1, 5.0),
            ("INSERT INTO z", 400, 10.0)]
    out = pg_bench.statement_rows(rows, 200)
    assert [r["statement"] for r in out] == ["INSERT INTO z", "SELECT 1 FROM x"]
    assert out[0]["per_record"] == 2.0 and out[1]["ms_per_record"] == pytest.approx(0.2)
