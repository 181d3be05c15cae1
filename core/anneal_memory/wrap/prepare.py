"""prepare_wrap: freeze the episodes since the last wrap and hand the composer its package."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, TypedDict

from .. import tracing
from .._inputs import storable_text
from .._lazy import token_hex
from .._seam import roles_of, unit_of
from ..clock import now_iso, today_iso
from ..continuity.durable import durable_chars, pending_lines
from ..continuity.parse import parse_sections, pattern_lines, pattern_summaries
from ..continuity.schema import default_max_chars, schema_role_warning
from ..episode_rows import episode_links
from ..errors import AnnealMemoryError, ValidationError, WrapInProgressError
from ..immune.signals import stale_patterns
from ..shorten import PACKAGE_EPISODES_BUDGET, fair_cap, shorten
from .baton import baton_holder
from .lifecycle import take_over_stale
from .render import PackageEpisode, WrapPackage, instructions, render_episodes

if TYPE_CHECKING:
    from ..crystal import Crystal, CrystalStore
    from ..store import Store


class _PrepareFields(TypedDict):
    schema_warning: str | None
    wrap_token: str | None
    package: WrapPackage | None
    #: the retired association layer: always None
    assoc_context: None
    uncovered_proven_to_check: list[dict[str, object]]
    crystallization_candidates: list[dict[str, object]]
    rewarm_candidates: list[dict[str, object]]


class PrepareResult(_PrepareFields):
    """What ``prepare_wrap`` returns (1.0.2's keys): ``status`` ``ready`` (with the
    ``package`` and the ``wrap_token``), ``empty`` or ``downgraded`` (no package)."""

    status: str
    episode_count: int
    message: str


def _gate(store: Store, session_id: str | None) -> str | None:
    """None when this caller may consolidate; otherwise the reason it may not."""
    if session_id is None and not store.consolidate_requires_baton():
        return None
    holder = baton_holder(store)
    if session_id is not None and holder == session_id:
        return None
    who = session_id or "<session-id>"
    if session_id is None:
        return ("this store requires the consolidation baton: wrap from the session that holds "
                f"it (holder: {holder or 'nobody'}); claim it with: anneal-memory baton claim {who}")
    return (f"session {session_id!r} does not hold the consolidation baton (holder: "
            f"{holder or 'nobody'}): episodes are captured, not consolidated; the operator "
            f"claims it with: anneal-memory baton claim {session_id}")


@tracing.traced(tracing.UPDATE, "wrap.prepare", result=tracing.prepared)
def prepare_wrap(store: Store, *, max_chars: int | None = None, staleness_days: int = 7,
                 crystal_store: CrystalStore | None = None, session_id: str | None = None,
                 wrap_token: str | None = None) -> PrepareResult:
    """Open (or re-open) the wrap and return the compression package.

    ``status`` is ``ready``, ``empty`` (nothing since the last wrap) or ``downgraded``
    (the baton gate applies: capture only, nothing was opened).
    """
    if max_chars is not None and (isinstance(max_chars, bool) or not isinstance(max_chars, int)
                                  or not 500 <= max_chars <= 1_000_000):
        raise ValidationError("max_chars must be a whole number from 500 to 1,000,000")
    if isinstance(staleness_days, bool) or not isinstance(staleness_days, int) or staleness_days < 0:
        raise ValidationError("staleness_days must be a whole number >= 0")
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise ValidationError("session_id must be a non-empty string (or None)")
    if session_id is not None:
        storable_text(session_id, "session_id")
    if wrap_token is not None:
        storable_text(wrap_token, "wrap_token")
    schema = store.section_schema
    warn = schema_role_warning(schema)
    if warn:
        warnings.warn(warn, UserWarning, stacklevel=3)
    blocked = _gate(store, session_id)
    # assoc_context (the retired association layer) is always None
    base: _PrepareFields = {"schema_warning": warn, "wrap_token": None, "package": None, "assoc_context": None,
            "uncovered_proven_to_check": [], "crystallization_candidates": [],
            "rewarm_candidates": []}
    if blocked:
        n = roles_of(store).episodes.count_unwrapped()
        return {**base, "status": "downgraded", "episode_count": n,
                "message": f"{n} episode(s) waiting. {blocked}"}
    today = today_iso()
    with unit_of(store) as tx:
        w = tx.wraps.open_wrap()
        if w is not None and wrap_token != w.token and take_over_stale(store, w, session_id):
            w = None  # a dead host's wrap, past the operator's stale_wrap_after: taken over
        if w is not None:
            if (w.session_id or None) != (session_id or None):
                raise WrapInProgressError(
                    f"a wrap prepared by {('session ' + repr(w.session_id)) if w.session_id else 'another caller'} "
                    "is open: save or cancel it first (anneal-memory wrap-cancel)")
            if wrap_token != w.token:
                # as in 1.0.2: a wrap is in progress; only its own token re-opens it
                raise WrapInProgressError(
                    "a wrap is already in progress: save it, re-open it with its wrap token, "
                    "or abandon it with wrap_cancel")
            ids, token, today = w.episode_ids, w.token, w.today
            rows = list(tx.episodes.get_episodes(ids).values())
        else:
            rows = tx.episodes.unwrapped_episodes()
            if not rows:
                return {**base, "status": "empty", "episode_count": 0,
                        "message": "no episodes since the last wrap: nothing to compress"}
            ids = [r.id for r in rows]
            # hex, not urlsafe: a token starting with '-' reads as an option on a command line
            token = wrap_token or token_hex(18)
            wid = tx.wraps.insert_wrap(now_iso(), token, session_id, ids, today)
            tx.audit.append("wrap_started", {"wrap_id": wid, "episodes": len(ids),
                                             "session_id": session_id}, actor="agent")
    # the rows read to open the wrap are its episodes: no second read of them, and the
    # package is built from the rows (no Episode objects it would only take apart)
    sup, _sources, eff = episode_links(store, rows)
    rows.sort(key=lambda r: (r.timestamp, r.id))
    continuity = store.load_continuity()
    target = max_chars or default_max_chars(schema)
    lines = []
    doc_durable = 0
    doc = None
    if continuity:
        try:  # parsed once; every reading below works on this parse
            doc = parse_sections(continuity, schema, require=False)
            lines = pattern_lines(doc)
            doc_durable = durable_chars(doc)
        except AnnealMemoryError:
            lines = []
    summaries = pattern_summaries(lines) if lines else []
    # what the model reads of each episode: long ones shortened to a fair share of the
    # package's budget, each naming the episode whose whole text stays in the store
    cap = fair_cap([len(r.content) for r in rows])
    listed: list[PackageEpisode] = [{"id": r.id, "timestamp": r.timestamp, "type": r.type,
               "content": shorten(r.content, cap, r.id),
               "source": r.source, "trust": eff.get(r.id) or r.trust,
               "superseded_by": sup[r.id][-1][0] if r.id in sup else None} for r in rows]
    cut = [r.id for r in rows if len(r.content) > cap]
    package: WrapPackage = {
        "episodes": render_episodes(listed),  # text, as 1.0.2 gives it
        "episode_list": listed,
        "episode_count": len(listed),
        "continuity": continuity,
        "stale_patterns": stale_patterns(lines, today, staleness_days, continuity),
        "today": today,
        "max_chars": target,
        "project_name": store.project_name,
    }
    if cut:
        package["shortened"] = {"episode_ids": cut, "chars_per_episode": cap,
                                "episodes_budget": PACKAGE_EPISODES_BUDGET}
    told = instructions(
        schema, project_name=store.project_name, max_chars=target, today=today,
        proven=[s for s in summaries if s.level >= 2], summaries=summaries,
        durable_chars=doc_durable, pending=pending_lines(doc))
    if cut:
        told += (f"\n\n{len(cut)} episode(s) are longer than {cap:,} characters and are shown "
                 "shortened (each says so); their full text stays in the store under its id. "
                 "Compress from what is shown; cite them by id as any other.")
    package["instructions"] = told
    package["crystallization_candidates"] = [
        {"name": s.name, "level": s.level, "summary": s.summary} for s in summaries
        if s.level >= CRYSTALLIZE_LEVEL]
    package["uncovered_proven"], package["rewarm_candidates"] = [], []
    if crystal_store is not None:
        try:
            package["crystal_index"] = crystal_store.cue_index()
            live = crystal_store.list()
        except Exception:
            package["crystal_index"], live = None, []
        in_file = {s.name.casefold() for s in summaries}
        # crystallized Proven the contradiction scan should still cover
        package["uncovered_proven"] = [{"name": c.name, "level": c.level, "explanation": c.text}
                                       for c in live if c.name.casefold() not in in_file]
        package["rewarm_candidates"] = [{"name": c.name, "level": c.level,
                                         "last_activated_on": c.last_activated_on}
                                        for c in live if gone_cold(c, today)]
    return {**base, "status": "ready", "episode_count": len(listed), "package": package,
            "uncovered_proven_to_check": package["uncovered_proven"],
            "crystallization_candidates": package["crystallization_candidates"],
            "rewarm_candidates": package["rewarm_candidates"],
            "wrap_token": token,
            "message": f"{len(listed)} episode(s) to compress; save with the wrap token"}


#: a pattern this high is a candidate to graduate out into the crystal store
CRYSTALLIZE_LEVEL = 3
#: a crystal unused this long is offered for re-warming
REWARM_DAYS = 90


def gone_cold(crystal: Crystal, today: str) -> bool:
    """Unused for more than ``REWARM_DAYS``: offered for re-warming."""
    from ..clock import days_between

    try:
        return days_between(crystal.last_activated_on or crystal.crystallized_on, today) > REWARM_DAYS
    except Exception:
        return False
