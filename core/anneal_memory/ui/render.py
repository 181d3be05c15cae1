"""HTML building blocks for the console: escaping, the page frame, tables, forms, and the
ways memory text is shown.

Every piece of memory text (episode content, pattern lines, names, metadata, audit data)
goes through :func:`esc` and lands in element content or a quoted attribute; none of it
ever becomes a link target, a tag or a style. Links are built only from our own paths
and URL-quoted ids.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlencode

from ..types import RELAYED_TRUST

CSS = """
:root { --fg:#1d232a; --muted:#5b6570; --line:#d8dde3; --bg:#f7f8fa; --card:#fff;
        --accent:#1f5f99; --warn:#9a5b00; --bad:#a12727; --good:#1f7a3a; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color:var(--fg); background:var(--bg); }
header { background:#17324d; color:#fff; padding:8px 16px; display:flex; gap:16px;
         align-items:baseline; flex-wrap:wrap; }
header .brand { font-weight:600; }
header nav a { color:#cfe3f7; margin-right:12px; text-decoration:none; }
header nav a.on { color:#fff; border-bottom:2px solid #fff; }
header .scope { margin-left:auto; font-size:12px; color:#cfe3f7; }
main { padding:16px; max-width:1200px; }
h1 { font-size:20px; margin:4px 0 12px; } h2 { font-size:16px; margin:20px 0 8px; }
table { border-collapse:collapse; width:100%; background:var(--card); }
th, td { border:1px solid var(--line); padding:4px 8px; text-align:left; vertical-align:top; }
th { background:#eef1f4; font-weight:600; }
.card { background:var(--card); border:1px solid var(--line); border-radius:4px;
        padding:8px 12px; margin:8px 0; }
.relayed { border-left:4px solid var(--warn); background:#fffaf0; }
.data-note { color:var(--warn); font-size:12px; font-weight:600; }
pre.content { white-space:pre-wrap; word-break:break-word; margin:4px 0;
              font:13px/1.4 ui-monospace, monospace; }
.muted { color:var(--muted); } .small { font-size:12px; }
.badge { display:inline-block; padding:0 6px; border-radius:8px; font-size:12px;
         border:1px solid var(--line); background:#eef1f4; margin-right:4px; }
.lvl { background:#17324d; color:#fff; border-color:#17324d; }
.mark-ungrounded, .mark-needs-evidence, .bad { background:#fbe9e9; color:var(--bad); }
.mark-carried-forward { background:#eef1f4; }
.mark-level-capped, .mark-uncorroborated, .warn { background:#fff3dd; color:var(--warn); }
.good { background:#e6f4ea; color:var(--good); }
.flash { padding:8px 12px; margin:8px 0; border-radius:4px; }
.flash.ok { background:#e6f4ea; } .flash.error { background:#fbe9e9; }
form.inline { display:inline; margin:0 4px; }
form.filters label { margin-right:10px; }
input, select, button { font:inherit; }
button { cursor:pointer; }
.side { display:grid; grid-template-columns:1fr 1fr; gap:12px; }
.pattern { margin:6px 0; padding:6px 8px; background:var(--card); border:1px solid var(--line); }
details summary { cursor:pointer; color:var(--accent); }
a { color:var(--accent); }
svg.chart { background:#fff; border:1px solid var(--line); }
.legend-item { margin-right:12px; }
.ts { white-space:nowrap; }
"""

NAV = (("/", "Overview"), ("/continuity", "Continuity"), ("/patterns", "Pattern history"),
       ("/worklist", "Review worklist"), ("/episodes", "Episodes"), ("/audit", "Audit"),
       ("/namespaces", "Namespaces"), ("/governed", "Governed memory"))


def esc(value: object) -> str:
    """Text for HTML content or a quoted attribute (``<``, ``&``, both quotes escaped)."""
    return html.escape("" if value is None else str(value), quote=True)


def href(path: str, **params: object) -> str:
    """One of our own paths with query parameters (None and "" left out), escaped."""
    q = {k: v for k, v in params.items() if v not in (None, "", False)}
    return esc(path + ("?" + urlencode(q) if q else ""))


class Frame:
    """What every page of one request shares: the namespace view and the session."""

    def __init__(self, *, ns: str | None, scope_label: str, csrf: str | None,
                 read_only: bool, flash: Sequence[tuple[str, str]] = ()) -> None:
        self.ns = ns
        self.scope_label = scope_label
        self.csrf = csrf
        self.read_only = read_only
        self.flash = list(flash)

    def link(self, path: str, **params: object) -> str:
        return href(path, ns=self.ns, **params)

    def form(self, action: str, fields: Mapping[str, object], button: str, *,
             inline: bool = True, extra: str = "") -> str:
        """A POST form carrying the CSRF token and the namespace (none when read-only)."""
        if self.read_only or self.csrf is None:
            return ""
        hidden = {"csrf": self.csrf, **({"ns": self.ns} if self.ns else {}), **fields}
        inputs = "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
                         for k, v in hidden.items())
        cls = ' class="inline"' if inline else ""
        return (f'<form method="post" action="{esc(action)}"{cls}>{inputs}{extra}'
                f'<button type="submit">{esc(button)}</button></form>')

    def page(self, title: str, active: str, body: str) -> str:
        nav = "".join(f'<a href="{self.link(p)}"{" class=on" if p == active else ""}>{esc(t)}</a>'
                      for p, t in NAV)
        flash = "".join(f'<div class="flash {esc(kind)}">{esc(msg)}</div>'
                        for kind, msg in self.flash)
        mode = " · read-only" if self.read_only else ""
        return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
                '<meta name="viewport" content="width=device-width, initial-scale=1">'
                f"<title>{esc(title)} · anneal-memory</title>"
                '<link rel="stylesheet" href="/static/console.css"></head><body>'
                f'<header><span class="brand">anneal-memory console</span><nav>{nav}</nav>'
                f'<span class="scope" id="scope">{esc(self.scope_label)}{esc(mode)}</span></header>'
                f"<main><h1>{esc(title)}</h1>{flash}{body}</main></body></html>")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, empty: str = "none") -> str:
    """A table; cells are HTML the caller already escaped."""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    if not body:
        return f'<p class="muted">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def badge(text: object, cls: str = "") -> str:
    return f'<span class="badge {esc(cls)}">{esc(text)}</span>'


def trust_badge(trust: str | None) -> str:
    if trust is None:
        return ""
    return badge(f"trust {trust}", "warn" if trust in RELAYED_TRUST else "")


def relayed_note(trust: str | None) -> str:
    """The mark on content relayed from a tool or an outside source."""
    if trust not in RELAYED_TRUST:
        return ""
    return ('<div class="data-note">Relayed content (recorded from '
            f'{"tool output" if trust == "tool" else "an external source"}): '
            "data, not instructions</div>")


def content_block(text: object) -> str:
    return f'<pre class="content">{esc(text)}</pre>'


def json_block(data: object, limit: int = 4000, *, compact: bool = False) -> str:
    text = json.dumps(data, indent=None if compact else 1, ensure_ascii=False, sort_keys=True,
                      default=str, separators=(", ", ": ") if compact else None)
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return f'<pre class="content small">{esc(text)}</pre>'


def options(values: Iterable[tuple[str, str]], chosen: str | None) -> str:
    return "".join(f'<option value="{esc(v)}"{" selected" if v == (chosen or "") else ""}>'
                   f"{esc(label)}</option>" for v, label in values)


def ago(ts: object) -> str:
    """A timestamp to the second, kept on one line."""
    shown = str(ts or "")[:19].replace("T", " ")
    return f'<span class="ts">{esc(shown)}</span>' if shown else ""
