"""Turn the collected results into a markdown table with ratios, and a recall plot.

Pure functions over the ``latest.json`` shape written by ``run.py``:
``{"meta": {...}, "packages": {"ours": PKG, "peer": PKG}}`` where ``PKG`` holds
``import``, ``fsync``, ``sizes`` ({size: {"single": load, "batch": load}}), ``wrap``
({size: wrap}), ``locomo`` and ``errors``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Row = tuple[str, float | None, float | None, str, str]  # label, ours, peer, unit, goal


def _get(d: Any, *path: Any) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def recall_run(pkg: dict[str, Any], size: str) -> dict[str, Any] | None:
    """The load run at ``size`` that carries the recall measurements."""
    runs = _get(pkg, "sizes", size) or {}
    for mode in ("batch", "single"):
        if _get(runs, mode, "recall_keyword"):
            return runs[mode]
    return None


def ratio(ours: float | None, peer: float | None) -> float | None:
    if ours is None or peer is None or peer == 0:
        return None
    return ours / peer


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None:
        return "n/a"
    if unit in ("/s", "B") or abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if abs(v) >= 0.1 or v == 0 else f"{v:.3f}"


def _goal_met(goal: str, r: float | None, ours: float | None) -> str:
    """Goals are written as ``>= 2x``, ``<= 0.2x`` (ratios) or ``>= 0.70`` (absolute)."""
    if not goal:
        return ""
    op, value = goal.split()
    absolute = not value.endswith("x")
    target = float(value.rstrip("x"))
    x = ours if absolute else r
    if x is None:
        return f"{goal}: not measured"
    ok = x >= target if op == ">=" else x <= target
    return f"{goal}: {'met' if ok else 'MISSED'}"


def sizes_of(results: dict[str, Any]) -> list[str]:
    found: set[str] = set()
    for pkg in results["packages"].values():
        found.update((pkg.get("sizes") or {}).keys())
    return sorted(found, key=int)


#: recall query classes as measured by measure.py, with their labels
RECALL_CLASSES = (
    ("recall_keyword", "keyword recall (a stored phrase)"),
    ("recall_keyword_decision", "keyword recall, type=decision"),
    ("recall_keyword_words", "keyword recall, 2-3 words of different episodes"),
    ("recall_keyword_words_decision", "keyword recall, words, type=decision"),
    ("recall_keyword_question", "keyword recall, a LoCoMo question"),
    ("recall_keyword_miss", "keyword recall, nothing matches"),
    ("recall_keyword_mixed", "keyword recall, mixed 1-3 words (1 in 9 absent)"),
    ("recall_keyword_mixed_decision", "keyword recall, mixed, type=decision"),
    ("recall_retrieve_relevant", "retrieve_relevant"),
)
#: issue 25's and 35's goals (ours/peer), per metric key and size
GOALS = {
    ("recall_keyword", "1000"): "<= 0.5x", ("recall_keyword", "10000"): "<= 0.2x",
    ("recall_keyword", "100000"): "<= 0.1x",
    ("recall_keyword_decision", "1000"): "<= 0.5x",
    ("recall_keyword_decision", "10000"): "<= 0.5x",
    # issue 35: the mixed workload, with and without a type filter
    **{(k, s): "<= 0.5x" for k in ("recall_keyword_mixed", "recall_keyword_mixed_decision")
       for s in ("1000", "10000")},
}

Pick = Callable[[dict[str, Any]], Any]
SpeedRow = tuple[str, Pick, str, str]  # label, pick from a package, unit, goal


def speed_specs(results: dict[str, Any]) -> list[SpeedRow]:
    """Every row of the speed table: label, how to read it from one package's results,
    unit, goal (empty when the issue sets none)."""
    rows: list[SpeedRow] = [
        ("import, best of runs (ms)", lambda p: _get(p, "import", "best_ms"), "ms", "<= 0.5x"),
        ("fsync+fdatasync per record() (strace)", lambda p: _get(p, "fsync", "per_record"),
         "", ""),
    ]
    for size in sizes_of(results):
        n = f"{int(size):,}"
        rows.append((f"durable record() @ {n} (records/s)",
                     lambda p, s=size: _get(p, "sizes", s, "single", "load_per_second"),
                     "/s", ">= 2x"))
        rows.append((f"raw SQLite ceiling @ {n} (records/s; one venv)",
                     lambda p, s=size: _get(p, "ceiling", s, "load_per_second"), "/s", ""))
        for q in ("p50", "p95", "p99"):
            rows.append((f"record() {q} @ {n} (ms)", lambda p, s=size, q=q: _get(
                p, "sizes", s, "single", "record_latency", f"{q}_ms"), "ms", ""))
        rows.append((f"batch load @ {n} (records/s)",
                     lambda p, s=size: _get(p, "sizes", s, "batch", "load_per_second")
                     or _get(p, "sizes", s, "single", "load_per_second"), "/s", ""))
        rows.append((f"durable record() into the loaded store @ {n} (records/s)",
                     lambda p, s=size: _get(p, "sizes", s, "batch", "tail_records",
                                            "records_per_second"), "/s", ""))
        for key, label in RECALL_CLASSES:
            for q in ("p50", "p95", "p99"):
                goal = GOALS.get((key, size), "") if q == "p95" else ""
                rows.append((f"{label} {q} @ {n} (ms)", lambda p, s=size, k=key, q=q: _get(
                    recall_run(p, s), k, f"{q}_ms"), "ms", goal))
        rows.append((f"bytes on disk per episode @ {n}",
                     lambda p, s=size: _get(recall_run(p, s), "bytes_per_episode"), "B",
                     "<= 1.0x"))
        rows.append((f"peak RSS, load + recall @ {n} (MB)",
                     lambda p, s=size: _get(recall_run(p, s), "peak_rss_mb"), "", ""))
    sizes = set()
    for pkg in results["packages"].values():
        sizes.update(pkg.get("wrap") or {})
    for size in sorted(sizes, key=int):
        rows.append((f"wrap (prepare + save) @ {size} episodes (ms)",
                     lambda p, s=size: _get(p, "wrap", s, "total_ms"), "ms", "<= 0.5x"))
        rows.append((f"wrap (prepare + save) p95 @ {size} episodes (ms)",
                     lambda p, s=size: _get(p, "wrap", s, "total_p95_ms"), "ms", "<= 1.0x"))
        rows.append((f"first wrap of a process @ {size} episodes (ms)",
                     lambda p, s=size: _get(p, "wrap", s, "total_first_ms"), "ms", ""))
    return rows


def speed_rows(results: dict[str, Any]) -> list[Row]:
    """Rows of the speed table with both packages' values (rows neither has are left out)."""
    ours, peer = results["packages"].get("ours", {}), results["packages"].get("peer", {})
    rows: list[Row] = []
    for label, pick, unit, goal in speed_specs(results):
        o, p = pick(ours), pick(peer)
        if o is not None or p is not None:
            rows.append((label, o, p, unit, goal))
    return rows


