"""validated_save_continuity: the save pipeline that refuses a continuity that would
damage the memory, and governs every pattern line before it is written.

Order: wrap and token checks → structure → durable facts → size bound → shrink gate →
immune system → relayed text outside a quotation (:mod:`.relayed`: flagged, or refused by
a strict store) → supersession markers → drift probes → one transaction that writes the
file, closes the wrap and records the pattern levels. A refusal changes nothing and
leaves the wrap open.
"""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from .. import tracing
from .._inputs import lone_surrogate
from .._seam import roles_of, unit_of
from ..clock import now_iso
from ..continuity.durable import durable_chars, merge_durable
from ..continuity.parse import (
    ContinuityDoc,
    PatternLine,
    Section,
    parse_pattern_line,
    parse_sections,
    pattern_lines,
    supersession_markers,
)
from ..continuity.schema import durable_budget, hard_max_chars, has_felt_layer
from ..errors import (
    BatonError,
    ContinuityValidationError,
    NoWrapInProgressError,
    ValidationError,
    WrapTokenError,
)
from ..facts import propose_wrap_link
from ..immune import probes, review, signals
from ..immune.graduation import (
    LineOutcome,
    WrapContext,
    govern_line,
    is_candidate,
    revoked_prior,
)
from ..storage.common import ns_meta_key
from ..storage.rows import PatternRow
from ..types import TRUST_LEVELS
from . import relayed as relayed_rule
from .baton import baton_holder

if TYPE_CHECKING:
    from ..crystal import CrystalStore
    from ..store import Store

SHRINK_SECTION_FLOOR = 0.5
SHRINK_FILE_FLOOR = 0.25


class _SaveFields(TypedDict):
    path: str
    chars: int
    episodes_compressed: int
    graduations_validated: int
    graduations_demoted: int
    demoted: int
    bare_demoted: int
    demoted_patterns: list[dict[str, object]]
    bare_demoted_patterns: list[dict[str, object]]
    level_capped: list[dict[str, object]]
    carried_forward: list[dict[str, object]]
    uncorroborated: list[dict[str, object]]
    skipped_non_today: int
    gaming_suspects: list[str]
    citation_reuse_max: int
    cross_session_collisions: list[dict[str, object]]
    omitted_patterns: list[signals.OmittedPattern]
    proven_without_contradicts_declaration: list[dict[str, object]]
    contradictions: list[signals.Stance]
    supersessions_recorded: int
    supersessions_recorded_links: list[dict[str, str]]
    supersessions_rejected: list[dict[str, str]]
    durable_warnings: list[str]
    durable_dropped: list[str]
    #: the drift probes' verdicts, as ``immune.probes.evaluate`` reports them
    drift: probes.DriftCheck
    citation_spread: int
    sections: dict[str, int]
    crystallized: list[str]
    crystallize_refused: list[dict[str, str]]
    associations_formed: int
    associations_strengthened: int
    associations_decayed: int
    association_warning: None
    linkgate_overridden: bool
    warnings: list[str]
    wrap_id: int


class SaveResult(_SaveFields, total=False):
    """What ``validated_save_continuity`` returns: what the immune system did (1.0.2's
    keys and ours). The two keys below are added on the way and are always there in
    the result returned."""

    #: continuity lines reproducing a relayed episode outside a quotation
    relayed_unquoted: list[dict[str, str]]
    #: the wrap's record, in the shape 1.0.2 returned it
    wrap_result: dict[str, object]


def _decode(text: Any) -> str:
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ContinuityValidationError(f"the continuity is not UTF-8 text ({exc}): save it "
                                            "as UTF-8") from None
    if not isinstance(text, str):
        raise ContinuityValidationError("the continuity must be markdown text (a str)")
    if lone_surrogate(text) is not None or "\x00" in text:
        raise ContinuityValidationError("the continuity holds a NUL or a lone surrogate, which "
                                        "no file can hold as UTF-8: remove it")
    return text


def _iso_day(value: Any) -> str:
    """``today`` as YYYY-MM-DD (a date, a datetime or an ISO string)."""
    from ..clock import parse_timestamp

    return parse_timestamp(value, field="today").date().isoformat()


