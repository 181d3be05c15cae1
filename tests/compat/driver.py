"""One compat scenario, run in whichever ``anneal_memory`` this interpreter imports.

``python -I driver.py SCENARIO WORKDIR`` prints one JSON object: the scenario's observations,
normalized (episode ids, tokens and timestamps replaced by stable labels, the work folder by
``<W>``). The same file runs in the venv of the published 1.0.2 and in ours, so every call in
it is written the way a 1.0.2 user writes it: a call our package does not accept shows up as
an error observation, and the differential test reports it.

Observation keys starting with ``_`` are context (messages, class names) and never compared.
Standard library only (plus ``mcp`` for the MCP scenarios), no project imports.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as _dt
import enum
import io
import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anneal_memory as am

SCENARIOS: dict[str, Callable[[Path], dict[str, Any]]] = {}
TODAY = _dt.date.today().isoformat()


def scenario(fn: Callable[[Path], dict[str, Any]]) -> Callable[[Path], dict[str, Any]]:
    SCENARIOS[fn.__name__.removeprefix("s_")] = fn
    return fn


# ---------------------------------------------------------------- normalization

class Labels:
    """Stable names for run-specific values: ids, tokens, the work folder."""

    def __init__(self, work: Path) -> None:
        self.work = str(work)
        self.names: dict[str, str] = {}

    def add(self, value: Any, kind: str = "E") -> str:
        value = str(value)
        if len(value) < 4:  # a short number would replace digits everywhere
            return value
        if value not in self.names:
            n = sum(1 for v in self.names.values() if v.startswith(f"<{kind}"))
            self.names[value] = f"<{kind}{n + 1}>"
        return self.names[value]

    def apply(self, text: str) -> str:
        text = text.replace(self.work, "<W>")
        for value in sorted(self.names, key=len, reverse=True):
            if value:
                text = text.replace(value, self.names[value])
        text = re.sub(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?",
                      "<TS>", text)
        text = text.replace(TODAY, "<TODAY>")
        text = re.sub(r"\b[0-9a-f]{64}\b", "<HASH>", text)
        return text


def plain(v: Any, depth: int = 0) -> Any:
    """A JSON value for any result: mappings, dataclasses, named tuples, enums."""
    if depth > 12:
        return "<deep>"
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, enum.Enum):
        return plain(v.value, depth + 1)
    if isinstance(v, str):
        return v
    if isinstance(v, (_dt.date, _dt.datetime)):
        return v.isoformat()
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, Mapping) or (hasattr(v, "keys") and hasattr(v, "__getitem__")
                                  and not isinstance(v, tuple)):
        return {str(k): plain(v[k], depth + 1) for k in v.keys()}  # what result["k"] gives
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {f: plain(getattr(v, f), depth + 1) for f in v._fields}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: plain(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v)}
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [plain(x, depth + 1) for x in v]
        return sorted(items, key=json.dumps) if isinstance(v, (set, frozenset)) else items
    return f"<{type(v).__name__}>"


def err(e: BaseException) -> dict[str, Any]:
    """What a caller can catch: the builtin bases, and whether it is the library's own."""
    if os.environ.get("COMPAT_DEBUG"):
        import traceback

        traceback.print_exception(e)
    return {
        "raised": True,
        "ValueError": isinstance(e, ValueError),
        "KeyError": isinstance(e, KeyError),
        "TypeError": isinstance(e, TypeError),
        "LookupError": isinstance(e, LookupError),
        "AnnealMemoryError": isinstance(e, am.AnnealMemoryError),
        "_class": type(e).__name__,
        "_message": str(e)[:300],
    }


class Obs:
    """Collects observations; a step that raises records the error and the scenario goes on."""

    def __init__(self, work: Path) -> None:
        self.labels = Labels(work)
        self.out: dict[str, Any] = {}

    def __call__(self, name: str, fn: Callable[[], Any], conv: Callable[[Any], Any] = plain
                 ) -> Any:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = fn()
        except Exception as e:  # every refusal is an observation
            self.out[name] = err(e)
            return None
        self.out[name] = conv(value)
        user = sorted({type(w.message).__name__ for w in caught
                       if issubclass(w.category, UserWarning)})
        if user:
            self.out[name + ".warned"] = user
        return value

    def put(self, name: str, value: Any) -> None:
        self.out[name] = plain(value)

    def unordered(self, name: str, key: str | None = None) -> None:
        """Compare observation ``name`` (or its field ``key``) as a set: its order follows
        random ids."""
        self._unordered = [*getattr(self, "_unordered", []), (name, key)]

    def result(self) -> dict[str, Any]:
        text = json.dumps(self.out, sort_keys=True, ensure_ascii=False, default=str)
        out = json.loads(self.labels.apply(text))
        for name, key in getattr(self, "_unordered", []):
            holder = out.get(name)
            if key is not None and isinstance(holder, dict) and isinstance(holder.get(key), list):
                holder[key] = sorted(holder[key], key=json.dumps)
            elif key is None and isinstance(holder, list):
                out[name] = sorted(holder, key=json.dumps)
        return out


def ep(e: Any) -> Any:
    """The Episode fields the 1.0.2 README documents."""
    if e is None:
        return None
    return {k: plain(getattr(e, k)) for k in
            ("id", "timestamp", "type", "content", "source", "session_id", "metadata",
             "superseded_by")}


def eps(r: Any) -> Any:
    return [ep(e) for e in r]


def recall_shape(r: Any) -> Any:
    return {"ids": [e.id for e in r.episodes], "total_matching": r.total_matching,
            "superseded_by": [e.superseded_by for e in r.episodes]}


def keys_of(v: Any) -> Any:
    return {str(k): "present" for k in v.keys()} if hasattr(v, "keys") else f"<{type(v).__name__}>"


def kinds(v: Any) -> Any:
    """Each key's JSON kind: the shape of a result without its values."""
    if not hasattr(v, "keys"):
        return f"<{type(v).__name__}>"
    out = {}
    for k in v.keys():
        x = v[k]
        out[k] = ("null" if x is None else "bool" if isinstance(x, bool) else
                  "int" if isinstance(x, int) else "float" if isinstance(x, float) else
                  "str" if isinstance(x, str) else "list" if isinstance(x, (list, tuple)) else
                  "dict" if hasattr(x, "keys") else type(x).__name__)
    return out


def new_store(work: Path, name: str = "m.db", **kw: Any) -> Any:
    kw.setdefault("project_name", "P")
    return am.Store(str(work / name), **kw)


def doc(patterns: str, *, state: str = "Working on the API.", decisions: str = "- none yet",
        context: str = "Session on the API.", durable: str | None = None) -> str:
    parts = ["# P — Memory (v1)", f"## State\n{state}"]
    if durable is not None:
        parts.append(f"## Durable Facts\n{durable}")
    parts += [f"## Patterns\n{patterns}", f"## Decisions\n{decisions}", f"## Context\n{context}"]
    return "\n\n".join(parts) + "\n"


def wrap(store: Any, text: str, **kw: Any) -> Any:
    w = am.prepare_wrap(store)
    if w["status"] != "ready":
        return {"prepare_status": w["status"]}
    return am.validated_save_continuity(store, text, wrap_token=w["wrap_token"], **kw)


def pattern_lines(text: str | None) -> list[str]:
    """The Patterns section's lines, as the next reader sees them."""
    if not text:
        return []
    body = text.split("## Patterns", 1)[-1].split("\n## ", 1)[0]
    return [ln.strip() for ln in body.splitlines() if ln.strip()]


def save_view(r: Any) -> Any:
    """The parts of a save result the immune-system rules decide."""
    if not hasattr(r, "keys"):
        return plain(r)
    keep = ("graduations_validated", "graduations_demoted", "demoted", "bare_demoted",
            "gaming_suspects", "citation_reuse_max", "supersessions_recorded",
            "supersessions_rejected", "omitted_patterns", "carried_forward", "uncorroborated",
            "proven_without_contradicts_declaration", "cross_session_collisions",
            "durable_warnings", "citation_spread", "episodes_compressed", "contradictions")
    out = {k: plain(r[k]) for k in keep if k in r.keys()}
    if isinstance(out.get("supersessions_rejected"), list):  # the reason is prose
        out["supersessions_rejected"] = [{k: x.get(k) for k in ("old_id", "new_id")}
                                         for x in out["supersessions_rejected"]]
    if "durable_warnings" in out:  # prose: how many, not the wording
        out["durable_warnings"] = len(out["durable_warnings"])
    if "level_capped" in r.keys():
        out["level_capped"] = [{k: c[k] for k in ("name", "capped_to", "written_level")
                                if k in c} for c in r["level_capped"]]
    return out


# ---------------------------------------------------------------- episodes

A = "Connection pool exhaustion is the real bottleneck for the orders API under load"
B = "Chose PostgreSQL as the orders database because ACID guarantees outweigh raw speed"
C = "Why does the nightly export job stall after midnight on Sundays"