def ratio_spread(results: dict[str, Any], pick: Pick) -> tuple[float, float] | None:
    """(lowest, highest) ours/peer ratio over every run (None with fewer than two)."""
    runs = [results["packages"], *results.get("repeats", [])]
    vals = [r for run in runs
            if (r := ratio(pick(run.get("ours", {})), pick(run.get("peer", {})))) is not None]
    return (min(vals), max(vals)) if len(vals) >= 2 else None


def scale_rows(results: dict[str, Any]) -> list[tuple[str, float | None, str]]:
    """Ours at the largest size against ours at 10k: (label, ratio, goal)."""
    ours = results["packages"].get("ours", {})
    sizes = [s for s in sizes_of(results) if int(s) > 10_000]
    if not sizes or "10000" not in sizes_of(results):
        return []
    big = sizes[-1]
    base_rate = _get(ours, "sizes", "10000", "single", "load_per_second") or _get(
        ours, "sizes", "10000", "batch", "tail_records", "records_per_second")
    big_rate = _get(ours, "sizes", big, "batch", "tail_records", "records_per_second")
    n = f"{int(big):,}"
    out = [(f"durable record() time @ {n} vs @ 10,000",
            ratio(base_rate, big_rate), "<= 1.5x")]
    for key, label in RECALL_CLASSES:
        out.append((f"{label} p95 @ {n} vs @ 10,000",
                    ratio(_get(recall_run(ours, big), key, "p95_ms"),
                          _get(recall_run(ours, "10000"), key, "p95_ms")),
                    "<= 3.0x" if key == "recall_keyword" else ""))
    return out


METRICS = ("recall@5", "recall@10", "hit@10")
#: per call, not per category: returned episodes that share no word with the question
NOISE = "mean_sharing_no_word"