def _refuse(store: Store, reason: str, message: str, *, details: Sequence[str] = (),
            **data: Any) -> None:
    """Audit the refusal, then raise it; ``details`` names the data keys the error also
    carries as attributes."""
    try:
        store.audit_event("continuity_refused", {"reason": reason, **data}, actor="agent")
    finally:
        raise ContinuityValidationError(message, **{k: data[k] for k in details})


def _check_size(store: Store, doc: ContinuityDoc, schema: Sequence[Mapping[str, Any]]) -> int:
    text = doc.render()
    chars = len(text) - durable_chars(doc)
    bound = hard_max_chars(schema)
    if chars > bound:
        cuttable = [s.heading for s in doc.sections if s.role in ("live-state", "narrative")]
        _refuse(store, "size", f"the continuity is {chars} characters (Durable Facts excluded), over "
                f"the bound of {bound} by {chars - bound}: cut {', '.join(cuttable) or 'narrative sections'}"
                " (facts you can fetch again), not the patterns or the felt layer",
                chars=chars, bound=bound, target=round(bound / 1.25), over_by=chars - bound,
                details=("chars", "bound", "target"))
    return chars


def _check_shrink(store: Store, doc: ContinuityDoc, prior: str | None,
                  old: ContinuityDoc | None, schema: Sequence[Mapping[str, Any]],
                  allow_shrink: Any) -> None:
    """Refuse a save that collapses a felt store's protected sections or whole file;
    ``old`` is ``prior`` parsed (None when it does not parse: no gate then)."""
    if allow_shrink is True or not prior or old is None or not has_felt_layer(schema):
        return
    for role in ("narrative-timeless", "graduating"):
        before = sum(len(s.body) for s in old.by_role(role))
        after = sum(len(s.body) for s in doc.by_role(role))
        if before > 0 and after < SHRINK_SECTION_FLOOR * before:
            _refuse(store, "shrink", f"the {role} section(s) would shrink from {before} to {after} "
                    "characters, below half of their prior size: re-wrap keeping the full arc, or "
                    "pass allow_shrink=True for a deliberate diet", role=role, before=before,
                    after=after)
    before, after = len(prior), len(doc.render())
    if before > 0 and after < SHRINK_FILE_FLOOR * before:
        _refuse(store, "shrink", f"the continuity would shrink from {before} to {after} characters, "
                "below a quarter of its prior size: re-wrap, or pass allow_shrink=True",
                role="file", before=before, after=after)


def _pattern_lines(doc: ContinuityDoc) -> list[tuple[Section, int, PatternLine]]:
    """Each pattern line of the graduating sections, with its section and position."""
    out = []
    for s in doc.by_role("graduating"):
        for i, line in enumerate(s.lines):
            p = parse_pattern_line(line, section=s.heading, index=i)
            if p is not None:
                out.append((s, i, p))
    return out


def _marker_only(line: str) -> bool:
    """A line that holds nothing but a ``[supersedes: OLD by NEW]`` marker."""
    found = supersession_markers(line)
    return bool(found) and not line.replace(found[0][2], "").strip(" -*")


