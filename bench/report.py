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


def speed_rows(results: dict[str, Any]) -> list[Row]:
    """Rows of the speed table, each with its goal (empty when the issue sets none)."""
    ours, peer = results["packages"].get("ours", {}), results["packages"].get("peer", {})
    rows: list[Row] = []

    def add(label: str, pick: Callable[[dict[str, Any]], Any], unit: str,
            goal: str = "") -> None:
        o, p = pick(ours), pick(peer)
        # A size one package skipped still shows the other; a row neither has is noise.
        if o is not None or p is not None:
            rows.append((label, o, p, unit, goal))

    add("import, best of runs (ms)", lambda p: _get(p, "import", "best_ms"), "ms", "<= 0.5x")
    add("fsync+fdatasync per record() (strace)",
        lambda p: _get(p, "fsync", "per_record"), "")
    for size in sizes_of(results):
        n = f"{int(size):,}"
        add(f"durable record() @ {n} (records/s)",
            lambda p, s=size: _get(p, "sizes", s, "single", "load_per_second"), "/s", ">= 2x")
        for q in ("p50", "p95", "p99"):
            add(f"record() {q} @ {n} (ms)",
                lambda p, s=size, q=q: _get(p, "sizes", s, "single", "record_latency",
                                             f"{q}_ms"), "ms")
        add(f"batch load @ {n} (records/s)",
            lambda p, s=size: _get(p, "sizes", s, "batch", "load_per_second")
            or _get(p, "sizes", s, "single", "load_per_second"), "/s")
        goal = {"10000": "<= 0.2x", "100000": "<= 0.1x"}.get(size, "")
        for key, label in (("recall_keyword", "keyword recall"),
                           ("recall_keyword_decision", "keyword recall, type=decision"),
                           ("recall_retrieve_relevant", "retrieve_relevant")):
            for q in ("p50", "p95"):
                add(f"{label} {q} @ {n} (ms)",
                    lambda p, s=size, k=key, q=q: _get(recall_run(p, s), k, f"{q}_ms"), "ms",
                    goal if (key == "recall_keyword" and q == "p95") else "")
        add(f"bytes on disk per episode @ {n}",
            lambda p, s=size: _get(recall_run(p, s), "bytes_per_episode"), "B")
        add(f"peak RSS, load + recall @ {n} (MB)",
            lambda p, s=size: _get(recall_run(p, s), "peak_rss_mb"), "")
    for size in sorted((ours.get("wrap") or peer.get("wrap") or {}), key=int):
        add(f"wrap (prepare + save) @ {size} episodes (ms)",
            lambda p, s=size: _get(p, "wrap", s, "total_ms"), "ms", "<= 1.0x")
    return rows


METRICS = ("recall@5", "recall@10", "hit@10")


def quality_rows(results: dict[str, Any]) -> list[tuple[str, str, list[Any], list[Any]]]:
    """(call, group, ours metrics, peer metrics) for LoCoMo, overall then per category."""
    ours = _get(results, "packages", "ours", "locomo", "methods") or {}
    peer = _get(results, "packages", "peer", "locomo", "methods") or {}

    def pick(d: dict[str, Any], method: str, group: str) -> list[Any]:
        where = _get(d, method, "overall") if group == "overall" else \
            _get(d, method, "by_category", group)
        return [_get(where, m) for m in METRICS]

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
        "at the start (a shared machine: one run, not a best of several); ours = this checkout "
        f"({_get(results, 'packages', 'ours', 'version') or '?'}), "
        f"peer = published anneal-memory {meta.get('peer_version', '?')}. "
        f"Reproduce: `{meta.get('command', 'nox -s bench')}`.",
        *([f"Note: {meta['note']}.", ""] if meta.get("note") else [""]),
        "Both packages fsync on commit: every `record()` is durable before it returns "
        "(the strace row counts the sync calls per record).",
        "",
        "| metric | ours | peer | ours/peer | goal |",
        "|---|---:|---:|---:|---|",
    ]
    for label, o, p, unit, goal in speed_rows(results):
        r = ratio(o, p)
        lines.append(f"| {label} | {_fmt(o, unit)} | {_fmt(p, unit)} | "
                     f"{'n/a' if r is None else f'{r:.2f}x'} | {_goal_met(goal, r, None)} |")
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
                  "written; recall@k = share of the evidence turns in the top k):", "",
                  "| call | group (questions) | ours R@5 | ours R@10 | ours hit@10 "
                  "| peer R@5 | peer R@10 | peer hit@10 | goal |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for method, group, o, p in quality:
        goal = ""
        if method.startswith("recall(keyword") and group.startswith("overall"):
            goal = _goal_met(">= 0.70", None, o[1]) + " (ours R@10)"
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
