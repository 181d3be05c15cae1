"""The five deterministic experiments of the governed memory runtime.

A fixed clock, fixed candidates, fixed records and a scripted decision policy stand in
for a model, so every run produces the same numbers. They check boundary contracts
(what is written, what is recalled, what a stale writer or a stale cache can do); they
say nothing about a real model's quality, which is reported as ``null``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, TypedDict

from .._seam import roles_of
from ..store import Store
from .contracts import MemoryCandidate, MemoryRecord, MemoryType, SourceKind, SourceRef
from .namespace import MemoryNamespace
from .recall import rank
from .runtime import MemoryRuntime

CLOCK = datetime(2026, 8, 1, 9, 0, tzinfo=timezone.utc)
QUERY = "Python public API examples"

USER_NS = MemoryNamespace(tenant="acme", user="alice", agent="coder")
PRICING = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="pricing")
PAYMENTS = MemoryNamespace(tenant="acme", user="alice", agent="coder", project="payments")
OTHER_TENANT = MemoryNamespace(tenant="globex", user="alice", agent="coder", project="pricing")

Trace = list[dict[str, Any]]


@contextmanager
def _runtime() -> Iterator[MemoryRuntime]:
    with tempfile.TemporaryDirectory(prefix="anneal-eval-") as d:
        store = Store(os.path.join(d, "eval.db"), audit=False)
        try:
            yield MemoryRuntime(store, clock=lambda: CLOCK)
        finally:
            store.close()


def _cand(cid: str, ns: MemoryNamespace, mtype: str, subject: str, content: str,
          source: str, kind: str, **kw: Any) -> MemoryCandidate:
    return MemoryCandidate(cid, ns, MemoryType.coerce(mtype), subject, content,
                           SourceRef(source, SourceKind.coerce(kind)), **kw)


def _fake_token() -> str:
    # Built at run time so no credential-shaped literal sits in the source tree.
    return "access" + "_token=" + "x7Q" * 8


def language_pref(cid: str = "c-lang", content: str = "Prefer Python for code examples",
                  ns: MemoryNamespace = USER_NS) -> MemoryCandidate:
    return _cand(cid, ns, "semantic", "preferred_language", content, "conv-1#m2",
                 "user_message")


def api_rule(ns: MemoryNamespace = PRICING, cid: str = "c-api") -> MemoryCandidate:
    return _cand(cid, ns, "procedural", "public_api_change",
                 "Confirm with the user before changing a public API", f"{ns.project}/AGENTS.md",
                 "repository")


def write_fixture() -> list[tuple[MemoryCandidate, bool, str]]:
    """(candidate, labelled positive, what it is)."""
    return [
        (language_pref(), True, "explicit language preference"),
        (api_rule(), True, "verified repository API rule"),
        (_cand("c-lesson", PRICING, "episodic", "flaky_pricing_tests",
               "Flaky pricing tests came from a shared cache; clear it between runs",
               "run-17#summary", "model", confidence=0.8), True, "model-inferred debugging lesson"),
        (_cand("c-skip", PRICING, "procedural", "slow_tests",
               "Skip the slow integration tests", "conv-1#m4", "user_message",
               lifetime="one_time"), False, "one-time permission"),
        (_cand("c-log", PRICING, "episodic", "deploy_debug",
               f"Deploy failed; retried with {_fake_token()}", "tool-run-9", "tool_output"),
         False, "tool log holding a credential"),
        (_cand("c-guess", USER_NS, "semantic", "temperament", "User seems impatient with reviews",
               "run-17#summary", "model", confidence=0.3), False, "low-confidence inference"),
        (language_pref("c-lang-again"), False, "repeat of the language preference"),
    ]


TRANSCRIPT = [
    "user: From now on, prefer Python for code examples.",
    "user: Confirm with me before changing a public API.",
    "user: For this debugging session only, skip the slow integration tests.",
    "tool: TMPDIR=/tmp/run-42",
    "assistant: The cache layer might be the root cause (later disproved).",
    "user: thanks!",
]


class Decision(TypedDict):
    """What the scripted agent chose, given its context."""

    language: str
    confirms_public_api: bool
    skips_slow_tests: bool
    task_accepted: bool


def decide(context: list[str]) -> Decision:
    """The scripted agent: its choices depend only on what is in its context."""
    low = [c.lower() for c in context]
    language = "Python" if any("prefer python" in c for c in low) else "JavaScript"
    confirms = any("confirm" in c and "public api" in c for c in low)
    skips = any("skip" in c and "slow" in c for c in low)
    return Decision(language=language, confirms_public_api=confirms, skips_slow_tests=skips,
                    task_accepted=language == "Python" and confirms and not skips)


def _ratio(n: int, d: int) -> float | None:
    return None if d == 0 else round(n / d, 6)


# ---------------------------------------------------------------------- 1 baseline
def baseline(trace: Trace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    variants: dict[str, list[str]] = {"no_memory": [], "full_history": list(TRANSCRIPT)}
    with _runtime() as rt:
        for cand, _pos, _what in write_fixture():
            res = rt.write(cand)
            trace.append({"experiment": "baseline", "step": "write", "candidate": cand.candidate_id,
                          "outcome": res.outcome, "reason": res.reason})
        got = rt.recall(PRICING, QUERY, k=2)
        variants["governed"] = [i.content for i in got.items]
    for name, context in variants.items():
        d = decide(context)
        out[name] = {**d, "context_items": len(context),
                     "one_time_leaks": sum(1 for c in context if "only" in c.lower()
                                           and "skip" in c.lower())}
        trace.append({"experiment": "baseline", "step": "decide", "variant": name,
                      "task_accepted": d["task_accepted"]})
    return out


# ---------------------------------------------------------------------- 2 write gate
def _write_metrics(written: list[MemoryCandidate], labels: dict[str, bool],
                   sensitive: set[str], one_time: set[str], queued: int) -> dict[str, Any]:
    tp = sum(1 for c in written if labels[c.candidate_id])
    positives = sum(1 for v in labels.values() if v)
    subjects = [(c.namespace.key, c.memory_type.value, c.subject.casefold()) for c in written]
    return {"written": len(written), "true_positives": tp,
            "write_precision": _ratio(tp, len(written)), "write_recall": _ratio(tp, positives),
            "sensitive_writes": sum(1 for c in written if c.candidate_id in sensitive),
            "one_time_writes": sum(1 for c in written if c.candidate_id in one_time),
            "duplicate_active": len(subjects) - len(set(subjects)), "review_queued": queued}


def write_gate(trace: Trace) -> dict[str, Any]:
    fixture = write_fixture()
    labels = {c.candidate_id: pos for c, pos, _w in fixture}
    sensitive = {"c-log"}
    one_time = {"c-skip"}
    out: dict[str, Any] = {"candidates": len(fixture),
                           "labelled_positive": sum(labels.values())}
    out["write_everything"] = _write_metrics([c for c, _p, _w in fixture], labels, sensitive,
                                             one_time, 0)
    for variant, approve in (("policy_gated", False), ("policy_plus_review", True)):
        with _runtime() as rt:
            written: list[MemoryCandidate] = []
            queued = 0
            for cand, pos, _w in fixture:
                res = rt.write(cand)
                trace.append({"experiment": "write", "variant": variant,
                              "candidate": cand.candidate_id, "outcome": res.outcome,
                              "reason": res.reason, "memory_id": res.memory_id})
                if res.outcome == "written":
                    written.append(cand)
                elif res.outcome == "review":
                    queued += 1
                    if approve and pos:  # the reviewer follows the fixture's label
                        done = rt.approve(res.review_id or "", reviewer="reviewer-1")
                        trace.append({"experiment": "write", "variant": variant,
                                      "candidate": cand.candidate_id, "step": "approve",
                                      "outcome": done.outcome, "reason": done.reason,
                                      "authority": done.record.authority.value
                                      if done.record else None})
                        if done.outcome == "written":
                            written.append(cand)
            out[variant] = _write_metrics(written, labels, sensitive, one_time, queued)
    return out


# ---------------------------------------------------------------------- 3 recall
def _recall_fixture() -> list[tuple[MemoryCandidate, bool]]:
    """(candidate, relevant to the pricing task)."""
    return [
        (language_pref(), True),
        (api_rule(), True),
        (_cand("c-lunch", USER_NS, "semantic", "lunch", "Likes ramen for lunch", "conv-4#m1",
               "user_message"), False),
        (_cand("c-march", PRICING, "episodic", "date_parser_fix",
               "Fixed the flaky date parser in March", "run-3#summary", "repository"), False),
        (language_pref("c-lang-globex", ns=OTHER_TENANT), False),
        (api_rule(PAYMENTS, "c-api-payments"), False),
    ]


def _recall_metrics(returned: list[MemoryRecord], relevant: set[str],
                    reader: MemoryNamespace) -> dict[str, Any]:
    hits = sum(1 for r in returned if r.memory_id in relevant)
    return {"returned": len(returned), "relevant_returned": hits,
            "precision": _ratio(hits, len(returned)), "recall": _ratio(hits, len(relevant)),
            "scope_leaks": sum(1 for r in returned if not reader.can_read(r.namespace))}


def recall_exp(trace: Trace) -> dict[str, Any]:

    out: dict[str, Any] = {"records": 0, "query": QUERY}
    with _runtime() as rt:
        relevant = set()
        for cand, rel in _recall_fixture():
            rt.write(cand)
            if rel:
                relevant.add(cand.memory_id)
        everything = [MemoryRecord.from_dict(v.body) for v in roles_of(rt.store).governance.all_current_unscoped()]
        out["records"] = len(everything)
        at = rt.now()
        glob = rank(everything, QUERY, at=at, k=5, min_task_match=0)
        visible = [r for r, _h in rt._visible(PRICING)]
        scoped = rt.recall(PRICING, QUERY, k=2)
        out["global_scan_top5"] = _recall_metrics(glob.records, relevant, PRICING)
        out["scope_only"] = _recall_metrics(visible, relevant, PRICING)
        out["scope_ranked_top2"] = _recall_metrics(scoped.records, relevant, PRICING)
        out["scope_ranked_top2"]["scores"] = [i.why for i in scoped.items]
        for name, recs in (("global_scan_top5", glob.records), ("scope_only", visible),
                           ("scope_ranked_top2", scoped.records)):
            trace.append({"experiment": "recall", "variant": name,
                          "returned": [r.memory_id for r in recs]})
        trace.extend({"experiment": "recall", "variant": "scope_ranked_top2", **t}
                     for t in scoped.trace)
    return out


# ---------------------------------------------------------------------- 4 correct
def correct_exp(trace: Trace) -> dict[str, Any]:
    in_place = {"preferred_language": "Python"}
    in_place["preferred_language"] = "TypeScript"
    out: dict[str, Any] = {"in_place_overwrite": {
        "final_value": "TypeScript", "versions_kept": len(in_place), "supersedes_chain": False,
        "stale_writer_refused": None, "stale_writes_committed": None}}
    with _runtime() as rt:
        v1 = rt.write(language_pref()).record
        assert v1 is not None
        v2 = rt.correct(language_pref("c-ts", "Prefer TypeScript for code examples"),
                        expected_record_id=v1.record_id)
        stale = rt.correct(language_pref("c-go", "Prefer Go for code examples"),
                           expected_record_id=v1.record_id)
        versions = rt.versions(USER_NS, "semantic", "preferred_language")
        cur = rt.current(USER_NS, "semantic", "preferred_language")
        for step, res in (("v1", None), ("v2", v2), ("stale_go_writer", stale)):
            if res is not None:
                trace.append({"experiment": "correct", "step": step, "outcome": res.outcome,
                              "reason": res.reason, "memory_id": res.memory_id})
        chain = (len(versions) == 2 and versions[1].supersedes == versions[0].record_id)
        final = "TypeScript" if cur and "TypeScript" in (cur.content or "") else None
        out["versioned"] = {"final_value": final, "versions_kept": len(versions),
                            "supersedes_chain": chain, "stale_writer_refused": None,
                            "stale_writes_committed": None}
        out["stale_writer"] = {"final_value": final, "versions_kept": len(versions),
                               "supersedes_chain": chain,
                               "stale_writer_refused": int(stale.reason == "stale_expected_record"),
                               "stale_writes_committed": int(stale.outcome == "written")}
    return out


# ---------------------------------------------------------------------- 5 forget
def forget_exp(trace: Trace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with _runtime() as rt:
        rt.write(language_pref())
        rt.write(language_pref("c-lang-globex", ns=OTHER_TENANT))
        cached = [(r.record_id, r.content) for r in rt.recall(PRICING, QUERY, k=2).records]
        receipt = rt.forget(USER_NS, "semantic", "preferred_language", reason="user request",
                            request_id="forget-1")
        trace.append({"experiment": "forget", "step": "forget", "memory_id": receipt.memory_id,
                      "record_ids": list(receipt.record_ids),
                      "content_digests": f"<redacted:{len(receipt.content_digests)}>"})

        def leaks(contents: list[str | None]) -> int:
            return sum(1 for c in contents if c and "python" in c.lower())

        resolved = rt.resolve(PRICING, [rid for rid, _c in cached])
        after = rt.recall(PRICING, QUERY, k=2)
        revive = rt.write(language_pref("c-lang-late"))
        rt.rebuild_projection()
        rebuilt = rt.recall(PRICING, QUERY, k=2)
        out["stale_index"] = {"post_delete_leaks": leaks([c for _r, c in cached])}
        out["store_resolved"] = {
            "post_delete_leaks": leaks([r.content for r in resolved])
            + leaks([i.content for i in after.items]),
            "late_writer_reason": revive.reason,
            "resurrections": int(revive.outcome == "written")
            + leaks([i.content for i in rebuilt.items]),
            "receipt_record_ids": len(receipt.record_ids),
            "receipt_holds_content": "Python" in repr(receipt.to_dict())}
        probe = rt.recall(PRICING, "Prefer Python for code examples", k=5)
        out["cross_tenant_probe"] = {
            "scope_leaks": sum(1 for r in probe.records if not PRICING.can_read(r.namespace)),
            "scored_out_of_scope": sum(1 for t in probe.trace
                                       if t["memory_id"] == language_pref(
                                           "x", ns=OTHER_TENANT).memory_id)}
        trace.append({"experiment": "forget", "step": "late_writer", "outcome": revive.outcome,
                      "reason": revive.reason})
    return out


EXPERIMENTS: dict[str, Callable[[Trace], dict[str, Any]]] = {
    "baseline": baseline, "write": write_gate, "recall": recall_exp,
    "correct": correct_exp, "forget": forget_exp,
}


def safety_counts(results: dict[str, Any]) -> dict[str, int]:
    """The counts that must be zero for the governed variants."""
    w, r, c, f = (results[k] for k in ("write", "recall", "correct", "forget"))
    return {
        "sensitive_writes": w["policy_gated"]["sensitive_writes"]
        + w["policy_plus_review"]["sensitive_writes"],
        "one_time_writes": w["policy_gated"]["one_time_writes"]
        + w["policy_plus_review"]["one_time_writes"],
        "one_time_leaks": results["baseline"]["governed"]["one_time_leaks"],
        "scope_leaks": r["scope_only"]["scope_leaks"] + r["scope_ranked_top2"]["scope_leaks"]
        + f["cross_tenant_probe"]["scope_leaks"],
        "stale_writes_committed": c["stale_writer"]["stale_writes_committed"],
        "post_delete_leaks": f["store_resolved"]["post_delete_leaks"],
        "resurrections": f["store_resolved"]["resurrections"],
    }


def run_all() -> tuple[dict[str, Any], Trace]:
    trace: Trace = []
    results = {name: fn(trace) for name, fn in EXPERIMENTS.items()}
    return results, trace