@tracing.traced(tracing.UPDATE, "wrap.save", result=tracing.saved)
def validated_save_continuity(
    store: Store,
    text: str,
    affective_state: object = None,
    *,
    today: str | None = None,
    wrap_token: str | None = None,
    allow_shrink: bool = False,
    carryforward_cold_days: int | None = 7,
    crystal_store: CrystalStore | None = None,
    session_id: str | None = None,
    allow_unlinked: bool = False,
) -> SaveResult:
    """Validate and save the wrap's continuity; returns what the immune system did.

    ``affective_state`` and ``allow_unlinked`` are accepted and ignored (retired layers).
    """
    text = _decode(text)
    if carryforward_cold_days is not None and (isinstance(carryforward_cold_days, bool) or not
                                               isinstance(carryforward_cold_days, int) or
                                               carryforward_cold_days < 0):
        raise ValidationError("carryforward_cold_days must be a whole number >= 0, or None")
    b = roles_of(store)
    wrap = b.wraps.open_wrap()
    if wrap is None:
        raise NoWrapInProgressError("no wrap is open: call prepare_wrap first (a wrap is saved "
                                    "once; a second save needs a new prepare)")
    if wrap_token is not None and wrap_token != wrap.token:
        raise WrapTokenError("the wrap token does not match the open wrap (stale or wrong): use "
                             "the token from the latest prepare_wrap")
    gated_store = store.consolidate_requires_baton()
    if wrap.session_id:
        if session_id != wrap.session_id:
            raise BatonError(f"this wrap was prepared by session {wrap.session_id!r}; only that "
                             "session may save it (or cancel it with wrap-cancel)")
    if gated_store or wrap.session_id:
        if wrap_token is None:
            raise WrapTokenError("this wrap is under the baton gate: pass the wrap token from "
                                 "prepare_wrap")
        holder = baton_holder(store)
        if session_id is None or holder != session_id:
            raise BatonError(f"session {session_id!r} does not hold the consolidation baton "
                             f"(holder: {holder or 'nobody'}): anneal-memory baton claim <session>")
    schema = store.section_schema
    day = _iso_day(today) if today is not None else wrap.today
    doc = parse_sections(text, schema)
    prior_text = store.load_continuity()
    # the prior continuity is parsed once (leniently); a prior that does not parse keeps
    # no durable lines, skips the shrink gate and refuses at its pattern lines, as before
    prior_doc, prior_error = None, None
    if prior_text:
        try:
            prior_doc = parse_sections(prior_text, schema, require=False)
        except ContinuityValidationError as exc:
            prior_error = exc
    durable_warn, durable_dropped = merge_durable(prior_doc, doc, schema)
    # [supersedes: OLD by NEW] lines are instructions to the save, not content.
    markers = supersession_markers(doc.render())
    for s in doc.sections:
        s.lines = [ln for ln in s.lines if not _marker_only(ln)]
    _check_size(store, doc, schema)
    _check_shrink(store, doc, prior_text, prior_doc, schema, allow_shrink)
    if sum(len(s.body) for s in doc.by_role("durable")) > durable_budget(schema):
        durable_warn.append(f"Durable Facts is over its budget of {durable_budget(schema)} "
                            "characters: every line was kept; consider consolidating")

    snapshot_ids = list(wrap.episode_ids)
    if prior_error is not None:
        raise prior_error
    prior_lines = pattern_lines(prior_doc) if prior_doc is not None else []
    found = _pattern_lines(doc)
    # Only the episodes a line cites (or a marker names) are read: the rules look at no
    # other episode of the wrap, so a wrap of thousands reads a handful of rows.
    all_cited = sorted({c.episode_id for _s, _i, p in found for c in p.citations})
    in_wrap = set(snapshot_ids)
    wanted = sorted({*all_cited, *(n for _o, n, _m in markers)})
    rows = b.episodes.get_episodes(wanted) if wanted else {}
    snapshot = {i: r for i, r in rows.items() if i in in_wrap}
    superseded = set(b.links.supersessions_of(list(snapshot))) if snapshot else set()
    # the rules read each record as 1.0.2's dict (immune/graduation.py)
    history = {k: p._asdict() for k, p in b.wraps.pattern_history().items()}
    prior_levels: dict[str, int] = {}
    prior_named: dict[str, tuple[str, int]] = {}
    for p in prior_lines:
        if p.key:
            prior_levels[p.key] = max(prior_levels.get(p.key, 0), p.level)
            if prior_levels[p.key] == p.level:
                prior_named[p.key] = (p.name, p.level)
    governed_before = b.wraps.has_pattern_history()
    ctx = WrapContext(
        today=day, snapshot=snapshot, superseded=superseded,
        trust=store.effective_trust_map(list(snapshot)) if snapshot else {}, history=history,
        prior_levels=prior_levels,
        citations_seen=b.meta.get_meta(ns_meta_key("citations_seen", store.scope)) == "1",
        cold_days=carryforward_cold_days if governed_before else None,
        first_governed_save=not governed_before,
    )
    ctx.revoked = _revocations(store, history)
    outcomes = []
    for section, i, p in found:
        o = govern_line(p, ctx)
        section.lines[i] = o.new_text
        outcomes.append(o)
    lines = [o.line for o in outcomes]
    # gaming, reuse and spread count the graduation claims of this wrap (not 1x sightings)
    # and only their citations of this wrap's live episodes (not invented, replayed or
    # replaced ones), as 1.0.2 does
    claims = [o.line for o in outcomes if is_candidate(o.line, ctx)]
    live = set(snapshot) - superseded
    counts = signals.citation_counts(claims, live)
    resolvable = {i for i in all_cited if i in rows}
    am_warn = signals.am_warn(lines, resolvable)
    final_text = doc.render()
    present = {o.line.key for o in outcomes if o.line.key}
    result: SaveResult = {
        "path": str(store.continuity_path),
        "chars": len(final_text),
        "episodes_compressed": len(snapshot_ids),
        "graduations_validated": sum(1 for o in outcomes if o.validated and o.final_level >= 2),
        "graduations_demoted": sum(1 for o in outcomes
                                   if o.demoted or o.bare_demoted or o.uncorroborated),
        # counts, as 1.0.2 gives them; the lines themselves are in the *_patterns lists
        "demoted": sum(1 for o in outcomes if o.demoted or o.uncorroborated),
        "bare_demoted": sum(1 for o in outcomes if o.bare_demoted),
        "demoted_patterns": [_brief(o, "reasons") for o in outcomes if o.demoted],
        "bare_demoted_patterns": [_brief(o) for o in outcomes if o.bare_demoted],
        "level_capped": [_capped(o) for o in outcomes
                         if o.capped and o.final_level < o.line.level],
        "carried_forward": [dict(_brief(o), cold=o.cold_hold) for o in outcomes if o.carried],
        "uncorroborated": [_relayed(o, ctx) for o in outcomes if o.uncorroborated],
        "skipped_non_today": sum(1 for o in outcomes if o.line.level >= 2 and o.line.citations
                                 and not is_candidate(o.line, ctx)),
        "gaming_suspects": signals.gaming_suspects(counts),
        "citation_reuse_max": max(counts.values(), default=0),
        "cross_session_collisions": [_brief(o) for o in outcomes if o.collision],
        "omitted_patterns": signals.omitted_patterns(prior_named, present),
        "proven_without_contradicts_declaration": [
            {"name": o.line.name, "level": o.final_level} for o in outcomes
            if o.final_level >= 2 and (o.prior_level or 0) < 2
            and not o.line.contradicts and not o.line.no_contradicts],
        "contradictions": signals.stances(lines),
        "supersessions_recorded": 0,
        "supersessions_recorded_links": [],
        "supersessions_rejected": [],
        "durable_warnings": durable_warn,
        "durable_dropped": durable_dropped,
        "drift": {"counts": {}, "probes": []},
        "citation_spread": signals.citation_spread(claims, live),
        "sections": _section_sizes(doc),
        "crystallized": [],
        "crystallize_refused": [],
        # the retired association layer: always zero / None, kept for 1.0.2 callers
        "associations_formed": 0,
        "associations_strengthened": 0,
        "associations_decayed": 0,
        "association_warning": None,
        "linkgate_overridden": False,
        "warnings": [],
        "wrap_id": wrap.id,
    }
    if am_warn:
        result["warnings"].append(am_warn)
    for o in outcomes:
        if o.carried and o.final_level >= 3 and not o.line.provenance:
            result["warnings"].append(f"{o.line.name!r} is carried forward at {o.final_level}x "
                                      "without fresh evidence: graduate it out to a stable home "
                                      "(crystallize) or retire it")
    for o in outcomes:
        if o.uncorroborated:
            result["warnings"].append(f"{o.line.name!r} is grounded only in tool/external content: "
                                      "kept at 1x (uncorroborated) until an agent or operator "
                                      "episode grounds it")
    outside = [o.line.name for o in outcomes if o.demoted and any(
        c.episode_id not in live for c in o.line.citations)]
    if outside:
        result["warnings"].append(
            "ungrounded: " + ", ".join(outside) + " cited episodes that are not this wrap's "
            "current ones (unknown, from an earlier wrap, or replaced): demoted one level")
    needs = [o.line.name for o in outcomes if o.bare_demoted]
    if needs:
        result["warnings"].append("needs-evidence: " + ", ".join(needs) + " claimed a level "
                                  "without [evidence:]: demoted one level")
    if result["level_capped"]:
        result["warnings"].append("level-capped: " + ", ".join(
            f"{x['name']} -> {x['capped_to']}x" for x in result["level_capped"]))
    if durable_dropped:
        durable_warn.append("Durable Facts: dropped by marker: " + "; ".join(durable_dropped))
    result["warnings"] += durable_warn
    _check_relayed(store, final_text, snapshot_ids, result)
    if crystal_store is not None:
        final_text = _crystallize_marked(store, crystal_store, doc, outcomes, day, result)
        result["chars"] = len(final_text)
    crystal_names: set[str] = set()
    if crystal_store is not None:
        try:
            crystal_names = {str(getattr(c, "key", None) or getattr(c, "name", "")).casefold()
                             for c in crystal_store.list()}
        except Exception:
            crystal_names = set()

    with unit_of(store) as tx:
        current = b.wraps.open_wrap()
        if current is None or current.id != wrap.id:
            raise NoWrapInProgressError("the wrap was saved or cancelled by another process "
                                        "meanwhile: prepare a new wrap")
        for old_id, new_id, _m in markers:
            why = propose_wrap_link(store, old_id, new_id, set(snapshot))
            if why:
                result["supersessions_rejected"].append({"old_id": old_id, "new_id": new_id,
                                                         "reason": why})
            else:
                result["supersessions_recorded_links"].append({"old_id": old_id,
                                                               "new_id": new_id})
        result["supersessions_recorded"] = len(result["supersessions_recorded_links"])
        result["drift"] = probes.evaluate(store, final_text, schema, crystal_names, wrap.id)
        b.meta.set_meta("last_graduated", json.dumps([
            {"name": o.line.name, "level": o.final_level,
             "citations": [c.episode_id for c in o.line.citations]}
            for o in outcomes if o.validated and o.final_level >= 2], ensure_ascii=False))
        _record_history(store, outcomes, day, history)
        if any(o.line.citations for o in outcomes):
            b.meta.set_meta(ns_meta_key("citations_seen", store.scope), "1")
        started = ns_meta_key("pattern_history_started", store.scope)
        b.meta.set_meta(started, b.meta.get_meta(started) or now_iso())
        b.episodes.mark_wrapped(snapshot_ids, wrap.id)
        metrics = {k: (len(v) if isinstance(v, list) else v) for k, v in result.items()
                   if k not in ("path", "drift", "warnings", "sections")}
        metrics["patterns_extracted"] = len(outcomes)
        # per pattern and per probe, for the operator's timeline, worklist and drift view
        metrics["patterns"] = review.record_wrap_patterns(outcomes)
        metrics["drift_probes"] = review.record_wrap_drift([p._asdict() for p in b.wraps.probes()],
                                                            result["drift"]["probes"])
        b.wraps.close_wrap(wrap.id, "saved", now_iso(), chars=len(final_text),
                           episodes_compressed=len(snapshot_ids), metrics=metrics)
        tx.audit.append("wrap_completed", {
            "wrap_id": wrap.id, "episodes_compressed": len(snapshot_ids),
            "continuity_chars": len(final_text),
            "graduations_validated": result["graduations_validated"],
            "graduations_demoted": result["graduations_demoted"],
            "patterns_extracted": len(outcomes),
            "associations_formed": 0, "associations_strengthened": 0, "associations_decayed": 0,
        }, actor="agent")
        saved = tx.audit.append("continuity_saved", {
            "wrap_id": wrap.id, "chars": len(final_text),
            "content_hash": store.audit_trail.hash_content(final_text),
            "episodes_compressed": len(snapshot_ids),
            "graduations_validated": result["graduations_validated"],
            "graduations_demoted": result["graduations_demoted"],
            "level_capped": [x["name"] for x in result["level_capped"]],
            "uncorroborated": [x["name"] for x in result["uncorroborated"]],
            "omitted_patterns": [x["name"] for x in result["omitted_patterns"]],
            "proven_without_contradicts_declaration": [
                x["name"] for x in result["proven_without_contradicts_declaration"]],
            **({"durable_dropped": [store.audit_trail.hash_content(x) for x in durable_dropped]}
               if durable_dropped else {}),
            "supersessions_recorded": result["supersessions_recorded"],
            **({"relayed_unquoted": [
                {"episode_id": x["episode_id"], "trust": x["trust"], "section": x["section"],
                 "line_hash": store.audit_trail.hash_content(x["line"])}
                for x in result["relayed_unquoted"]]} if result["relayed_unquoted"] else {}),
            "drift": result["drift"],
            "session_id": session_id,
        }, actor="agent")
        if durable_dropped:  # the trail keeps them hashed; the in-process callback, as 1.0.2
            store.audit_trail.hand_in_clear(saved, {"durable_dropped": list(durable_dropped)})
        tx.stage_continuity(final_text)
    for err in tx.unpublished:  # committed: the file is put in place when the store is next opened
        result["warnings"].append(f"the continuity file could not be put in place yet ({err}); "
                                  "the saved text waits beside it and is put in place on "
                                  "the next open")
    for w in result["warnings"]:
        warnings.warn(w, UserWarning, stacklevel=3)
    pruned = 0
    if store.retention_days:
        try:
            pruned = store.prune(store.retention_days)
        except Exception as exc:  # the save stands; pruning is housekeeping
            result["warnings"].append(f"auto-prune failed: {exc}")
    # the wrap's record, in the shape 1.0.2 returned it
    result["wrap_result"] = {
        "saved": True, "chars": result["chars"], "section_sizes": result["sections"],
        "graduations_validated": result["graduations_validated"],
        "graduations_demoted": result["graduations_demoted"],
        "citation_reuse_max": result["citation_reuse_max"],
        "patterns_extracted": len(outcomes), "episodes_compressed": len(snapshot_ids),
        "pruned_count": pruned, "associations_formed": 0, "associations_strengthened": 0,
        "associations_decayed": 0, "wrap_id": wrap.id}
    return result