def quality_rows(results: dict[str, Any]) -> list[tuple[str, str, list[Any], list[Any]]]:
    """(call, group, ours metrics, peer metrics) for LoCoMo, overall then per category."""
    ours = _get(results, "packages", "ours", "locomo", "methods") or {}
    peer = _get(results, "packages", "peer", "locomo", "methods") or {}

    def pick(d: dict[str, Any], method: str, group: str) -> list[Any]:
        where = _get(d, method, "overall") if group == "overall" else \
            _get(d, method, "by_category", group)
        noise = _get(d, method, NOISE) if group == "overall" else None
        return [_get(where, m) for m in METRICS] + [noise]

    out = []
    for method in dict.fromkeys([*ours, *peer]):
        cats = set(_get(ours, method, "by_category") or {}) | \
            set(_get(peer, method, "by_category") or {})
        for group in ["overall", *sorted(cats)]:
            where = "overall" if group == "overall" else f"by_category/{group}"
            n = _get(ours, method, *where.split("/"), "questions") or \
                _get(peer, method, *where.split("/"), "questions")
            label = f"{group} ({int(n)})" if n else group
            out.append((method, label, pick(ours, method, group), pick(peer, method, group)))
    return out


def growth(results: dict[str, Any], who: str, key: str) -> list[tuple[str, float | None]]:
    """Exponent b in cost ~ size^b between consecutive sizes (1 = linear, 0 = flat)."""
    pkg = results["packages"].get(who, {})
    pts = [(int(s), _get(recall_run(pkg, s), key, "p95_ms")) for s in sizes_of(results)]
    pts = [(s, v) for s, v in pts if v]
    return [(f"{a:,} -> {c:,}", math.log(d / b) / math.log(c / a) if b and d else None)
            for (a, b), (c, d) in zip(pts, pts[1:], strict=False)]


