"""The console's pages: each reads the memory through the library's public calls and
returns the page's HTML. A page never writes; the forms it shows post to ``actions``."""

from __future__ import annotations

import base64
import json
import re
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._seam import roles_of
from ..audit import AuditTrail, same_label
from ..continuity.parse import (
    PatternLine,
    parse_pattern_line,
    parse_pattern_lines,
    parse_sections,
    pattern_key,
)
from ..errors import AnnealMemoryError, ValidationError
from ..governance import MemoryNamespace, MemoryRuntime
from ..immune.probes import list_probes
from ..immune.review import drift_by_wrap, pattern_timeline, review_worklist, reviewed_through
from ..store import Store
from ..types import TRUST_LEVELS, Episode, EpisodeType
from .chart import legend, level_chart
from .render import (
    Frame,
    ago,
    badge,
    content_block,
    esc,
    json_block,
    options,
    relayed_note,
    table,
    trust_badge,
)

#: an anchor typed into the audit page: a hash or SEQ:HASH (a file is for --anchor only)
ANCHOR_RE = re.compile(r"^(\d{1,12}:)?[0-9a-fA-F]{64}$")
MAX_LIMIT = 500
#: namespaces offered in the episode filter (the Namespaces page lists them all, paged)
PICK_MAX = 100
#: namespaces per page of the Namespaces page
NS_PAGE = 200


class NotFound(AnnealMemoryError):
    """A page or an id that does not exist (HTTP 404)."""


@dataclass
class View:
    """One request's reading of the store: the namespace view and the console's settings."""

    store: Store            # the root store, or the scoped view the request names
    root: Store
    namespace: MemoryNamespace | None
    frame: Frame
    query: Mapping[str, str]
    anchor: Any = None      # the anchor the console was started with, if any
    reviewer: str = ""
    operator: bool = False  # whether raising trust is allowed (started past the gate)

    def arg(self, name: str, default: str = "") -> str:
        return self.query.get(name, default).strip()

    def number(self, name: str, default: int, maximum: int = MAX_LIMIT) -> int:
        raw = self.arg(name)
        if not raw:
            return default
        if not raw.isdigit() or int(raw) > maximum:
            raise ValidationError(f"{name} must be a whole number from 0 to {maximum}")
        return int(raw)


# ---------------------------------------------------------------------- namespaces in URLs