def _check_relayed(store: Store, text: str, snapshot_ids: list[str],
                   result: SaveResult) -> None:
    """Flag (or, on a strict store, refuse) continuity lines that reproduce a relayed
    episode of this wrap outside a marked quotation (see :mod:`.relayed`)."""
    found = relayed_rule.find_unquoted(text, relayed_rule.relayed_of_wrap(store, snapshot_ids))
    result["relayed_unquoted"] = [u.as_dict() for u in found]
    if not found:
        return
    where = "; ".join(f"{u.section or 'the header'} reproduces {u.trust} episode {u.episode_id}"
                      for u in found[:5])
    if getattr(store, "relayed_text", "flag") == "strict":
        _refuse(store, "relayed_unquoted",
                f"the continuity carries relayed text as its own ({where}): quote it and say "
                "where it came from (- Tool lookup said: \"...\") or put it in your own words; "
                "this store refuses relayed text outside a quotation (relayed_text='strict')",
                episodes=[u.episode_id for u in found], sections=[u.section for u in found])
    result["warnings"].append(
        f"relayed-unquoted: {where}: relayed (tool/external) text outside a quotation reads as "
        "the agent's own; quote and attribute it in the next wrap")


def _revocations(store: Store, history: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Levels cut because the trust of the episodes that earned them was lowered (a
    deleted grounding episode counts as external; a pruned one keeps its trust)."""
    ids = sorted({i for h in history.values() for g in h.get("grounding") or [] for i in g.get("ids") or []})
    if not ids:
        return {}
    trust = store.effective_trust_map(ids)
    for tid, t in roles_of(store).links.tombstones([i for i in ids if i not in trust]).items():
        trust[tid] = "external" if t.reason == "deleted" else (t.trust or "agent")
    out = {}
    for key, h in history.items():
        cut = revoked_prior(h, trust)
        if cut is not None:
            out[key] = cut
    return out


CRYSTALLIZE_RE = re.compile(r"\s*\[crystallize\]", re.IGNORECASE)


def _crystallize_marked(store: Store, crystal_store: CrystalStore, doc: ContinuityDoc,
                        outcomes: Sequence[LineOutcome], day: str,
                        result: SaveResult) -> str:
    """Move lines marked ``[crystallize]`` out of the continuity into the crystal store
    (opt-in: only when the caller passes a crystal store). Only a Proven line (2x or
    higher after this save's checks) with evidence goes; the crystal is written before
    the continuity, so a failure can duplicate a pattern but never lose it."""
    result["crystallized"] = []
    result["crystallize_refused"] = []
    for o in outcomes:
        if not CRYSTALLIZE_RE.search(o.line.line):
            continue
        section = next((sec for sec in doc.sections if sec.heading == o.line.section), None)
        if o.final_level < 2 or not o.line.citations:
            result["crystallize_refused"].append(
                {"name": o.line.name, "reason": "only a Proven (2x+) line with evidence crystallizes"})
            if section is not None and o.new_text in section.lines:
                section.lines[section.lines.index(o.new_text)] = CRYSTALLIZE_RE.sub("", o.new_text)
            continue
        line = dataclasses.replace(o.line, level=o.final_level)
        try:
            crystal_store.crystallize_line(line, today=day, store=store, actor="agent")
        except Exception as exc:  # the pattern stays in the continuity
            result["crystallize_refused"].append({"name": o.line.name, "reason": str(exc)})
            continue
        result["crystallized"].append(o.line.name)
        if section is not None and o.new_text in section.lines:
            section.lines.remove(o.new_text)
    return doc.render()


def _capped(o: LineOutcome) -> dict[str, Any]:
    """A level-capped line, with 1.0.2's keys (written_level, capped_to, prior_level,
    validated) beside the reason."""
    return dict(_brief(o), written_level=o.line.level, capped_to=o.final_level,
                prior_level=o.prior_level, validated=o.validated, reason=o.cap_reason)


def _relayed(o: LineOutcome, ctx: WrapContext) -> dict[str, Any]:
    """An uncorroborated line: its claimed level, the relayed citations and their class."""
    ids = [c.episode_id for c in o.line.citations]
    classes = sorted({ctx.trust.get(i, "agent") for i in ids}, key=TRUST_LEVELS.__getitem__)
    return {"name": o.line.name, "level": o.line.level, "citations": ids,
            "trust": classes[-1] if classes else "agent", "final_level": o.final_level,
            "section": o.line.section}


def _section_sizes(doc: ContinuityDoc) -> dict[str, int]:
    """Characters per section (``_header`` for the text above the first one)."""
    head = "\n".join(doc.preamble).strip("\n")
    sizes = {"_header": len(head) + 2 if head else 0}  # each block with its blank line
    for sec in doc.sections:
        sizes[sec.heading] = len(f"## {sec.heading}\n{sec.body}") + 2
    return sizes


def _brief(o: LineOutcome, extra: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": o.line.name, "claimed": o.line.level, "level": o.final_level,
                         "section": o.line.section}
    if extra == "reasons":
        d["reasons"] = o.failures
    return d


def _record_history(store: Store, outcomes: Sequence[LineOutcome], day: str,
                    history: dict[str, dict[str, Any]]) -> None:
    by_key: dict[str, list[LineOutcome]] = {}
    for o in outcomes:
        if o.line.key:
            by_key.setdefault(o.line.key, []).append(o)
    now = now_iso()
    for key, outs in by_key.items():
        old = history.get(key)
        level = max(o.final_level for o in outs)
        validated = [o for o in outs if o.grounding_ids and not o.uncorroborated]
        rec = PatternRow(
            name=key,
            level=level,
            max_level_reached=max(level, int(old["max_level_reached"]) if old else 0),
            first_seen_at=old["first_seen_at"] if old else now,
            last_seen_at=day if validated else (old or {}).get("last_seen_at"),
            last_saved_at=now,
            # only explanations that earned a graduation are priors for the cross-session check
            explanations=((old or {}).get("explanations") or [])[-4:] + [
                c.explanation for o in validated if o.final_level >= 2
                for c in o.line.citations if c.explanation][:5],
            grounding=((old or {}).get("grounding") or []) + [
                {"level": o.final_level, "date": day, "ids": o.grounding_ids,
                 "rule": "quoted" if any(c.explanation for c in o.line.citations) else "bare"}
                for o in validated if (old is None or o.final_level > int(old["level"]))],
        )
        roles_of(store).wraps.upsert_pattern(rec)