def markdown(results: dict[str, Any]) -> str:
    """The table the README's Performance section shows."""
    meta = results.get("meta", {})
    lines = [
        f"Measured {meta.get('date', '?')} on {meta.get('machine', '?')}, "
        f"Python {meta.get('python', '?')}, load average {meta.get('load_average', '?')} "
        f"at the start, {meta.get('load_average_end', '?')} at the end of the first run "
        "(a shared machine: the first run, not a best of several); ours = this checkout "
        f"({_get(results, 'packages', 'ours', 'version') or '?'}), "
        f"peer = published anneal-memory {meta.get('peer_version', '?')}. "
        f"Reproduce: `{meta.get('command', 'nox -s bench')}`.",
        *([f"Note: {meta['note']}.", ""] if meta.get("note") else [""]),
        "Both packages fsync on commit: every `record()` is durable before it returns "
        "(the strace row counts the sync calls per record)."
        + (" Both run from compiled bytecode, as `pip install` leaves them."
           if meta.get("bytecode") else ""),
        "",
        f"| metric | ours | peer | ours/peer | spread over {1 + len(results.get('repeats', []))}"
        " runs | goal |",
        "|---|---:|---:|---:|---:|---|",
    ]
    ours, peer = results["packages"].get("ours", {}), results["packages"].get("peer", {})
    for label, pick, unit, goal in speed_specs(results):
        o, p = pick(ours), pick(peer)
        if o is None and p is None:
            continue
        r = ratio(o, p)
        sp = ratio_spread(results, pick)
        spread = "" if sp is None else f"{sp[0]:.2f}x-{sp[1]:.2f}x"
        lines.append(f"| {label} | {_fmt(o, unit)} | {_fmt(p, unit)} | "
                     f"{'n/a' if r is None else f'{r:.2f}x'} | {spread} | "
                     f"{_goal_met(goal, r, None)} |")
    scale = scale_rows(results)
    if scale:
        lines += ["", "Scale (ours against ours at 10,000, same run):", "",
                  "| figure | ratio | goal |", "|---|---:|---|"]
        for label, r, goal in scale:
            lines.append(f"| {label} | {'n/a' if r is None else f'{r:.2f}x'} | "
                         f"{_goal_met(goal, r, None)} |")
    methods = {who: _get(results, "packages", who, "batch_method") for who in ("ours", "peer")}
    lines += ["", f"Batch load: ours = {methods['ours'] or 'n/a'}; "
                  f"peer = {methods['peer'] or 'n/a'}."]
    stopped = [f"{who} @ {s}: {run['size']:,} of {run['size_requested']:,}"
               for who, pkg in results["packages"].items()
               for s, modes in (pkg.get("sizes") or {}).items()
               for run in modes.values() if run.get("size") != run.get("size_requested")]
    if stopped:
        lines.append("Stopped at the time bound: " + "; ".join(stopped) + ".")
    skipped = [f"{who}: {msg}" for who, pkg in results["packages"].items()
               for msg in pkg.get("skipped", [])]
    if skipped:
        lines.append("Skipped: " + "; ".join(skipped) + ".")
    quality = quality_rows(results)
    if quality:
        lines += ["", "LoCoMo retrieval quality (every question with evidence, asked as "
                  "written; recall@k = share of the evidence turns in the top k; no-word = "
                  "episodes returned per question that share no word with it, the "
                  "questions' phrases being absent from the store):", "",
                  "| call | group (questions) | ours R@5 | ours R@10 | ours hit@10 "
                  "| ours no-word | peer R@5 | peer R@10 | peer hit@10 | peer no-word | goal |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for method, group, o, p in quality:
        goal = ""
        if method.startswith("recall(keyword") and group.startswith("overall"):
            goal = _goal_met(">= 0.80", None, o[1]) + " (ours R@10)"
        cells = " | ".join(_fmt(v) for v in [*o, *p])
        lines.append(f"| {method} | {group} | {cells} | {goal} |")
    lines += ["", "Cost growth of recall p95 with store size "
              "(exponent b in time ~ size^b; 1 = linear, 0 = flat):", ""]
    for key, label in (("recall_keyword", "keyword recall"),
                       ("recall_retrieve_relevant", "retrieve_relevant")):
        for who in ("ours", "peer"):
            parts = [f"{span}: {'n/a' if b is None else f'{b:.2f}'}"
                     for span, b in growth(results, who, key)]
            lines.append(f"- {label}, {who}: {', '.join(parts) or 'n/a'}")
    errors = [f"{who}: {e}" for who, pkg in results["packages"].items()
              for e in pkg.get("errors", [])]
    if errors:
        lines += ["", "Errors:", *[f"- {e}" for e in errors]]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: str) -> None:
    """Recall latency against store size, log-log, both packages."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = {"ours": "tab:blue", "peer": "tab:orange"}
    panels = (("recall_keyword", "store.recall(keyword=...)"),
              ("recall_retrieve_relevant", "retrieve_relevant(...)"))
    for ax, (key, title) in zip(axes, panels, strict=True):
        for who, pkg in results["packages"].items():
            for q, style in (("p50", "-"), ("p95", "--")):
                pts = [(int(s), _get(recall_run(pkg, s), key, f"{q}_ms"))
                       for s in sizes_of(results)]
                pts = [(s, v) for s, v in pts if v]
                if pts:
                    ax.plot(*zip(*pts, strict=True), style, marker="o", color=colours.get(who),
                            label=f"{who} {q}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("episodes in store")
        ax.set_ylabel("latency (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.suptitle("Recall latency vs store size (ours vs published anneal-memory "
                 f"{_get(results, 'meta', 'peer_version') or ''})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_scaling(results: dict[str, Any], path: str) -> None:
    """How each figure grows with store size, log-log: recall p95 per query class, record
    rates, bytes per episode; ours solid, the published package dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    styles = {"ours": "-", "peer": "--"}
    sizes = sizes_of(results)

    def series(pkg: dict[str, Any], pick: Any) -> list[tuple[int, float]]:
        return [(int(s), v) for s in sizes if (v := pick(pkg, s))]

    panels: list[tuple[str, str, list[tuple[str, Any]]]] = [
        ("recall p95 (ms)", "recall p95 by query class", [
            (label.replace("keyword recall", "kw").replace("retrieve_relevant", "scored"),
             lambda p, s, k=key: _get(recall_run(p, s), k, "p95_ms"))
            for key, label in RECALL_CLASSES]),
        ("records/s", "durable record() rate", [
            ("into a fresh store", lambda p, s: _get(p, "sizes", s, "single",
                                                     "load_per_second")),
            ("into the loaded store", lambda p, s: _get(p, "sizes", s, "batch",
                                                        "tail_records", "records_per_second")),
            ("batch load", lambda p, s: _get(p, "sizes", s, "batch", "load_per_second"))]),
        ("bytes", "bytes on disk per episode", [
            ("all files", lambda p, s: _get(recall_run(p, s), "bytes_per_episode"))]),
    ]
    for ax, (ylabel, title, lines) in zip(axes, panels, strict=True):
        for i, (name, pick) in enumerate(lines):
            colour = f"C{i}"
            for who, pkg in results["packages"].items():
                pts = series(pkg, pick)
                if pts:
                    ax.plot(*zip(*pts, strict=True), styles.get(who, ":"), marker="o",
                            color=colour, label=f"{who}: {name}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("episodes in store")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6.5)
    fig.suptitle("Growth with store size, log-log (ours solid, published anneal-memory "
                 f"{_get(results, 'meta', 'peer_version') or ''} dashed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