def ns_token(ns: MemoryNamespace) -> str:
    """A namespace as one URL-safe parameter value."""
    raw = json.dumps([ns.tenant, ns.user, ns.project, ns.agent], ensure_ascii=False,
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def parse_ns_token(token: str) -> MemoryNamespace:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        tenant, user, project, agent = json.loads(raw.decode("utf-8"))
    except (ValueError, TypeError, UnicodeDecodeError):
        raise ValidationError("the ns parameter is not a namespace this console wrote: "
                              "open the namespace from the Namespaces page") from None
    return MemoryNamespace(tenant=tenant, user=user, agent=agent, project=project)


# ---------------------------------------------------------------------- shared pieces

def episode_card(v: View, e: Episode, *, full: bool = False) -> str:
    f = v.frame
    bits = [f'<a href="{f.link("/episode", id=e.id)}"><code>{esc(e.id)}</code></a>',
            badge(e.type.value), f'<span class="muted small">{ago(e.timestamp)}</span>',
            trust_badge(e.trust), badge(f"source {e.source}")]
    if e.state_key:
        bits.append(badge(f"state key {e.state_key}"))
    if e.superseded_by:
        bits.append(f'<span class="badge warn">replaced by <a href="'
                    f'{f.link("/episode", id=e.superseded_by)}">{esc(e.superseded_by)}</a></span>')
    if e.derived_from:
        bits.append("derived from " + ", ".join(
            f'<a href="{f.link("/episode", id=i)}">{esc(i)}</a>' for i in e.derived_from))
    cls = "card relayed" if e.trust in ("tool", "external") else "card"
    meta = json_block(e.metadata) if full and e.metadata else ""
    return (f'<div class="{cls}" id="ep-{esc(e.id)}">{" ".join(bits)}{relayed_note(e.trust)}'
            f"{content_block(e.content)}{meta}</div>")


def _cited(v: View, ids: list[str]) -> dict[str, Episode]:
    ids = sorted(set(ids))
    return v.store.get_many(ids) if ids else {}


def pattern_html(v: View, line: PatternLine, eps: Mapping[str, Episode], *, hand: bool = True) -> str:
    """One governed pattern line: level, date, marks, stances, cited episodes (each one
    click away), and the operator's hand demotion / retirement."""
    f = v.frame
    head = [f"<strong>{esc(line.name or '(unnamed)')}</strong>", badge(f"{line.level}x", "lvl")]
    if line.date:
        head.append(badge(line.date))
    head += [badge(m, f"mark-{m}") for m in line.marks]
    head += [badge(f"contradicts: {c}", "warn") for c in line.contradicts]
    if line.no_contradicts:
        head.append(badge("no-contradicts"))
    if line.provenance:
        head.append(badge("provenance: " + ", ".join(line.provenance)))
    cites = []
    for c in line.citations:
        e = eps.get(c.episode_id)
        said = f' "{c.explanation}"' if c.explanation is not None else ""
        inner = (episode_card(v, e) if e is not None else
                 '<p class="muted">not in this store (deleted, pruned, or another '
                 "namespace's id)</p>")
        shown = " open" if v.arg("open") == "1" else ""
        cites.append(f"<details{shown}><summary>evidence <code>{esc(c.episode_id)}</code>"
                     f"{esc(said)}</summary>{inner}</details>")
    forms = ""
    if hand and line.key and not f.read_only:
        if line.level > 1:
            pick = options(((str(n), f"{n}x") for n in range(line.level - 1, 0, -1)), None)
            forms += f.form("/act/demote", {"name": line.name, "back": "/continuity"},
                            "Demote", extra=f'<select name="level">{pick}</select>')
        forms += f.form("/act/retire", {"name": line.name, "back": "/continuity"}, "Retire")
    raw = f'<details><summary class="small">line as written</summary>{content_block(line.line)}</details>'
    return (f'<div class="pattern">{" ".join(head)} {forms}'
            f'{"".join(cites) or "<div class=small>no evidence cited</div>"}{raw}</div>')


# ---------------------------------------------------------------------- pages

def overview(v: View) -> str:
    st = v.store.status()
    f = v.frame
    worklist = len(review_worklist(v.store))
    rows = [
        ("Store", esc(st.path)),
        ("Episodes", f"{st.total_episodes} ({st.episodes_since_wrap} since the last wrap)"),
        ("By type", esc(", ".join(f"{k} {n}" for k, n in sorted(st.episodes_by_type.items()))
                        or "none")),
        ("By trust", esc(", ".join(f"{k} {n}" for k, n in sorted(st.trust_counts.items()))
                         or "none")),
        ("Wraps", f"{st.total_wraps}, last {ago(st.last_wrap_at) or 'never'}"
         + (f"; one open since {ago(st.wrap_started_at)}" if st.wrap_in_progress else "")
         + (' <span class="badge bad" id="wrap-stale">stale: its host may have died '
            "(wrap-cancel --force, or a stale_wrap_after policy)</span>"
            if st.wrap_stale else "")),
        ("Continuity", f"{st.continuity_chars} chars" if st.continuity_chars is not None
         else "none yet"),
        ("Superseded / tombstones", f"{st.superseded_count} / {st.tombstone_count}"),
        ("Audit", f"{st.audit_entry_count} entries"
         + (f', <span class="badge bad">{st.audit_write_failures} lost write(s): '
            f"{esc(st.audit_last_failure)}</span>" if st.audit_write_failures else "")),
        ("Review worklist", f'<a href="{f.link("/worklist")}">{worklist} graduation(s) to '
                            "judge</a>"),
    ]
    every = st.all_namespaces
    if every is not None and every.namespaces:  # the root: its own wraps above, everyone's here
        rows = [(f"{k} (the root's own)" if k in ("Wraps", "Continuity") else k, val)
                for k, val in rows]
        rows.append(("All namespaces",
                     f'<a href="{f.link("/namespaces")}">{every.namespaces} namespace(s)</a>: '
                     f"{every.wraps} wrap(s), last {ago(every.last_wrap_at) or 'never'}; "
                     f"{every.open_wraps} open; {every.continuities} continuity file(s) saved"))
    elif every is not None:  # the root of a store without namespaces (yet)
        rows.append(("Namespaces", f'<a href="{f.link("/namespaces")}">0</a>'))
    danger = ""
    ns = getattr(v.store, "namespace", None)
    if ns is not None:
        danger = f.form("/act/erase", {"back": "/namespaces"}, "Erase this namespace",
                        inline=False, extra=(
                            '<label>type <code>' + esc(ns.label()) + '</code> to confirm '
                            '<input name="confirm" id="erase-confirm" autocomplete="off">'
                            "</label> "))
        if danger:
            danger = ('<h2>Erase</h2><p class="muted small">Forget this namespace whole: its '
                      "episodes, continuity, wraps, items and governed records, for good "
                      "(operator mode only).</p>" + danger)
    from datetime import timedelta

    from ..clock import today
    from .chart import activity_chart

    first = today() - timedelta(days=ACTIVITY_DAYS - 1)
    seen = {d: (e, w) for d, e, w in roles_of(v.store).episodes.activity_by_day(first.isoformat())}
    days = [(d, *seen.get(d, (0, 0))) for d in
            ((first + timedelta(days=i)).isoformat() for i in range(ACTIVITY_DAYS))]
    if not any(e or w for _d, e, w in days):
        days = []
    activity = (f"<h2>Activity, last {ACTIVITY_DAYS} days</h2>"
                '<p class="muted small">Episodes recorded per day (bars) and days with a '
                "saved wrap (dots), this view's own.</p>"
                + activity_chart(days))
    return f.page("Overview", "/", table(("", ""), ([k, val] for k, val in rows)) + activity
                  + danger)


#: days of activity the Overview's chart shows
ACTIVITY_DAYS = 30


def continuity(v: View) -> str:
    f = v.frame
    text = v.store.load_continuity()
    if text is None:
        return f.page("Continuity", "/continuity",
                      '<p class="muted">No continuity yet: the first saved wrap writes it.</p>')
    schema = v.store.section_schema
    try:
        doc = parse_sections(text, schema, require=False)
        lines = parse_pattern_lines(text, schema)
    except AnnealMemoryError as exc:
        return f.page("Continuity", "/continuity", f'<p class="flash error">{esc(exc)}</p>'
                      + content_block(text))
    eps = _cited(v, [c.episode_id for p in lines for c in p.citations])
    expand = (f'<a href="{f.link("/continuity")}">fold the evidence</a>' if v.arg("open") == "1"
              else f'<a href="{f.link("/continuity", open="1")}">show all evidence</a>')
    out = [f'<p class="muted small">{len(text)} characters · {len(lines)} pattern line(s) · '
           f"{expand}</p>"]
    if any(x.strip() for x in doc.preamble):
        out.append(content_block("\n".join(doc.preamble).strip("\n")))
    for s in doc.sections:
        out.append(f"<h2>{esc(s.heading)} {badge(s.role or 'not in the schema')}</h2>")
        if s.role != "graduating":
            out.append(content_block(s.body) if s.body else '<p class="muted">empty</p>')
            continue
        plain: list[str] = []
        for i, raw in enumerate(s.lines):
            p = parse_pattern_line(raw, section=s.heading, index=i)
            if p is None:
                plain.append(raw)
                continue
            if any(x.strip() for x in plain):
                out.append(content_block("\n".join(plain).strip("\n")))
            plain = []
            out.append(pattern_html(v, p, eps))
        if any(x.strip() for x in plain):
            out.append(content_block("\n".join(plain).strip("\n")))
    return f.page("Continuity", "/continuity", "".join(out))


def patterns(v: View) -> str:
    f = v.frame
    timeline = pattern_timeline(v.store)
    grounding = v.store.pattern_grounding()
    text = v.store.load_continuity()
    from ..continuity.parse import pattern_levels

    now = pattern_levels(text, v.store.section_schema)
    out = ['<p class="muted">Each pattern\'s level after every saved wrap (and hand edit). '
           "Hover a point for what happened.</p>", legend()]
    if not timeline:
        out.append('<p class="muted">No wrap has recorded pattern levels yet.</p>')
    for name, points in timeline.items():
        key = pattern_key(name)
        cur = now.get(key)
        out.append(f'<h2>{esc(name)} {badge(f"now {cur}x", "lvl") if cur else badge("not in the continuity")}</h2>')
        chart = level_chart(points)
        rows = [[esc(p.wrap_id if p.wrap_id is not None else "hand edit"), ago(p.at),
                 esc(f"{p.level}x"), esc(", ".join(p.events)),
                 esc(f"{p.claimed}x" if p.claimed is not None else ""), esc(p.cap_reason or "")]
                for p in points]
        out.append(f'<div class="side"><div>{chart}</div><div>'
                   + table(("wrap", "saved", "level", "what happened", "claimed", "cap"), rows)
                   + "</div></div>")
        rungs = grounding.get(key) or []
        if rungs:
            out.append("<p class=small>grounding of each rung earned: " + "; ".join(
                f"{esc(g.get('level'))}x on {esc(g.get('date'))} by "
                + ", ".join(f'<a href="{f.link("/episode", id=i)}">{esc(i)}</a>'
                            for i in g.get("ids") or []) for g in rungs) + "</p>")
    return f.page("Pattern history", "/patterns", "".join(out))


def worklist(v: View) -> str:
    f = v.frame
    items = review_worklist(v.store)
    through = reviewed_through(v.store)
    text = v.store.load_continuity() or ""
    lines = {p.key: p for p in parse_pattern_lines(text, v.store.section_schema)} if text else {}
    newest = v.store.wrap_history(1)
    out = [f'<p class="muted">Every pattern a save graduated to 2x or higher with a validated '
           f"citation, since the wraps you last marked reviewed (through wrap {through}). "
           "Judge each: is it true, and does it contradict a Proven pattern?</p>"]
    if items and newest:
        out.append(f.form("/act/reviewed", {"through": newest[0]["id"], "back": "/worklist"},
                          f"Mark reviewed through wrap {newest[0]['id']}"))
    if not items:
        out.append('<p class="muted" id="worklist-empty">Nothing to review.</p>')
    written = {id(it): parse_pattern_line(it.line) if it.line else None for it in items}
    eps = _cited(v, [c.episode_id for p in [*lines.values(), *written.values()] if p
                     for c in p.citations])
    for it in items:
        stance = {"contradicts": badge("contradicts: " + ", ".join(it.contradicts), "warn"),
                  "no-contradicts": badge("declared: contradicts nothing", "good"),
                  "none": badge("no contradiction stance declared", "bad")}[it.stance]
        line = written[id(it)] or lines.get(pattern_key(it.name))
        left = (pattern_html(v, line, eps, hand=False) if line is not None
                else '<p class="muted">no longer in the continuity</p>')
        right = "".join(
            (f'<div class="card{" relayed" if c.trust in ("tool", "external") else ""}">'
             f'<a href="{f.link("/episode", id=c.id)}"><code>{esc(c.id)}</code></a> '
             f"{trust_badge(c.trust)}{relayed_note(c.trust)}{content_block(c.content)}</div>")
            if c.content is not None else
            f'<div class="card"><code>{esc(c.id)}</code> <span class="badge bad">'
            f"{esc(c.removed)}</span></div>" for c in it.cited)
        out.append(f'<div class="card worklist-item"><strong>{esc(it.name)}</strong> '
                   f'{badge(f"{it.prior or 0}x → {it.level}x", "lvl")} {stance} '
                   f'<span class="muted small">wrap {esc(it.wrap_id)} · {ago(it.wrapped_at)}'
                   f"{' · now ' + esc(it.current_level) + 'x' if it.current_level else ''}</span>"
                   f'<div class="side"><div><h2>The line as saved</h2>{left}</div>'
                   f"<div><h2>Cited episodes</h2>{right}</div></div></div>")
    out.append("<h2>Drift probes</h2>")
    probes = list_probes(v.store)
    out.append(table(("probe", "what must survive", "last verdict", "detail"), (
        [f"<code>{esc(p['id'])}</code>",
         esc(f"pattern {p['pattern']} at {p['min_level']}x or higher" if p["kind"] == "pattern"
             else f"fact: {p['fact']}" + (f" (in {p['section']})" if p.get("section") else "")),
         badge(p["last_status"] or "not checked yet", _verdict_cls(p["last_status"])),
         esc(p["last_detail"] or "")] for p in probes), empty="no drift probes declared"))
    rows = []
    for w in drift_by_wrap(v.store):
        if w["probes"]:
            verdicts = " ".join(badge(f"{p['id']}: {p['status']}", _verdict_cls(p["status"]))
                                + f'<span class="small muted">{esc(p.get("detail") or "")}</span>'
                                for p in w["probes"])
        else:
            verdicts = '<span class="muted">no probes checked</span>'
        rows.append([esc(w["wrap_id"]), ago(w["wrapped_at"]), verdicts])
    out.append("<h2>Verdicts per wrap</h2>")
    out.append(table(("wrap", "saved", "verdicts"), rows, empty="no saved wraps"))
    return f.page("Review worklist", "/worklist", "".join(out))


def _verdict_cls(status: str | None) -> str:
    return {"held": "good", "weakened": "warn", "changed": "bad", "lost": "bad"}.get(status or "", "")


def episodes(v: View) -> str:
    f = v.frame
    q, etype, trust = v.arg("q"), v.arg("type"), v.arg("trust")
    since, until = v.arg("since"), v.arg("until")
    superseded = v.arg("superseded") == "1"
    limit, offset = v.number("limit", 50) or 50, v.number("offset", 0, 10**9)
    res = v.store.recall(keyword=q or None, episode_type=etype or None, trust=trust or None,
                         since=since or None, until=until or None, limit=limit, offset=offset,
                         include_superseded=superseded)
    types = [("", "any type")] + [(t.value, t.value) for t in EpisodeType]
    trusts = [("", "any trust")] + [(t, t) for t in TRUST_LEVELS]
    every = v.root.namespaces()
    names = [("", "root (every namespace)")] + [
        (ns_token(n["namespace"]), n["namespace"].label()) for n in every[:PICK_MAX]]
    if v.namespace is not None and f.ns not in {t for t, _l in names}:
        names.append((f.ns or "", v.namespace.label()))
    more = (f' <a class="small" href="{f.link("/namespaces")}">{len(every) - PICK_MAX} more'
            "</a>" if len(every) > PICK_MAX else "")
    ns_pick = (f'<label>namespace <select name="ns">{options(names, f.ns)}</select></label>'
               + more)
    form = (f'<form method="get" action="/episodes" class="filters card">'
            f'<label>search <input name="q" value="{esc(q)}" size="28"></label>'
            f'<label>type <select name="type">{options(types, etype)}</select></label>'
            f'<label>trust <select name="trust">{options(trusts, trust)}</select></label>'
            f'<label>since <input name="since" value="{esc(since)}" size="12" '
            'placeholder="7d or ISO"></label>'
            f'<label>until <input name="until" value="{esc(until)}" size="12"></label>'
            f'<label><input type="checkbox" name="superseded" value="1"'
            f'{" checked" if superseded else ""}> include replaced</label>{ns_pick}'
            f'<input type="hidden" name="limit" value="{limit}">'
            '<button type="submit">Search</button></form>')
    match = res.query_params.get("match")
    info = (f'<p class="muted small">{res.total_matching} matching'
            + (f" (matched as {esc(match)})" if match else "") + "</p>")
    cards = "".join(episode_card(v, e) for e in res.episodes) or '<p class="muted">none</p>'
    pager = []
    params = {"q": q, "type": etype, "trust": trust, "since": since, "until": until,
              "superseded": "1" if superseded else "", "limit": limit}
    if offset > 0:
        pager.append(f'<a href="{f.link("/episodes", **params, offset=max(0, offset - limit))}">'
                     "newer</a>")
    if offset + limit < res.total_matching:
        pager.append(f'<a href="{f.link("/episodes", **params, offset=offset + limit)}">older</a>')
    return f.page("Episodes", "/episodes", form + info + cards + " · ".join(pager))


def episode(v: View) -> str:
    f = v.frame
    eid = v.arg("id")
    e = v.store.get(eid) if eid else None
    if e is None:
        raise NotFound(f"no episode {eid!r} in this view: check the id (Episodes page)")
    out = [episode_card(v, e, full=True)]
    chain = v.store.supersession_chain(e.id)
    if chain:
        others = _cited(v, [x for link in chain for x in (link["old_id"], link["new_id"])])
        rows = [[f'<a href="{f.link("/episode", id=link["old_id"])}">{esc(link["old_id"])}</a>',
                 f'<a href="{f.link("/episode", id=link["new_id"])}">{esc(link["new_id"])}</a>',
                 badge(link["kind"]), ago(link["created_at"]),
                 content_block(others[link["new_id"]].content if link["new_id"] in others else "")]
                for link in chain]
        out.append("<h2>Supersession chain</h2>" + table(
            ("replaced", "by", "link", "when", "replacing text"), rows))
    if e.state_key:
        for slot in v.store.state_report(e.state_key):
            hist = [f"<li><a href=\"{f.link('/episode', id=h['id'])}\">{esc(h['id'])}</a> "
                    f"{ago(h['timestamp'])} {esc(h['content'])}</li>" for h in slot["history"]]
            out.append(f"<h2>State key {esc(slot['key'])}</h2><p>current holder "
                       f"<a href=\"{f.link('/episode', id=slot['current']['id'])}\">"
                       f"{esc(slot['current']['id'])}</a></p><ul>{''.join(hist)}</ul>")
    if not f.read_only:
        pick = options(((t, t) for t in TRUST_LEVELS), e.trust)
        note = ("" if v.operator else '<p class="small muted">Lowering trust is open; raising it '
                "is operator-only (start the console with --operator).</p>")
        out.append("<h2>Trust</h2>" + f.form("/act/trust", {"id": e.id, "back": "/episode"},
                                              "Set trust", extra=f'<select name="trust">{pick}</select>')
                   + note)
    return f.page(f"Episode {e.id}", "/episodes", "".join(out))


def audit(v: View) -> str:
    f = v.frame
    loc = v.root.dsn or v.root.path
    typed = v.arg("anchor")
    if typed and not ANCHOR_RE.match(typed):
        raise ValidationError("the anchor must be a 64-hex hash or SEQ:HASH (the output of "
                              "'anneal-memory audit head'); an anchor file can only be named "
                              "when the console starts")
    anchor = typed or v.anchor
    try:
        res = AuditTrail.verify(loc, anchor=anchor)
        ok = res.valid
        summary = (f'<p><span class="badge {"good" if ok else "bad"}" id="verify">'
                   f'{"chain valid" if ok else "chain broken"}</span> {res.total_entries} '
                   f"entries in {res.files_verified} file(s)"
                   + (f", {res.unmirrored_entries} not yet mirrored" if res.unmirrored_entries else "")
                   + "</p>")
        if not ok:
            summary += (f"<p class=\"flash error\">breaks at entry {esc(res.chain_break_at)} in "
                        f"{esc(res.chain_break_file)}: {esc(res.reason)}</p>")
        if res.anchor:
            a = res.anchor
            summary += (f"<p>anchor <code>{esc(a.get('seq') or '')}:{esc(str(a.get('hash'))[:16])}"
                        f"…</code> {badge('matches' if ok else 'checked', 'good' if ok else 'bad')}"
                        "</p>")
        elif anchor is None:
            summary += ('<p class="muted small">No anchor kept: the chain proves itself '
                        "consistent, not that its tail is the one you saw. Keep the head below "
                        "elsewhere and check it here later.</p>")
    except AnnealMemoryError as exc:
        summary = f'<p class="flash error" id="verify">{esc(exc)}</p>'
    head = AuditTrail.head(loc)
    summary += (f'<p class="small">head <code id="head">{esc(head.seq)}:{esc(head.hash)}</code></p>'
                f'<form method="get" action="/audit" class="filters">'
                f'{_hidden_ns(f)}<label>check an anchor <input name="anchor" size="70" '
                f'value="{esc(typed)}" placeholder="SEQ:HASH"></label>'
                '<button type="submit">Verify</button></form>')
    event, actor, since = v.arg("event"), v.arg("actor"), v.arg("since")
    # in a namespace view, by default only the entries that carry its namespace (the
    # trail writes it as salted hashes, so compare with the namespace hashed the same way)
    mine = v.namespace is not None and v.arg("all") != "1"
    stamp = (v.root.audit_trail.redact("record", {"namespace": v.namespace.to_dict()})["namespace"]
             if v.namespace is not None else None)
    limit = v.number("limit", 100, 5000) or 100
    # the console knows the salt: each entry's hashed namespace resolves to the label of a
    # namespace this store holds (an erased one no longer resolves)
    labels = _namespace_labels(v)
    pick = v.arg("entry_ns") if v.namespace is None else ""
    if pick and pick not in labels.values() and pick != "(root)":
        raise ValidationError("pick a namespace from the list (or any)")
    if since:
        from ..clock import parse_since

        since = parse_since(since, field="since")
    keep: deque[dict[str, Any]] = deque(maxlen=limit)
    events: set[str] = set()
    actors: set[str] = set()
    for _name, entry in AuditTrail.iter_entries(loc):
        events.add(str(entry.get("event", "")))
        actors.add(str(entry.get("actor", "")))
        if (event and entry.get("event") != event) or (actor and entry.get("actor") != actor) \
                or (since and str(entry.get("ts", "")) < since):
            continue
        stamped = (entry.get("data") or {}).get("namespace")
        if mine and not same_label(stamped, stamp):
            continue
        if pick and _label_of(labels, stamped) != pick:
            continue
        keep.append(entry)
    filters = (f'<form method="get" action="/audit" class="filters card">{_hidden_ns(f)}'
               f'<label>event <select name="event">{options([("", "any")] + [(x, x) for x in sorted(events)], event)}</select></label>'
               f'<label>actor <select name="actor">{options([("", "any")] + [(x, x) for x in sorted(actors)], actor)}</select></label>'
               f'<label>since <input name="since" value="{esc(v.arg("since"))}" size="12" '
               'placeholder="7d or ISO"></label>'
               f'<label>newest <input name="limit" value="{limit}" size="5"></label>'
               + (f'<label><input type="checkbox" name="all" value="1"{"" if mine else " checked"}>'
                  " every namespace's entries</label>" if v.namespace is not None else "")
               + (f'<label>namespace <select name="entry_ns" id="entry-ns">'
                  f'{options([("", "any"), ("(root)", "(root)")] + [(x, x) for x in sorted(set(labels.values()))], pick)}'
                  "</select></label>" if v.namespace is None else "")
               +
               '<button type="submit">Filter</button></form>')
    rows = [[esc(e.get("seq")), ago(e.get("ts")), esc(e.get("actor")), badge(e.get("event")),
             esc(_label_of(labels, (e.get("data") or {}).get("namespace"))),
             json_block(e.get("data"), limit=1500, compact=True)] for e in reversed(keep)]
    note = ('<p class="muted small">One chain for the whole store; entries carry their '
            "namespace as salted hashes, and this view shows "
            + ("only its own" if mine else "every namespace's") + ".</p>" if v.namespace else "")
    return f.page("Audit", "/audit", summary + "<h2>Event stream</h2>" + note + filters
                  + table(("seq", "time", "actor", "event", "namespace",
                           "data (ids and hashes)"), rows, empty="no entries match"))


def _label_key(stamped: Any) -> tuple[tuple[str, str], ...] | None:
    """A hashed namespace as the trail holds it, as a key (each hash cut to the length
    same_label compares, so entries written at full length resolve too)."""
    if not isinstance(stamped, dict):
        return None
    from ..audit import LABEL_HEX

    return tuple(sorted((str(k), str(x)[:LABEL_HEX]) for k, x in stamped.items()))


def _namespace_labels(v: View) -> dict[tuple[tuple[str, str], ...], str]:
    """Each namespace of the store, by the key of its hashed stamp."""
    trail = v.root.audit_trail
    out = {}
    for n in v.root.namespaces():
        clear = n["namespace"].to_dict()
        for stamped in (trail.redact("record", {"namespace": clear})["namespace"], clear):
            key = _label_key(stamped)  # hashed, or in clear where labels are not hashed
            if key is not None:
                out[key] = n["namespace"].label()
    return out


def _label_of(labels: dict[tuple[tuple[str, str], ...], str], stamped: Any) -> str:
    if stamped is None:
        return "(root)"
    key = _label_key(stamped)
    return labels.get(key, "(erased or unknown)") if key is not None else "(root)"


def _hidden_ns(f: Frame) -> str:
    return f'<input type="hidden" name="ns" value="{esc(f.ns)}">' if f.ns else ""


def namespaces(v: View) -> str:
    f = v.frame
    offset = v.number("offset", 0, 10**9)
    every = v.root.namespaces()
    rows = [[f'<a href="{esc("/?ns=" + ns_token(n["namespace"]))}">{esc(n["namespace"].label())}</a>',
             esc(n["namespace"].tenant), esc(n["namespace"].user),
             esc(n["namespace"].project or "(user level)"), esc(n["namespace"].agent),
             esc(n["episodes"]), esc(n["wraps"]), esc(n["records"]), esc(n["pending_reviews"])]
            for n in every[offset:offset + NS_PAGE]]
    pager = " · ".join(
        [f'<a href="{f.link("/namespaces", offset=max(0, offset - NS_PAGE))}">previous</a>']
        * (offset > 0)
        + [f'<a href="{f.link("/namespaces", offset=offset + NS_PAGE)}">next</a>']
        * (offset + NS_PAGE < len(every)))
    st = v.root.status()
    intro = (f'<p>The root store: {st.total_episodes} episode(s) in all, {st.total_wraps} wrap(s) '
             f'of its own. <a href="/">Open the root view</a>.</p>'
             '<p class="muted small">Each namespace opens as its own view: its own continuity, '
             "wraps, pattern history, worklist and probes; its recall sees its own episodes "
             "(and, for a project, its user's user-level ones).</p>")
    return f.page("Namespaces", "/namespaces", intro + table(
        ("namespace (tenant/user/project/agent)", "tenant", "user", "project", "agent",
         "episodes", "wraps", "governed records", "pending reviews"), rows,
        empty="no namespaces: every episode was written without one")
        + f'<p class="small muted">{len(every)} namespace(s) {pager}</p>')


def governed(v: View) -> str:
    f = v.frame
    if not roles_of(v.store).governance.has_schema():
        return f.page("Governed memory", "/governed",
                      '<p class="muted">No governed memory in this store yet.</p>')
    reviews = MemoryRuntime(v.store).pending_reviews()
    out = [f'<p class="muted">{len(reviews)} candidate(s) the write gate sent to human review. '
           "Approve commits one as human_reviewed (the other gates still apply); reject closes "
           "it without writing.</p>",
           f'<p class="small">Decisions are recorded as made by <strong id="reviewer">'
           f"{esc(v.reviewer)}</strong>, the operator this console was started for (the ui "
           "command's reviewer option).</p>"]
    for r in reviews:
        c = r.get("candidate") or {}
        ns = c.get("namespace") or {}
        label = "/".join(str(ns.get(k) or "*") for k in ("tenant", "user", "project", "agent"))
        src = c.get("source") or {}
        facts = [badge(r.get("reason"), "warn"), badge(c.get("memory_type")),
                 badge(f"subject {c.get('subject')}"),
                 badge(f"source {src.get('kind') if isinstance(src, dict) else src}"),
                 badge(f"confidence {c.get('confidence')}")]
        forms = (f.form("/act/approve", {"review_id": r["review_id"], "back": "/governed"},
                        "Approve")
                 + f.form("/act/reject", {"review_id": r["review_id"], "back": "/governed"},
                          "Reject"))
        out.append(f'<div class="card review"><code>{esc(r["review_id"])}</code> '
                   f'<span class="muted small">{esc(label)} · {ago(r.get("created_at"))}</span> '
                   f'{" ".join(facts)}{content_block(c.get("content"))}{forms}</div>')
    return f.page("Governed memory", "/governed", "".join(out))


PAGES: dict[str, Callable[[View], str]] = {
    "/": overview, "/continuity": continuity, "/patterns": patterns, "/worklist": worklist,
    "/episodes": episodes, "/episode": episode, "/audit": audit, "/namespaces": namespaces,
    "/governed": governed,
}