@scenario
def s_episodes_basic(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    ids = []
    for i, t in enumerate(["observation", "decision", "tension", "question", "outcome",
                           "context"]):
        e = o(f"record.{t}", lambda t=t, i=i: s.record(f"{t} number {i} about the orders API",
                                                      t), ep)
        if e:
            ids.append(o.labels.add(e.id) and e.id)
    e = o("record.enum", lambda: s.record(A, am.EpisodeType.OBSERVATION, source="tool-x",
                                          metadata={"k": [1, 2]}), ep)
    e and o.labels.add(e.id)
    old = o("record.backdated", lambda: s.record(B, "decision",
                                                 timestamp="2020-01-02T03:04:05Z"), ep)
    old and o.labels.add(old.id)
    o("record.type_is_enum", lambda: isinstance(e.type, am.EpisodeType))
    o("get", lambda: s.get(ids[1]), ep)
    o("get.missing", lambda: s.get("ffffffff"), ep)
    o("recall.all", lambda: s.recall(), recall_shape)
    o("recall.type", lambda: s.recall(episode_type="decision"), recall_shape)
    o("recall.type_enum", lambda: s.recall(episode_type=am.EpisodeType.QUESTION), recall_shape)
    o("recall.keyword", lambda: s.recall(keyword="orders"), recall_shape)
    o("recall.keyword_miss", lambda: s.recall(keyword="zebra"), recall_shape)
    o("recall.source", lambda: s.recall(source="tool-x"), recall_shape)
    o("recall.page", lambda: s.recall(limit=2, offset=1), recall_shape)
    o("recall.since", lambda: s.recall(since="2021-01-01T00:00:00Z"), recall_shape)
    o("recall.until", lambda: s.recall(until="2021-01-01T00:00:00Z"), recall_shape)
    o("recall.query_params", lambda: keys_of(s.recall(keyword="x").query_params))
    o("episodes_since_wrap", lambda: [x.id for x in s.episodes_since_wrap()])
    o("delete", lambda: s.delete(ids[0]))
    o("delete.again", lambda: s.delete(ids[0]))
    o("get.deleted", lambda: s.get(ids[0]), ep)
    o("prune", lambda: s.prune(older_than_days=365))
    o("get.pruned", lambda: s.get(old.id), ep)
    st = o("status", lambda: s.status(), lambda v: None)
    if st is not None:
        for k in ("total_episodes", "episodes_since_wrap", "total_wraps", "last_wrap_at",
                  "wrap_in_progress", "tombstone_count", "continuity_chars", "episodes_by_type",
                  "audit_enabled", "audit_entry_count", "audit_write_failures",
                  "audit_last_failure", "consolidate_requires_baton"):
            o(f"status.{k}", lambda k=k: getattr(st, k))
    s.close()
    o("context_manager", lambda: _ctx(work))
    return o.result()


def _ctx(work: Path) -> Any:
    with new_store(work, "ctx.db") as s:
        s.record(A, "observation")
        n = s.status().total_episodes
    return n


@scenario
def s_record_refusals(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    good = s.record(A, "observation")
    o.labels.add(good.id)
    o("empty", lambda: s.record("", "observation"))
    o("blank", lambda: s.record("   ", "observation"))
    o("unknown_type", lambda: s.record(A, "musing"))
    o("type_not_str", lambda: s.record(A, 7))
    o("content_not_str", lambda: s.record(12345, "observation"))
    o("unknown_trust", lambda: s.record(A, "observation", trust="gossip"))
    o("trust_above_ceiling", lambda: s.record(A, "observation", trust="operator"))
    o("bad_timestamp", lambda: s.record(A, "observation", timestamp="yesterday-ish"))
    o("metadata_not_dict", lambda: s.record(A, "observation", metadata=["a"]))
    o("supersedes_missing", lambda: s.record(A, "observation", supersedes=["ffffffff"]))
    o("derived_from_missing", lambda: s.record(A, "observation", derived_from=["ffffffff"]))
    o("recall.bad_type", lambda: s.recall(episode_type="musing"))
    o("recall.bad_limit", lambda: s.recall(limit=-1))
    o("recall.bad_since", lambda: s.recall(since="not a time"))
    o("prune.negative", lambda: s.prune(older_than_days=-3))
    o("count_after", lambda: s.status().total_episodes)
    s.close()
    o("readonly.record", lambda: _ro_record(work))
    return o.result()


def _ro_record(work: Path) -> Any:
    s = am.Store(str(work / "m.db"), read_only=True)
    try:
        return s.record(A, "observation")
    finally:
        s.close()


# ---------------------------------------------------------------- supersession, state, trust

@scenario
def s_supersession(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    old = s.record("The orders API runs on port 8080 in the staging cluster", "observation",
                   timestamp="2026-01-01T00:00:00Z")
    o.labels.add(old.id)
    new = o("record.supersedes", lambda: s.record(
        "The orders API now runs on port 9090 in the staging cluster", "observation",
        supersedes=[old.id]), ep)
    new and o.labels.add(new.id)
    o("get.old", lambda: s.get(old.id), ep)
    o("recall.default", lambda: s.recall(keyword="staging"), recall_shape)
    o("recall.include", lambda: s.recall(keyword="staging", include_superseded=True),
      recall_shape)
    o("supersedes.unrelated", lambda: s.record("Bananas ripen faster next to apples",
                                               "observation", supersedes=[old.id]))
    o("supersedes.missing", lambda: s.record("The orders API port", "observation",
                                             supersedes=["ffffffff"]))
    later = s.record("Staging cluster port for the orders API is fixed", "observation")
    o.labels.add(later.id)
    o("supersedes.newer", lambda: s.record(
        "The orders API staging cluster port", "observation",
        timestamp="2025-01-01T00:00:00Z", supersedes=[later.id]))
    o("count", lambda: s.status().total_episodes)
    if new:
        o("unsupersede", lambda: s.unsupersede(old_id=old.id, new_id=new.id))
        o("unsupersede.again", lambda: s.unsupersede(old_id=old.id, new_id=new.id))
        o("recall.after_undo", lambda: s.recall(keyword="staging"), recall_shape)
    s.close()
    return o.result()


@scenario
def s_state_keys(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    a = s.record("I live in Seattle near the lake", "observation", state_key="user.home_city",
                 timestamp="2026-01-01T00:00:00Z")
    b = s.record("Settled into my new place in Austin", "observation",
                 state_key="user.home_city", timestamp="2026-02-01T00:00:00Z")
    # 1.0.2 keys only an episode whose timestamp is in its own stored form
    c = s.record("Back in the old flat for a week, in Denver", "observation",
                 timestamp="2025-06-01T00:00:00.000000Z")
    for x in (a, b, c):
        o.labels.add(x.id)
    o("get.a", lambda: s.get(a.id), ep)
    o("recall.default", lambda: s.recall(), recall_shape)
    o("set_state_key.backdated", lambda: s.set_state_key(c.id, "user.home_city"))
    o("get.c", lambda: s.get(c.id), ep)
    o("recall.after_set", lambda: s.recall(), recall_shape)
    o("clear_state_key", lambda: s.clear_state_key(b.id))
    o.unordered("clear_state_key", "removed")
    o("recall.after_clear", lambda: s.recall(), recall_shape)
    o("set_state_key.bad", lambda: s.set_state_key(a.id, ""))
    o("set_state_key.missing", lambda: s.set_state_key("ffffffff", "k"))
    o("keyed_with_link", lambda: s.record("Now in Austin downtown, the new place", "observation",
                                          state_key="user.home_city", supersedes=[a.id]))
    rep = o("state_key_report", lambda: s.state_key_report("user.home_city"))
    if rep is None:
        o("state_report", lambda: s.state_report("user.home_city"))
    s.close()
    return o.result()


@scenario
def s_trust(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    t = s.record("The vendor page says the orders API supports bulk refunds", "observation",
                 trust="tool")
    x = s.record("An external blog claims bulk refunds are free", "observation",
                 trust="external")
    a = s.record("Summary of vendor page: orders API supports bulk refunds", "observation",
                 derived_from=[t.id])
    g = s.record(A, "observation")
    for e in (t, x, a, g):
        o.labels.add(e.id)
    o("effective_trust_map", lambda: s.effective_trust_map([t.id, x.id, a.id, g.id]))
    o("set_trust.lower", lambda: s.set_trust(g.id, "tool"))
    o("effective_after_lower", lambda: s.effective_trust_map([g.id]))
    o("set_trust.raise_to_agent", lambda: s.set_trust(g.id, "agent"))
    o("set_trust.above_ceiling", lambda: s.set_trust(g.id, "operator"))
    o("set_trust.unknown", lambda: s.set_trust(g.id, "gossip"))
    o("set_trust.missing", lambda: s.set_trust("ffffffff", "tool"))
    o("supersede_higher_by_lower", lambda: s.record(
        "Connection pool exhaustion is not the bottleneck for the orders API under load",
        "observation", trust="tool", supersedes=[g.id]))
    s.close()
    op = am.Store(str(work / "m.db"), trust_ceiling="operator")
    o("operator.record", lambda: op.record("Operator fact: deploys freeze on Fridays",
                                           "observation", trust="operator").id is not None)
    op.close()
    return o.result()


# ---------------------------------------------------------------- wrap

@scenario
def s_wrap_package(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    o("empty.status", lambda: am.prepare_wrap(s)["status"])
    o("empty.keys", lambda: keys_of(am.prepare_wrap(s)))
    ids = [s.record(t, k) for t, k in ((A, "observation"), (B, "decision"), (C, "question"))]
    for e in ids:
        o.labels.add(e.id)
    w = o("ready", lambda: am.prepare_wrap(s), lambda v: None)
    if w is None:
        return o.result()
    o.labels.add(w["wrap_token"], "T")
    o("ready.keys", lambda: keys_of(w))
    o("ready.status", lambda: w["status"])
    o("ready.episode_count", lambda: w["episode_count"])
    o("ready.schema_warning", lambda: w["schema_warning"])
    o("package.keys", lambda: keys_of(w["package"]))
    pk = w["package"]
    o("package.episodes", lambda: pk["episodes"])
    o("package.episode_count", lambda: pk["episode_count"])
    o("package.continuity", lambda: pk["continuity"])
    o("package.stale_patterns", lambda: pk["stale_patterns"])
    o("package.today", lambda: pk["today"])
    o("package.max_chars", lambda: pk["max_chars"])
    o("package.instructions_is_text", lambda: isinstance(pk["instructions"], str))
    o("second_prepare", lambda: am.prepare_wrap(s))
    o("status.in_progress", lambda: s.status().wrap_in_progress)
    o("record_during_wrap", lambda: s.record("Late note about the orders API", "observation")
      is not None)
    o("set_schema_during_wrap", lambda: s.set_section_schema(am.FLOW_SCHEMA))
    o("wrap_cancelled.wrong_token", lambda: s.wrap_cancelled(expect_token="0" * 32))
    o("wrap_cancelled", lambda: s.wrap_cancelled(expect_token=w["wrap_token"]) is not None)
    o("status.after_cancel", lambda: s.status().wrap_in_progress)
    o("save_without_wrap", lambda: am.validated_save_continuity(s, doc("- x | 1x")))
    o("max_chars", lambda: am.prepare_wrap(s, max_chars=5000)["package"]["max_chars"])
    s.close()
    return o.result()


@scenario
def s_stale_patterns(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("save.first", lambda: wrap(s, doc(
        f"pool-bottleneck | 1x (2026-01-03) [evidence: {e.id} \"connection pool exhaustion\"]\n"
        "old-habit | 1x (2025-01-01)")), save_view)
    e2 = s.record(B, "decision")
    o.labels.add(e2.id)
    w = o("prepare", lambda: am.prepare_wrap(s, staleness_days=7), lambda v: None)
    if w:
        o.labels.add(w["wrap_token"], "T")
        o("stale_patterns", lambda: w["package"]["stale_patterns"])
        o("stale.content", lambda: [p["content"] for p in w["package"]["stale_patterns"]])
        o("stale.keys", lambda: [keys_of(p) for p in w["package"]["stale_patterns"]])
        o("cancel", lambda: s.wrap_cancelled(expect_token=w["wrap_token"]) is not None)
    s.close()
    return o.result()


@scenario
def s_save_result(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e1 = s.record(A, "observation")
    e2 = s.record(B, "decision")
    for e in (e1, e2):
        o.labels.add(e.id)
    r = o("save", lambda: wrap(s, doc(
        f"pool-bottleneck | 1x ({TODAY}) [evidence: {e1.id} \"connection pool exhaustion\"]",
        decisions=f"- PostgreSQL for orders [decided(ACID, {TODAY})]")), lambda v: None)
    if r is None:
        return o.result()
    o("keys", lambda: keys_of(r))
    o("kinds", lambda: kinds(r))
    for k in ("path", "chars", "episodes_compressed", "wrap_id", "citation_spread",
              "graduations_validated", "graduations_demoted", "supersessions_recorded",
              "supersessions_rejected", "demoted", "bare_demoted", "drift"):
        o(f"value.{k}", lambda k=k: r[k])
    o("continuity", lambda: s.load_continuity())
    o("status.total_wraps", lambda: s.status().total_wraps)
    o("status.episodes_since_wrap", lambda: s.status().episodes_since_wrap)
    o("status.continuity_chars_matches", lambda: s.status().continuity_chars == r["chars"])
    o("continuity_path", lambda: str(s.continuity_path))
    s.close()
    return o.result()


@scenario
def s_save_refusals(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    w = am.prepare_wrap(s)
    tok = w["wrap_token"]
    o.labels.add(tok, "T")
    full = doc(f"pool | 1x ({TODAY})")
    o("missing_section", lambda: am.validated_save_continuity(
        s, "# P\n\n## State\nx\n\n## Patterns\n- p | 1x\n", wrap_token=tok))
    o("no_token", lambda: am.validated_save_continuity(s, full))
    o("wrong_token", lambda: am.validated_save_continuity(s, full, wrap_token="f" * 32))
    o("oversized", lambda: am.validated_save_continuity(
        s, doc(f"pool | 1x ({TODAY})", context="word " * 6000), wrap_token=tok))

    def oversized_attrs() -> Any:  # what 1.0.2's callers read off the refusal
        try:
            am.validated_save_continuity(
                s, doc(f"pool | 1x ({TODAY})", context="word " * 6000), wrap_token=tok)
        except am.ContinuityValidationError as exc:
            return {k: getattr(exc, k, "<absent>") for k in ("chars", "bound", "target")}
        return "saved"
    o("oversized.attrs", oversized_attrs)
    o("still_open", lambda: s.status().wrap_in_progress)
    o("good", lambda: am.validated_save_continuity(s, full, wrap_token=tok)["wrap_id"])
    o("second_save", lambda: am.validated_save_continuity(s, full, wrap_token=tok))
    o("after_save_no_wrap", lambda: am.validated_save_continuity(s, full))
    o("empty_prepare", lambda: am.prepare_wrap(s)["status"])
    o("not_text", lambda: am.validated_save_continuity(s, None))
    s.close()
    return o.result()


@scenario
def s_shrink_gate(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work, section_schema=am.FLOW_SCHEMA)
    o("schema_headings", lambda: [x["heading"] for x in s.section_schema])
    long_felt = " ".join(f"We learned trust takes time and care, lesson {i}." for i in range(40))

    def flow(understanding: str, patterns: str = f"pool | 1x ({TODAY})") -> str:
        return (f"# P — Memory (v1)\n\n## State\nx\n\n## Active Threads\n- thread\n\n"
                f"## Patterns\n{patterns}\n\n## Decisions\n- none\n\n## Context\nc\n\n"
                f"## Understanding\n{understanding}\n")

    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("first", lambda: wrap(s, flow(long_felt))["wrap_id"])
    s.record(B, "decision")
    w = am.prepare_wrap(s)
    o.labels.add(w["wrap_token"], "T")
    o("collapse", lambda: am.validated_save_continuity(s, flow("short now."),
                                                       wrap_token=w["wrap_token"]))
    o("still_open", lambda: s.status().wrap_in_progress)
    o("allow_shrink", lambda: am.validated_save_continuity(
        s, flow("short now."), wrap_token=w["wrap_token"], allow_shrink=True)["wrap_id"])
    s.close()
    return o.result()


# ---------------------------------------------------------------- immune system, one rule each

def _two_wraps(work: Path, o: Obs, first: str, second: Callable[[Any, list[Any]], str],
               contents: tuple[str, ...] = (A, B), trust: str = "agent",
               **kw: Any) -> tuple[Any, list[Any]]:
    """Wrap 1 saves ``first`` (citing episode 1); wrap 2 records ``contents`` and saves."""
    s = new_store(work)
    e0 = s.record("Connection pool exhaustion shows up as timeouts in the orders API logs",
                  "observation")
    o.labels.add(e0.id)
    o("wrap1", lambda: wrap(s, doc(first.replace("E0", e0.id))), save_view)
    es = [s.record(c, "observation", trust=trust) for c in contents]
    for e in es:
        o.labels.add(e.id)
    r = o("wrap2", lambda: wrap(s, second(e0, es), **kw), save_view)
    o("lines", lambda: pattern_lines(s.load_continuity()))
    return s, [e0, *es, r]


FIRST = f"pool-bottleneck | 1x ({TODAY}) [evidence: E0 \"connection pool exhaustion timeouts\"]"


def _two_wrap_scenario(name: str, second: Callable[[Any, list[Any]], str], **kw: Any) -> None:
    """A scenario that runs ``_two_wraps`` with this second continuity."""
    def run(work: Path) -> dict[str, Any]:
        o = Obs(work)
        s, _ = _two_wraps(work, o, FIRST, second, **kw)
        s.close()
        return o.result()

    SCENARIOS[name] = run


# one rule each: a valid citation climbs; an invented id, an explanation sharing no words
# and a prior-wrap id each demote; relayed grounding is uncorroborated
_two_wrap_scenario("immune_valid_citation", lambda e0, es: doc(
    f"pool-bottleneck | 2x ({TODAY}) [evidence: {es[0].id} \"connection pool exhaustion "
    f"bottleneck\"]"))
_two_wrap_scenario("immune_fabricated_id", lambda e0, es: doc(
    f"pool-bottleneck | 2x ({TODAY}) [evidence: deadbeef \"connection pool exhaustion\"]"))
_two_wrap_scenario("immune_no_shared_words", lambda e0, es: doc(
    f"pool-bottleneck | 2x ({TODAY}) [evidence: {es[0].id} \"banana orchard weather\"]"))
_two_wrap_scenario("immune_replay_prior_wrap", lambda e0, es: doc(
    f"pool-bottleneck | 2x ({TODAY}) [evidence: {e0.id} \"connection pool exhaustion "
    f"timeouts\"]"))


@scenario
def s_immune_demote_from_high(work: Path) -> dict[str, Any]:
    """A failed citation demotes from any level: climb to 3x, then fail."""
    o = Obs(work)
    s = new_store(work)
    level = 1
    rounds = (("Connection pool exhaustion stalls the orders API", "connection pool exhaustion"),
              ("Checkout latency spikes when workers queue for database handles",
               "checkout latency spikes"),
              ("Nightly imports time out waiting on saturated connections",
               "nightly imports time out"))
    for i, (text, why) in enumerate(rounds):
        e = s.record(text, "observation")
        o.labels.add(e.id)
        o(f"climb{i}", lambda e=e, lv=level, why=why: wrap(s, doc(
            f"pool-bottleneck | {lv}x ({TODAY}) [evidence: {e.id} \"{why}\"]")), save_view)
        level += 1
    o("lines.climbed", lambda: pattern_lines(s.load_continuity()))
    e = s.record(B, "decision")
    o.labels.add(e.id)
    o("fail", lambda: wrap(s, doc(
        f"pool-bottleneck | 3x ({TODAY}) [evidence: deadbeef \"connection pool exhaustion\"]"),
        carryforward_cold_days=None), save_view)
    o("lines.after", lambda: pattern_lines(s.load_continuity()))
    s.close()
    return o.result()


@scenario
def s_immune_bare_graduation(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("first_wrap_bare", lambda: wrap(s, doc(f"bare-claim | 2x ({TODAY})")), save_view)
    o("lines1", lambda: pattern_lines(s.load_continuity()))
    e2 = s.record("Connection pool exhaustion again in the orders API", "observation")
    o.labels.add(e2.id)
    o("with_citation", lambda: wrap(s, doc(
        f"bare-claim | 1x ({TODAY})\n"
        f"pool | 1x ({TODAY}) [evidence: {e2.id} \"connection pool exhaustion\"]")), save_view)
    e3 = s.record(B, "decision")
    o.labels.add(e3.id)
    o("bare_after_citations", lambda: wrap(s, doc(
        f"bare-claim | 2x ({TODAY})\n"
        f"pool | 1x ({TODAY}) [evidence: {e3.id} \"PostgreSQL orders database\"]"),
        carryforward_cold_days=None), save_view)
    o("lines3", lambda: pattern_lines(s.load_continuity()))
    s.close()
    return o.result()


@scenario
def s_immune_carryforward(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("w1", lambda: wrap(s, doc(
        f"pool | 1x ({TODAY}) [evidence: {e.id} \"connection pool exhaustion\"]")), save_view)
    e2 = s.record("Connection pool exhaustion bottleneck in the orders API again", "observation")
    o.labels.add(e2.id)
    o("w2", lambda: wrap(s, doc(
        f"pool | 2x ({TODAY}) [evidence: {e2.id} \"connection pool exhaustion bottleneck\"]")),
      save_view)
    e3 = s.record(C, "question")
    o.labels.add(e3.id)
    o("w3_failed_recent", lambda: wrap(s, doc(
        f"pool | 2x ({TODAY}) [evidence: deadbeef \"connection pool exhaustion\"]")), save_view)
    o("lines", lambda: pattern_lines(s.load_continuity()))
    s.close()
    return o.result()


@scenario
def s_immune_gaming(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    lines = "\n".join(
        f"claim-{i} | 1x ({TODAY}) [evidence: {e.id} \"connection pool exhaustion\"]"
        for i in range(3))
    o("save", lambda: wrap(s, doc(lines)), save_view)
    s.close()
    return o.result()


@scenario
def s_immune_level_cap(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("new_9x", lambda: wrap(s, doc(
        f"pool | 9x (2026-01-02) [evidence: {e.id} \"connection pool exhaustion\"]")), save_view)
    o("lines", lambda: pattern_lines(s.load_continuity()))
    e2 = s.record("Connection pool exhaustion hits the orders API bottleneck", "observation")
    o.labels.add(e2.id)
    o("jump_3", lambda: wrap(s, doc(
        f"pool | 4x ({TODAY}) [evidence: {e2.id} \"connection pool exhaustion\"]")), save_view)
    o("lines2", lambda: pattern_lines(s.load_continuity()))
    s.close()
    return o.result()


_two_wrap_scenario("immune_uncorroborated", lambda e0, es: doc(
    f"pool-bottleneck | 2x ({TODAY}) [evidence: {es[0].id} \"connection pool exhaustion "
    f"bottleneck\"]"), trust="tool")


@scenario
def s_immune_wrap_supersession(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    old = s.record("The orders API runs on port 8080 in staging", "observation",
                   timestamp="2026-01-01T00:00:00Z")
    o.labels.add(old.id)
    o("w1", lambda: wrap(s, doc(f"p | 1x ({TODAY})")), save_view)
    new = s.record("The orders API now runs on port 9090 in staging", "observation")
    other = s.record("Bananas ripen faster next to apples", "observation")
    o.labels.add(new.id)
    o.labels.add(other.id)
    o("w2", lambda: wrap(s, doc(f"p | 1x ({TODAY})", context=(
        f"[supersedes: {old.id} by {new.id}]\n[supersedes: {new.id} by {other.id}]\n"
        f"[supersedes: ffffffff by {new.id}]"))), save_view)
    o("old", lambda: s.get(old.id), ep)
    o("recall", lambda: s.recall(keyword="staging"), recall_shape)
    s.close()
    return o.result()


@scenario
def s_immune_superseded_evidence(work: Path) -> dict[str, Any]:
    """A replaced episode stops counting as evidence."""
    o = Obs(work)
    s = new_store(work)
    e0 = s.record("Connection pool exhaustion shows up as timeouts in the orders API logs",
                  "observation")
    o.labels.add(e0.id)
    o("wrap1", lambda: wrap(s, doc(FIRST.replace("E0", e0.id))), save_view)
    a = s.record(A, "observation", timestamp="2026-01-01T00:00:00Z")
    b = s.record("Connection pool exhaustion is no longer the bottleneck for the orders API "
                 "under load", "observation", supersedes=[a.id])
    o.labels.add(a.id)
    o.labels.add(b.id)
    o("wrap2", lambda: wrap(s, doc(
        f"pool-bottleneck | 2x ({TODAY}) [evidence: {a.id} \"connection pool exhaustion "
        f"bottleneck\"]")), save_view)
    o("lines", lambda: pattern_lines(s.load_continuity()))
    s.close()
    return o.result()


@scenario
def s_immune_omitted_and_contradicts(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("w1", lambda: wrap(s, doc(
        f"pool | 1x ({TODAY}) [evidence: {e.id} \"connection pool exhaustion\"]\n"
        f"other | 1x ({TODAY})")), save_view)
    e2 = s.record("Connection pool exhaustion again stalls the orders API", "observation")
    o.labels.add(e2.id)
    o("w2_proven_no_stance", lambda: wrap(s, doc(
        f"pool | 2x ({TODAY}) [evidence: {e2.id} \"connection pool exhaustion\"]\n"
        f"other | 1x ({TODAY})")), save_view)
    e3 = s.record(B, "decision")
    o.labels.add(e3.id)
    o("w3_dropped", lambda: wrap(s, doc(f"other | 1x ({TODAY})")), save_view)
    s.close()
    return o.result()


@scenario
def s_immune_cross_session(work: Path) -> dict[str, Any]:
    """A re-grounding that rephrases the explanation a prior rung was earned with demotes."""
    o = Obs(work)
    s = new_store(work)
    e = s.record("Connection pool exhaustion under load is the orders API bottleneck",
                 "observation")
    o.labels.add(e.id)
    o("w1", lambda: wrap(s, doc(
        f"pool | 1x ({TODAY}) [evidence: {e.id} \"connection pool exhaustion under load\"]")),
      save_view)
    e2 = s.record("Checkout latency spikes when workers queue for database handles",
                  "observation")
    o.labels.add(e2.id)
    o("w2_climb", lambda: wrap(s, doc(
        f"pool | 2x ({TODAY}) [evidence: {e2.id} \"workers queue for database handles\"]")),
      save_view)
    e3 = s.record("Workers queue again for database handles during the sale",
                  "observation")
    o.labels.add(e3.id)
    o("w3_rephrase", lambda: wrap(s, doc(
        f"pool | 3x ({TODAY}) [evidence: {e3.id} \"workers queue for database handles\"]")),
      save_view)
    o("lines", lambda: pattern_lines(s.load_continuity()))
    s.close()
    return o.result()


@scenario
def s_durable_facts(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record("The user mentioned a tree nut allergy at dinner planning", "observation")
    o.labels.add(e.id)
    d1 = ("- tree nut allergy — cues: restaurant, dinner, food\n"
          "- works night shifts on weekends")
    o("w1", lambda: wrap(s, doc(f"p | 1x ({TODAY})", durable=d1)), save_view)
    o("parse", lambda: am.parse_durable_facts(s.load_continuity(), am.DEFAULT_SCHEMA))
    s.record(B, "decision")
    o("w2_left_out", lambda: wrap(s, doc(f"p | 1x ({TODAY})",
                                         durable="- works night shifts on weekends")), save_view)
    o("after_left_out", lambda: am.parse_durable_facts(s.load_continuity(), am.DEFAULT_SCHEMA))
    s.record(C, "question")
    o("w3_drop", lambda: wrap(s, doc(f"p | 1x ({TODAY})", durable=(
        "- tree nut allergy — cues: restaurant, dinner, food\n"
        "[drop-durable: works night shifts on weekends]"))), save_view)
    o("after_drop", lambda: am.parse_durable_facts(s.load_continuity(), am.DEFAULT_SCHEMA))
    s.close()
    return o.result()


@scenario
def s_drift_probes(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("w1", lambda: wrap(s, doc(
        f"pool | 1x ({TODAY}) [evidence: {e.id} \"connection pool exhaustion\"]",
        state="The nightly export does run on Sundays. Deploys freeze on Fridays.")), save_view)
    p1 = o("add.pattern", lambda: s.add_drift_probe(pattern="pool"))
    p2 = o("add.fact_negation", lambda: s.add_drift_probe(fact="nightly export does run on "
                                                               "Sundays"))
    p3 = o("add.fact_lost", lambda: s.add_drift_probe(fact="Deploys freeze on Fridays"))
    p4 = o("add.fact_weakened", lambda: s.add_drift_probe(fact="pool exhaustion orders API"))
    for p in (p1, p2, p3, p4):
        if p is not None:
            o.labels.add(p, "P")
    o("add.nothing", lambda: s.add_drift_probe())
    o("add.both", lambda: s.add_drift_probe(pattern="pool", fact="x y z"))
    o("add.min_level_1", lambda: s.add_drift_probe(pattern="pool", min_level=1))
    s.record(B, "decision")
    r = o("w2", lambda: wrap(s, doc(
        f"pool | 1x ({TODAY})", state="The nightly export does not run on Sundays.",
        context="orders API pool")), lambda v: None)
    if r is not None and hasattr(r, "keys"):
        o("drift", lambda: r["drift"] if "drift" in r else "<absent>")
    o("drift_status", lambda: [{k: p[k] for k in ("id", "kind", "status")}
                               for p in s.drift_status()["probes"]])
    o("drift_status.keys", lambda: keys_of(s.drift_status()))
    s.close()
    return o.result()


#: fact probes and rewordings of the State line: each verdict (held, changed, lost) as
#: 1.0.2 gives it: inflections ("starts" / "does not start"), where a negation governs the
#: fact's words (before them, between them, after them), clauses, apostrophes, numbers
FACT_WORDINGS: dict[str, list[str]] = {
    "deploy freeze starts Friday noon": [
        "The deploy freeze does not start on Friday at noon.",
        "The deploy freeze started on Friday at noon.",
        "The deploys freezes start on Fridays at noon.",
        "The deploy freeze isn't starting Friday noon.",
        "The deploy freeze starts Friday noon, not Monday.",
        "It is not true that the deploy freeze starts Friday noon.",
        "Not at all, as everybody in the whole team knows by now, the deploy freeze starts "
        "Friday noon.",
        "The deploy freeze, not the release, starts Friday noon.",
        "The deploy freeze starts Friday; noon is when.",
        "The deploy freeze does not start Friday noon. The deploy freeze starts Friday noon.",
        "The deploy freeze begins Friday noon.",
        "The deploy freeze none starts Friday noon.",
    ],
    "nightly export does not run on Sundays": [
        "The nightly export runs on Sundays.",
        "The nightly export never runs on Sundays.",
        "Nightly export: no run on Sundays.",
        "The nightly exports ran on Sunday.",
    ],
    "backup runs at 3 am with 14 retries": [
        "Backups run at 3 am with 14 retries.",
        "Backup runs at 3 am with 15 retries.",
        "Backup does not run at 3 am with 14 retries.",
    ],
    "the mobile app does not support offline mode": [
        "Mobile apps do support offline mode now.",
        "The mobile app never supported offline modes.",
        "The mobile app has no offline mode support.",
    ],
    "we never deploy on holidays": [
        "We deploy on holidays, never on weekends.",
        "Holidays: no deploys.",
        "We don't deploy on holidays.",
    ],
    "classes process Friday's horses at 9 o'clock": [
        "The class processes Friday horse at 9 clock.",
        "Classes processed Fridays hors at 9 o'clock.",
        "The boxes of classes processing Friday horses at 09 o'clock.",
    ],
}


@scenario
def s_drift_fact_wording(work: Path) -> dict[str, Any]:
    o = Obs(work)
    for i, (fact, rewordings) in enumerate(FACT_WORDINGS.items()):
        s = new_store(work, f"f{i}.db")
        s.record(A, "observation")
        wrap(s, doc(f"p | 1x ({TODAY})", state=fact.capitalize() + "."))
        s.add_drift_probe(fact=fact)
        for j, state in enumerate(rewordings):
            s.record(f"{B} ({j})", "decision")
            o(f"{fact} -> {state}", lambda s=s, state=state: (
                wrap(s, doc(f"p | 1x ({TODAY})", state=state)),
                s.drift_status()["probes"][0]["status"])[1])
        s.close()
    return o.result()


# ---------------------------------------------------------------- schemas, baton

@scenario
def s_schemas(work: Path) -> dict[str, Any]:
    o = Obs(work)
    o("default", lambda: [dict(x) for x in am.DEFAULT_SCHEMA])
    o("flow", lambda: [dict(x) for x in am.FLOW_SCHEMA])
    o("hard_max.default", lambda: am.hard_max_chars(am.DEFAULT_SCHEMA))
    o("hard_max.flow", lambda: am.hard_max_chars(am.FLOW_SCHEMA))
    o("validate.default", lambda: am.validate_schema(am.DEFAULT_SCHEMA))
    o("validate.not_list", lambda: am.validate_schema("nope"))
    o("validate.no_graduating", lambda: am.validate_schema(
        [{"heading": "State", "role": "live-state"}]))
    o("validate.duplicate", lambda: am.validate_schema(
        [{"heading": "Patterns", "role": "graduating"}, {"heading": "Patterns",
                                                          "role": "graduating"}]))
    o("validate.bad_role", lambda: am.validate_schema(
        [{"heading": "Patterns", "role": "graduating"}, {"heading": "X", "role": "weird"}]))
    o("validate.optional_non_durable", lambda: am.validate_schema(
        [{"heading": "Patterns", "role": "graduating", "optional": True}]))
    o("role_warning.default", lambda: am.schema_role_warning(am.DEFAULT_SCHEMA))
    drifted = [dict(x) for x in am.FLOW_SCHEMA]
    for x in drifted:
        if x["role"] == "narrative-timeless":
            x["role"] = "narrative"
    o("role_warning.drift_is_text", lambda: isinstance(am.schema_role_warning(drifted), str))
    s = new_store(work)
    o("store.default_headings", lambda: [x["heading"] for x in s.section_schema])
    o("store.set_flow", lambda: [x["heading"] for x in (s.set_section_schema(am.FLOW_SCHEMA)
                                                          or s.section_schema)])
    o("store.set_bad", lambda: s.set_section_schema([{"heading": "A", "role": "narrative"}]))
    s.close()
    s2 = am.Store(str(work / "m.db"))
    o("store.persisted", lambda: [x["heading"] for x in s2.section_schema])
    s2.close()
    o("overlap.yes", lambda: am.check_explanation_overlap("connection pool exhaustion", A))
    o("overlap.one_word", lambda: am.check_explanation_overlap("connection banana", A))
    o("overlap.stopwords", lambda: am.check_explanation_overlap("the is for", A))
    o("summaries", lambda: am.extract_pattern_summaries(doc(
        "- pool-bottleneck | 2x (2026-01-01) [evidence: e1 \"pool is the bottleneck\"] the "
        "pool is the bottleneck\n- small | 1x (2026-01-01) a small thing\n"
        "- proven-two | 2x (2026-01-01) — meaning here")))
    o("summaries.proven", lambda: am.extract_pattern_summaries(doc(
        "- pool-bottleneck | 2x (2026-01-01) the pool\n- small | 1x (2026-01-01) small"),
        min_level=2))
    o("affect", lambda: am.AffectiveState(tag="curious", intensity=0.8).tag)
    return o.result()


@scenario
def s_baton_policy(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    s.record(A, "observation")
    o("requires.default", lambda: _requires(s))
    o("set_true", lambda: s.set_consolidate_requires_baton(True))
    o("requires.after", lambda: _requires(s))
    o("status.flag", lambda: s.status().consolidate_requires_baton)
    w = o("prepare_no_session", lambda: am.prepare_wrap(s), lambda v: None)
    if w is not None:
        o("prepare_no_session.status", lambda: w["status"])
        o("prepare_no_session.token", lambda: w.get("wrap_token") is not None)
    s.close()
    s2 = new_store(work, "fresh.db", consolidate_requires_baton_on_create=True)
    o("on_create", lambda: _requires(s2))
    s2.close()
    return o.result()


def _requires(s: Any) -> Any:
    v = s.consolidate_requires_baton
    return v() if callable(v) else v


# ---------------------------------------------------------------- crystal and spores

@scenario
def s_crystal(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    e = s.record(A, "observation")
    o.labels.add(e.id)
    cs = am.CrystalStore(str(work / "m.crystal.json"))
    c = o("crystallize", lambda: cs.crystallize(
        name="pool-bottleneck", level=3,
        explanation="Connection pool exhaustion is the orders API bottleneck",
        evidence=[e.id]), lambda v: None)
    if c is not None:
        for k in ("name", "level", "explanation", "evidence"):
            o(f"crystal[{k}]", lambda k=k: c[k])
    o("get[name]", lambda: cs.get("pool-bottleneck")["name"])
    o("get[level]", lambda: cs.get("pool-bottleneck")["level"])
    o("get.missing", lambda: cs.get("nope"))
    o("duplicate", lambda: cs.crystallize(name="pool-bottleneck", level=3,
                                          explanation="again the pool exhaustion"))
    o("bad_level", lambda: cs.crystallize(name="x", level=0, explanation="connection pool"))
    o("active.names", lambda: [x["name"] for x in cs.active()])
    o("list_crystal.names", lambda: [x["name"] for x in cs.list_crystal()])
    o("retrieve_patterns", lambda: [p["name"] if hasattr(p, "keys") else p.name
                                    for p in am.retrieve_patterns(cs, "connection pool "
                                                                       "exhaustion")])
    o("retrieve_patterns.query_mode", lambda: len(am.retrieve_patterns(cs, "pool",
                                                                       mode="query")))
    o("touch[name]", lambda: cs.touch("pool-bottleneck")["name"])
    o("retire", lambda: cs.retire("pool-bottleneck", kind="obsolete", reason="moved")["name"])
    o("active.after_retire", lambda: [x["name"] for x in cs.active()])
    o("sidecar_name", lambda: sorted(p.name for p in work.iterdir() if "crystal" in p.name))
    s.close()
    return o.result()


@scenario
def s_spores(work: Path) -> dict[str, Any]:
    o = Obs(work)
    ss = am.SporeStore(str(work / "m.spores.json"))
    sp = o("add", lambda: ss.add(type="task", text="Ship the orders API pool fix"),
           lambda v: None)
    if sp is None:
        return o.result()
    o.labels.add(sp["id"], "S")
    for k in ("id", "type", "text", "tier", "salience", "domain"):
        o(f"spore[{k}]", lambda k=k: sp[k])
    o("keys", lambda: keys_of(sp))
    q = o("add.question", lambda: ss.add(type="question", text="Why does export stall?",
                                         tier="hot", salience=3, domain="ops"),
          lambda v: None)
    q and o.labels.add(q["id"], "S")
    o("add.bad_type", lambda: ss.add(type="wish", text="x"))
    o("add.empty", lambda: ss.add(type="task", text=""))
    o("get[text]", lambda: ss.get(sp["id"])["text"])
    o("get.missing", lambda: ss.get("nope"))
    o("list_open.ids", lambda: sorted(x["id"] for x in ss.list_open()))
    o("list_open.type", lambda: [x["id"] for x in ss.list_open(type="question")])
    o("surface.ids", lambda: [x["id"] for x in ss.surface()])
    o("touch[id]", lambda: ss.touch(sp["id"])["id"])
    o("update[text]", lambda: ss.update(sp["id"], text="Ship the pool fix today")["text"])
    o("descend", lambda: plain(ss.descend(q["id"], kind="dropped")).get("status")
      if q else None)
    o("ascend", lambda: plain(ss.ascend(sp["id"], kind="episode", ref="abc12345"))
      .get("status"))
    o("list_open.after", lambda: [x["id"] for x in ss.list_open()])
    o("sidecar_name", lambda: sorted(p.name for p in work.iterdir() if "spore" in p.name))
    return o.result()


@scenario
def s_retrieve_relevant(work: Path) -> dict[str, Any]:
    o = Obs(work)
    s = new_store(work)
    old = s.record("The orders API runs on port 8080 in the staging cluster", "observation",
                   timestamp="2026-01-01T00:00:00Z")
    new = s.record("The orders API now runs on port 9090 in the staging cluster", "observation",
                   supersedes=[old.id])
    g = s.record(A, "observation")
    t = s.record("Vendor docs: the orders API staging port is configurable", "observation",
                 trust="tool")
    for e in (old, new, g, t):
        o.labels.add(e.id)
    cs = am.CrystalStore(str(work / "m.crystal.json"))
    r = o("query", lambda: am.retrieve_relevant(s, cs, "staging cluster port", mode="query"),
          lambda v: None)
    if r is not None:
        o("episodes", lambda: [(x.id, x.trust, [rp.id for rp in x.replaces]) for x in
                               r.episodes])
        o("replaces_text", lambda: [[rp.content for rp in x.replaces] for x in r.episodes])
        o("keywords", lambda: sorted(r.query_keywords))
    o("prompt.count", lambda: len(am.retrieve_relevant(
        s, cs, "which port does the staging orders API use").episodes))
    o("mode_query", lambda: [x.id for x in am.retrieve_relevant(
        s, None, "pool", mode="query").episodes])
    o("no_crystal", lambda: len(am.retrieve_relevant(s, None, "connection pool").episodes))
    s.close()
    return o.result()


# ---------------------------------------------------------------- audit

@scenario
def s_audit(work: Path) -> dict[str, Any]:
    o = Obs(work)
    seen: list[dict[str, Any]] = []
    s = new_store(work, on_audit_event=lambda entry: seen.append(dict(entry)))
    e = s.record(A, "observation")
    o.labels.add(e.id)
    o("wrap", lambda: wrap(s, doc(f"p | 1x ({TODAY})", durable="- a durable fact here")),
      lambda v: None)
    s.record(B, "decision")
    w = am.prepare_wrap(s)
    o.labels.add(w["wrap_token"], "T")
    o("refused", lambda: am.validated_save_continuity(
        s, doc("p | 1x", context="word " * 6000), wrap_token=w["wrap_token"]))
    o("dropped", lambda: am.validated_save_continuity(
        s, doc(f"p | 1x ({TODAY})", durable="[drop-durable: a durable fact here]"),
        wrap_token=w["wrap_token"]) is not None)
    o("delete", lambda: s.delete(e.id))
    s.close()
    o("callback.events", lambda: [x.get("event") for x in seen])
    o("callback.entry_keys", lambda: keys_of(seen[0]) if seen else None)
    # the in-process callback gets the dropped durable line itself (the files: a hash)
    o("callback.durable_dropped", lambda: [x["data"].get("durable_dropped") for x in seen
                                           if x.get("event") == "continuity_saved"])
    lines = [json.loads(x) for x in (work / "m.audit.jsonl").read_text().splitlines()
             if x.strip()] if (work / "m.audit.jsonl").exists() else []
    o("file.events", lambda: [x.get("event") for x in lines])
    o("file.keys", lambda: {k: "present" for x in lines for k in x})
    o("file.no_content", lambda: not any(A in json.dumps(x) for x in lines))
    o("record.data_keys", lambda: keys_of(next(x for x in lines if x["event"] == "record")
                                          ["data"]))
    o("saved.durable_dropped", lambda: [x["data"].get("durable_dropped") for x in lines
                                        if x["event"] == "continuity_saved"])
    o("refused.data_keys", lambda: keys_of(next(x for x in lines
                                                if x["event"] == "continuity_refused")["data"]))
    v = o("verify", lambda: am.AuditTrail.verify(str(work / "m.db")), lambda v: None)
    if v is not None:
        for k in ("valid", "total_entries", "files_verified", "chain_break_at",
                  "chain_break_file"):
            o(f"verify.{k}", lambda k=k: getattr(v, k))
    if lines:
        tampered = list(lines)
        tampered[1] = dict(tampered[1], actor="mallory")
        (work / "m.audit.jsonl").write_text("".join(json.dumps(x) + "\n" for x in tampered))
        v2 = o("verify.tampered", lambda: am.AuditTrail.verify(str(work / "m.db")),
               lambda v: None)
        if v2 is not None:
            o("verify.tampered.valid", lambda: v2.valid)
            # the broken entry's position in the file (1.0.2 counts seq from 0, we from 1)
            o("verify.tampered.break_line", lambda: next(
                i for i, x in enumerate(tampered) if x["seq"] == v2.chain_break_at))
    return o.result()


# ---------------------------------------------------------------- CLI

def cli(work: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
        ) -> dict[str, Any]:
    """``anneal-memory ARGS`` in this interpreter's environment."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("ANNEAL_") and k not in ("PYTHONPATH",)}
    e.update({"HOME": str(work), "ANNEAL_MEMORY_DB": str(work / "cli.db"),
              "PYTHONIOENCODING": "utf-8", "COLUMNS": "100"})
    e.update(env or {})
    p = subprocess.run([sys.executable, "-m", "anneal_memory", *args], input=stdin,
                       capture_output=True, text=True, cwd=str(work), env=e, timeout=120)
    out: dict[str, Any] = {"rc": p.returncode}
    try:
        out["json"] = json.loads(p.stdout)
    except ValueError:
        out["_stdout"] = p.stdout[-2000:]
    out["traceback"] = "Traceback (most recent call last)" in p.stderr
    out["_stderr"] = p.stderr[-600:]
    return out


def parser_tree() -> dict[str, Any]:
    """The console script's argparse tree: every command, its options and positionals."""
    import argparse
    from importlib.metadata import entry_points

    main = next(ep for ep in entry_points(group="console_scripts")
                if ep.name == "anneal-memory").load()
    captured: list[argparse.ArgumentParser] = []

    class _Got(Exception):
        pass

    real = argparse.ArgumentParser.parse_known_args

    def grab(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        if not captured:
            captured.append(self)
            raise _Got
        return real(self, *a, **k)

    argparse.ArgumentParser.parse_known_args = grab  # type: ignore[method-assign]
    old_argv = sys.argv
    sys.argv = ["anneal-memory", "status"]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(_Got, SystemExit):
            main()
    finally:
        argparse.ArgumentParser.parse_known_args = real  # type: ignore[method-assign]
        sys.argv = old_argv

    def walk(p: argparse.ArgumentParser) -> dict[str, Any]:
        node: dict[str, Any] = {"options": {}, "positionals": {}, "commands": {}}
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                by_parser: dict[int, list[str]] = {}
                for name, sp in a.choices.items():
                    by_parser.setdefault(id(sp), []).append(name)
                for name, sp in a.choices.items():
                    names = by_parser[id(sp)]
                    if name == names[0]:
                        child = walk(sp)
                        child["aliases"] = names[1:]
                        node["commands"][name] = child
            elif a.option_strings:
                if "-h" in a.option_strings:
                    continue
                takes = a.nargs != 0
                for opt in a.option_strings:
                    if opt.startswith("--"):
                        # no choices = any value accepted (checked later): covers any list
                        node["options"][opt] = {"value": takes, "choices": {
                            str(c): True for c in a.choices} if a.choices else "<any>"}
            else:  # counted: ours must accept at least as many
                node["positionals"][str(len(node["positionals"]) + 1)] = "positional"
        return node

    return walk(captured[0]) if captured else {"error": "no parser"}


@scenario
def s_cli_help_tree(work: Path) -> dict[str, Any]:
    o = Obs(work)
    o("tree", parser_tree)
    return o.result()


WRAP_DOC = doc(f"pool | 1x ({TODAY})")


@scenario
def s_cli_flow(work: Path) -> dict[str, Any]:
    """The README's CLI walk-through, each command with --json where it takes it."""
    o = Obs(work)
    run = lambda *a, **k: cli(work, *a, **k)  # noqa: E731
    o("init", lambda: run("--project-name", "P", "init", "--no-baton"))
    r = run("--json", "record", A, "--type", "observation")
    o("record.json", lambda: r)
    ids = []
    if isinstance(r.get("json"), dict) and "id" in r["json"]:
        ids.append(r["json"]["id"])
        o.labels.add(r["json"]["id"])
    r2 = run("--json", "record", B, "--type", "decision")
    if isinstance(r2.get("json"), dict) and "id" in r2["json"]:
        ids.append(r2["json"]["id"])
        o.labels.add(r2["json"]["id"])
    o("record.bad_type", lambda: run("record", A, "--type", "musing"))
    r3 = o("record.stdin", lambda: run("--json", "record", "-", "--type", "context",
                                       stdin="From standard input, about the orders API"))
    if isinstance(r3, dict) and isinstance(r3.get("json"), dict) and "id" in r3["json"]:
        o.labels.add(r3["json"]["id"])
    o("search.json", lambda: run("--json", "search", "orders"))
    o("search.type", lambda: run("--json", "search", "orders", "--type", "decision"))
    o("recall_alias", lambda: run("--json", "recall", "orders"))
    o("get.json", lambda: run("--json", "get", ids[0]) if ids else None)
    o("get.missing", lambda: run("--json", "get", "ffffffff"))
    o("episodes.json", lambda: run("--json", "episodes"))
    o("status.json", lambda: run("--json", "status"))
    o("stats.json", lambda: run("--json", "stats"))
    o("continuity.none", lambda: run("continuity"))
    pw = run("--project-name", "P", "--json", "prepare-wrap")
    o("prepare_wrap.json", lambda: pw)
    token = pw.get("json", {}).get("wrap_token") if isinstance(pw.get("json"), dict) else None
    if token:
        o.labels.add(token, "T")
    (work / "out.md").write_text(WRAP_DOC)
    args = ["--project-name", "P", "--json", "save-continuity", str(work / "out.md")]
    if token:
        args += ["--wrap-token", token]
    o("save_continuity.json", lambda: run(*args))
    o("continuity", lambda: run("continuity"))
    o("diff.json", lambda: run("--json", "diff", "--wraps", "5"))
    o("history.json", lambda: run("--json", "history"))
    o("wrap_status.json", lambda: run("--json", "wrap-status"))
    o("audit.json", lambda: run("--json", "audit"))
    o("verify.json", lambda: run("--json", "verify"))
    exp = o("export.stdout", lambda: run("export", "--format", "json"), lambda v: None)
    if isinstance(exp, dict) and isinstance(exp.get("json"), dict):
        doc = exp["json"]
        o("export.keys", lambda: keys_of(doc))
        o("export.episodes", lambda: {e["id"]: {k: e.get(k) for k in
                                                ("type", "content", "source", "metadata")}
                                      for e in doc.get("episodes", [])})
        o("export.order", lambda: [e["id"] for e in doc.get("episodes", [])])
        o("export.continuity", lambda: doc.get("continuity"))
    o("export.o", lambda: run("export", "--format", "json", "-o", str(work / "dump.json")))
    o("export.file_exists", lambda: (work / "dump.json").exists())
    o("delete.json", lambda: run("--json", "delete", ids[1], "--force") if len(ids) > 1
      else None)
    o("prune.dry_run", lambda: run("--json", "prune", "--older-than", "365", "--dry-run"))
    o("prune.json", lambda: run("--json", "prune", "--older-than", "365"))
    return o.result()


@scenario
def s_cli_tiers(work: Path) -> dict[str, Any]:
    o = Obs(work)
    run = lambda *a, **k: cli(work, *a, **k)  # noqa: E731
    run("init", "--no-baton")
    r = run("--json", "record", A, "--type", "observation")
    eid = r.get("json", {}).get("id") if isinstance(r.get("json"), dict) else None
    if eid:
        o.labels.add(eid)
    o("crystal.crystallize", lambda: run("--json", "crystal", "crystallize", "--name", "pool",
                                         "--level", "3", "--explanation",
                                         "Connection pool exhaustion is the bottleneck"))
    o("crystal.list", lambda: run("--json", "crystal", "list"))
    o("crystal.get", lambda: run("--json", "crystal", "get", "pool", "--no-record"))
    o("crystal.recall", lambda: run("--json", "crystal", "recall", "connection pool"))
    o("crystal.index", lambda: run("crystal", "index"))
    sp = run("--json", "spore", "add", "--type", "task", "--text", "Ship the pool fix")
    o("spore.add", lambda: sp)
    sid = sp.get("json", {}).get("id") if isinstance(sp.get("json"), dict) else None
    if sid:
        o.labels.add(sid, "S")
    o("spore.list", lambda: run("--json", "spore", "list"))
    o("spore.surface", lambda: run("--json", "spore", "surface"))
    o("spore.get", lambda: run("--json", "spore", "get", sid) if sid else None)
    o("probe.add", lambda: run("--json", "probe", "add", "--fact", "pool exhaustion"))
    o("probe.status", lambda: run("--json", "probe", "status"))
    o("state.json", lambda: run("--json", "state"))
    o("trust.lower", lambda: run("--json", "trust", eid, "tool") if eid else None)
    o("baton.claim", lambda: run("--json", "baton", "claim", "me"))
    o("baton.status", lambda: run("--json", "baton", "status"))
    o("set_schema", lambda: run("--json", "set-schema", "partnership"))
    o("migrate.check", lambda: run("--json", "migrate", "check"))
    o("crystal.touch", lambda: run("--json", "crystal", "touch", "pool"))
    o("crystal.update", lambda: run("--json", "crystal", "update", "pool", "--level", "4"))
    o("crystal.retire", lambda: run("--json", "crystal", "retire", "pool", "--kind",
                                    "obsolete"))
    o("crystal.list.after_retire", lambda: run("--json", "crystal", "list"))
    if sid:
        o("spore.touch", lambda: run("--json", "spore", "touch", sid))
        o("spore.update", lambda: run("--json", "spore", "update", sid, "--text",
                                      "Ship the pool fix today"))
        o("spore.descend", lambda: run("--json", "spore", "descend", sid, "--kind", "done"))
    o("probe.list", lambda: run("--json", "probe", "list"))
    o("probe.retire", lambda: run("--json", "probe", "retire", "1"))
    o("baton.release", lambda: run("--json", "baton", "release", "me"))
    o("graph", lambda: run("--json", "graph"))
    o("episodes", lambda: run("--json", "episodes", "--type", "observation"))
    r2 = run("--json", "record", B, "--type", "decision")
    e2 = r2.get("json", {}).get("id") if isinstance(r2.get("json"), dict) else None
    r3 = run("--json", "record", "Chose PostgreSQL 16 as the orders database for ACID",
             "--type", "decision")
    e3 = r3.get("json", {}).get("id") if isinstance(r3.get("json"), dict) else None
    for x in (e2, e3):
        if x:
            o.labels.add(x)
    if e2 and e3:
        o("supersede", lambda: run("--json", "supersede", "--old", e2, "--new", e3))
        o("unsupersede", lambda: run("--json", "unsupersede", "--old", e2, "--new", e3))
        o("state.set", lambda: run("--json", "state", "db.choice", "--set", e3))
        o("state.unset", lambda: run("--json", "state", "--unset", e3))
    o("wrap_cancel.idle", lambda: run("--json", "wrap-cancel"))
    o("outcome", lambda: run("--json", "outcome", "--exposure-id", "t1", "--item",
                             "crystal:pool=followed", "--outcome", "success"))
    o("worth", lambda: run("--json", "worth"))
    o("audit_repair", lambda: run("--json", "audit-repair"))
    return o.result()


# ---------------------------------------------------------------- MCP

async def _mcp_session(work: Path, steps: Callable[[Any], Any]) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANNEAL_")}
    env["HOME"] = str(work)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "anneal_memory", "--db", str(work / "mcp.db"), "--project-name", "P",
              "serve"], env=env)
    with open(work / "server.log", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w):
            async with ClientSession(r, w) as c:
                await c.initialize()
                return await steps(c)


def _reply(res: Any) -> dict[str, Any]:
    text = "\n".join(getattr(c, "text", "") for c in res.content)
    return {"is_error": bool(getattr(res, "isError", None) or getattr(res, "is_error", None)),
            "_text": text}


@scenario
def s_mcp_tools(work: Path) -> dict[str, Any]:
    o = Obs(work)

    async def steps(c: Any) -> Any:
        tools = (await c.list_tools()).tools
        out = {}
        for t in tools:
            schema = getattr(t, "inputSchema", None) or getattr(t, "input_schema", None) or {}
            props, req = schema.get("properties", {}), set(schema.get("required", []))
            # ours may take more arguments, and may need fewer, never more
            out[t.name] = {"args": {a: "accepted" for a in props},
                           "optional": {a: "optional" for a in props if a not in req}}
        res = (await c.list_resources()).resources
        return {"tools": out, "resources": sorted(str(r.uri) for r in res)}

    o("list", lambda: asyncio.run(_mcp_session(work, steps)))
    return o.result()


@scenario
def s_mcp_flow(work: Path) -> dict[str, Any]:
    o = Obs(work)
    # a store made by init --no-baton: this flow wraps without the consolidation gate
    cli(work, "--db", str(work / "mcp.db"), "init", "--no-baton")

    async def steps(c: Any) -> Any:
        out: dict[str, Any] = {}

        async def call(name: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
            rep = _reply(await c.call_tool(tool, args))
            out[name] = rep
            return rep

        r1 = await call("record", "record", {"content": "The orders API runs on port 8080 in "
                                                        "the staging cluster",
                                             "episode_type": "observation"})
        m = re.search(r"\b([0-9a-f]{8})\b", r1["_text"])
        old = m.group(1) if m else None
        out["_old"] = old
        r2 = await call("record.supersedes", "record", {
            "content": "The orders API now runs on port 9090 in the staging cluster",
            "episode_type": "observation", "supersedes": [old] if old else []})
        m = re.search(r"\b([0-9a-f]{8})\b", r2["_text"])
        out["_new"] = m.group(1) if m else None
        await call("record.bad_type", "record", {"content": "x", "episode_type": "musing"})
        await call("record.tool_trust", "record", {"content": "Vendor says staging port is "
                                                              "configurable",
                                                   "episode_type": "observation",
                                                   "trust": "tool"})
        await call("recall.keyword", "recall", {"keyword": "staging"})
        await call("recall.old_words", "recall", {"keyword": "8080"})
        await call("status", "status", {})
        pw = await call("prepare_wrap", "prepare_wrap", {})
        m = re.search(r"[Ww]rap token:?\s*`?([0-9a-f]{16,})", pw["_text"])
        tok = m.group(1) if m else None
        out["_tok"] = tok
        args: dict[str, Any] = {"text": WRAP_DOC}
        if tok:
            args["wrap_token"] = tok
        await call("save_continuity", "save_continuity", args)
        await call("save_continuity.again", "save_continuity", args)
        await call("wrap_cancel.idle", "wrap_cancel", {})
        await call("delete_episode.missing", "delete_episode", {"episode_id": "ffffffff"})
        await call("crystal_index", "crystal_index", {})
        await call("crystal_recall", "crystal_recall", {"query": "pool"})
        sp = await call("spore_add", "spore_add", {"type": "task", "text": "Ship pool fix"})
        m = re.search(r"\b(spore-\d+)\b", sp["_text"])
        out["_spore"] = m.group(1) if m else None
        await call("spore_list", "spore_list", {})
        await call("spore_surface", "spore_surface", {})
        sid = out["_spore"] or "spore-001"
        await call("spore_get", "spore_get", {"spore_id": sid})
        await call("spore_update", "spore_update", {"spore_id": sid, "add_note": "started"})
        await call("spore_touch", "spore_touch", {"spore_id": sid})
        await call("spore_descend", "spore_descend", {"spore_id": sid, "kind": "done"})
        q = await call("spore_add.question", "spore_add", {"type": "question",
                                                           "text": "Is 20 connections enough?"})
        m = re.search(r"\b(spore-\d+)\b", q["_text"])
        out["_spore2"] = m.group(1) if m else None
        await call("spore_ascend", "spore_ascend", {"spore_id": out["_spore2"] or "spore-002",
                                                    "kind": "episode", "ref": old or "x"})
        await call("spore_get.missing", "spore_get", {"spore_id": "spore-999"})
        await call("delete_episode", "delete_episode", {"episode_id": old or "x"})
        await call("recall.after_delete", "recall", {"keyword": "staging"})
        res = await c.read_resource("anneal://continuity")
        out["resource.continuity"] = {"_text": "".join(getattr(x, "text", "")
                                                       for x in res.contents)}
        return out

    res = o("flow", lambda: asyncio.run(_mcp_session(work, steps)), lambda v: None)
    if res:
        for k in ("_old", "_new", "_tok", "_spore", "_spore2"):
            if res.get(k):
                o.labels.add(res[k], {"_tok": "T", "_spore": "S", "_spore2": "S"}.get(k, "E"))
        old, new = res.get("_old"), res.get("_new")
        known = {raw: lab for raw, lab in o.labels.names.items() if lab.startswith(("<E", "<S"))}
        for name, rep in res.items():
            if name.startswith("_"):
                continue
            text = rep["_text"]
            o.put(f"{name}.is_error", rep.get("is_error"))
            o.put(f"{name}._text", text)
            # which episodes and spores the reply names: the reply's facts, not its wording
            o.put(f"{name}.mentions", sorted({lab for raw, lab in known.items() if raw in text}))
        rk = res.get("recall.old_words", {}).get("_text", "")
        o.put("recall.old_words.replaced_block", "Replaced since" in rk)
        o.put("recall.old_words.serves_old_text", "8080" in rk.split("Replaced since")[-1]
              if "Replaced since" in rk else "8080" in rk)
        o.put("recall.old_words.names_old_id", bool(old and old in rk))
        o.put("recall.old_words.names_new_id", bool(new and new in rk))
        rs = res.get("recall.keyword", {}).get("_text", "")
        o.put("recall.keyword.lists_old", bool(old and old in rs))
        o.put("recall.keyword.relayed_block", "external source" in rs)
    return o.result()


# ---------------------------------------------------------------- data written by 1.0.2

@scenario
def s_write_legacy(work: Path) -> dict[str, Any]:
    """Writes a store, sidecars and an export for the other package to read (1.0.2 side)."""
    o = Obs(work)
    s = new_store(work, "legacy.db")
    ids = []
    for text, kind in ((A, "observation"), (B, "decision"), (C, "question")):
        ids.append(s.record(text, kind).id)
    old = s.record("The orders API runs on port 8080 in the staging cluster", "observation",
                   timestamp="2026-01-01T00:00:00Z")
    new = s.record("The orders API now runs on port 9090 in the staging cluster",
                   "observation", supersedes=[old.id])
    keyed = s.record("I live in Seattle near the lake", "observation", state_key="user.city")
    t = s.record("Vendor page says bulk refunds exist", "observation", trust="tool")
    s.add_drift_probe(fact="connection pool exhaustion")
    wrap(s, doc(f"pool | 1x ({TODAY}) [evidence: {ids[0]} \"connection pool exhaustion\"]",
                durable="- tree nut allergy — cues: dinner, food"))
    late = s.record("Recorded after the wrap about the orders API", "observation")
    s.close()
    cs = am.CrystalStore(str(work / "legacy.crystal.json"))
    cs.crystallize(name="pool-bottleneck", level=3,
                   explanation="Connection pool exhaustion is the orders API bottleneck",
                   evidence=[ids[0]])
    ss = am.SporeStore(str(work / "legacy.spores.json"))
    sp = ss.add(type="task", text="Ship the orders API pool fix")
    exp = cli(work, "--db", str(work / "legacy.db"), "export", "--format", "json", "-o",
              str(work / "legacy.json"))
    (work / "ids.json").write_text(json.dumps({
        "episodes": ids, "old": old.id, "new": new.id, "keyed": keyed.id, "tool": t.id,
        "late": late.id, "spore": sp["id"]}))
    o.put("export_rc", exp["rc"])
    return o.result()


@scenario
def s_write_legacy_slot(work: Path) -> dict[str, Any]:
    """A state-key slot of three holders and a plain explicit link, written by 1.0.2 (for
    the deep check of an upgraded store)."""
    o = Obs(work)
    s = new_store(work, "slot.db")
    ids = [s.record(f"I live in {city}", "observation", state_key="user.city",
                    timestamp=f"2026-01-0{i + 1}T00:00:00Z").id
           for i, city in enumerate(("Seattle", "Portland", "Boise"))]
    old = s.record("The orders API runs on port 8080", "observation").id
    new = s.record("The orders API runs on port 9090", "observation", supersedes=[old]).id
    s.close()
    (work / "slot.json").write_text(json.dumps({"slot": ids, "old": old, "new": new}))
    o.put("written", len(ids))
    return o.result()


@scenario
def s_read_legacy(work: Path) -> dict[str, Any]:
    """Reads what ``write_legacy`` (run by 1.0.2) left in ``work``: the store in place, its
    audit chain, continuity, sidecars and JSON export. 1.0.2 reading its own files is the
    reference; we must read them the same way."""
    o = Obs(work)
    ids = json.loads((work / "ids.json").read_text())
    for eid in ids["episodes"]:
        o.labels.add(eid)
    for k in ("old", "new", "keyed", "tool", "late"):
        o.labels.add(ids[k])
    o.labels.add(ids["spore"], "S")
    s = o("open", lambda: am.Store(str(work / "legacy.db")), lambda v: None)
    if s is None:
        return o.result()
    st = s.status()
    for k in ("total_episodes", "episodes_since_wrap", "total_wraps", "tombstone_count",
              "continuity_chars", "episodes_by_type", "wrap_in_progress"):
        o(f"status.{k}", lambda k=k: getattr(st, k))
    o("recall", lambda: s.recall(), recall_shape)
    o("recall.include", lambda: s.recall(include_superseded=True), recall_shape)
    o("recall.keyword", lambda: s.recall(keyword="orders"), recall_shape)
    o("get", lambda: {k: ep(s.get(ids[k])) for k in ("old", "new", "keyed", "tool", "late")},
      lambda v: {k: {f: x[f] for f in ("id", "type", "content", "source", "metadata")}
                 for k, x in v.items()})
    o("trust", lambda: s.effective_trust_map([ids["tool"], ids["new"]]))
    o("state_key_report", lambda: s.state_key_report("user.city"))
    o("continuity", lambda: s.load_continuity())
    o("probes", lambda: [{"id": p["id"], "kind": p["kind"]} for p in s.list_drift_probes()])
    o("since_wrap", lambda: [e.id for e in s.episodes_since_wrap()])
    new = o("record", lambda: s.record("Recorded after the upgrade about the orders API",
                                       "observation"), lambda v: None)
    if new is not None:
        o.labels.add(new.id)
    w = o("prepare", lambda: am.prepare_wrap(s), lambda v: None)
    if w:
        o("prepare.episode_count", lambda: w["episode_count"])
        o.labels.add(w["wrap_token"], "T")
        o("save", lambda: am.validated_save_continuity(s, doc(
            f"pool | 2x ({TODAY}) [evidence: {new.id} \"orders API upgrade\"]"),
            wrap_token=w["wrap_token"]), save_view)
    s.close()
    v = o("verify", lambda: am.AuditTrail.verify(str(work / "legacy.db")), lambda v: None)
    if v is not None:
        o("verify.valid", lambda: v.valid)
    cs = am.CrystalStore(str(work / "legacy.crystal.json"))
    o("crystal", lambda: {k: cs.get("pool-bottleneck")[k] for k in
                          ("name", "level", "explanation", "evidence", "status")})
    ss = am.SporeStore(str(work / "legacy.spores.json"))
    o("spore", lambda: {k: ss.get(ids["spore"])[k] for k in ("id", "type", "text", "status")})
    o("spore.open", lambda: [x["id"] for x in ss.list_open()])
    added = o("spore.add", lambda: ss.add(type="question", text="After the upgrade?"),
              lambda v: None)
    o("spore.next_id", lambda: added["id"] if added else None)
    # 1.0.2's own import is its CLI's: both packages read the 1.0.2 export through it
    cli(work, "--db", str(work / "fresh.db"), "init", "--no-baton")
    o("import.rc", lambda: cli(work, "--db", str(work / "fresh.db"), "import",
                               str(work / "legacy.json"))["rc"])
    fresh = am.Store(str(work / "fresh.db"))
    o("import.count", lambda: fresh.status().total_episodes)
    o("import.recall", lambda: fresh.recall(), recall_shape)
    o("import.trust", lambda: fresh.effective_trust_map([ids["tool"]]))
    fresh.close()
    o("cli.status", lambda: cli(work, "--db", str(work / "legacy.db"), "--json", "status")
      .get("json", {}).get("total_episodes"))
    o("cli.search", lambda: [e["id"] for e in cli(work, "--db", str(work / "legacy.db"),
                                                  "--json", "search", "orders")
                             .get("json", {}).get("episodes", [])])
    return o.result()


def main() -> int:
    name, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    fn = SCENARIOS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(work)
    sys.stdout.write(json.dumps(out, sort_keys=True, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(SCENARIOS))
        raise SystemExit(0)
    raise SystemExit(main())
