"""Issue 54 goal 1 on PostgreSQL: recall_growth.py's PostgreSQL rows live in their own file
(``recall_pg.json``, area ``recall_pg``) that bench/goals.py gathers like every area, and a
SQLite-only run never overwrites a PostgreSQL run's file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import goals  # noqa: E402
import recall_growth as rg  # noqa: E402


def _cls(wall: float) -> dict:
    return {"p95_ms": wall, "cpu": {"p95_ms": wall / 10}, "per_query_cpu_ms": [wall / 10],
            "answered_by": ["phrase"]}


def _store(scale: float) -> dict:
    return {"measured": True, "built": 1, "classes": {
        c: _cls(10.0 * scale * (i + 1)) for i, c in enumerate(rg.CLASSES)}}


def test_pg_rows_use_wall_ratios_and_stay_out_of_the_sqlite_rows() -> None:
    figures = {"growth_pg": {"10000": _store(1.0), "1000000": _store(2.0),
                             "10000000": {"measured": False, "built": 2_000_000}}}
    got = rg.summarize_pg(figures, [10000, 1000000, 10000000])
    assert [g["verdict"] for g in got] == ["met", "not measured"]
    assert "(PostgreSQL)" in got[0]["goal"] and "wall p95" in got[0]["figure"]
    assert "phrase 20.0 ms (2.0x)" in got[0]["figure"]
    figures["growth_pg"]["1000000"] = _store(3.2)
    assert rg.summarize_pg(figures, [10000, 1000000])[0]["verdict"] == "missed"
    assert rg.summarize_pg({}, [10000], ran=False)[0]["verdict"] == "not measured"
    sqlite = {"growth": {"10000": _store(1.0)}, "growth_pg": figures["growth_pg"],
              "small": {"rounds": {"ours": [], "peer": [], "ours_wall": [], "peer_wall": []}}}
    assert not any("PostgreSQL" in g["goal"] for g in rg.summarize(sqlite, [10000]))


def test_run_pg_writes_its_own_area_file_and_keeps_a_measured_one(tmp_path: Path) -> None:
    args = argparse.Namespace(
        out_dir=str(tmp_path), pg_sizes="10000,1000000", pg_dsn="", pg_queries=0,
        quick=True, no_build=True)
    assert rg.run_pg(args, None, 40, 0.0) == 0  # type: ignore[arg-type]
    doc = json.loads((tmp_path / "recall_pg.json").read_text())
    assert doc["area"] == "recall_pg" and doc["goals"][0]["verdict"] == "not measured"
    got = goals.area_goals(doc, "recall_pg.json")
    assert got[0].area == "recall_pg"
    # a measured file is not replaced by a run without a server
    doc["goals"][0]["verdict"] = "met"
    (tmp_path / "recall_pg.json").write_text(json.dumps(doc))
    rg.run_pg(args, None, 40, 0.0)  # type: ignore[arg-type]
    assert json.loads((tmp_path / "recall_pg.json").read_text())["goals"][0]["verdict"] == "met"
    md = rg.markdown_pg(doc, [10000, 1000000])
    assert "PostgreSQL" in md and "| met |" in md
