"""Small inline SVG charts: a pattern's level across wraps, and a memory's episodes and
wraps per day (no script, no styles: SVG presentation attributes only, so the console's
content policy needs nothing more)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .render import esc

if TYPE_CHECKING:
    from ..immune.review import TimelinePoint

#: point colour by the first event that names it (graduated, capped, demoted, revoked ...)
COLOURS = (("operator-retired", "#000000"), ("operator-demoted", "#000000"),
           ("revoked", "#7b3fa0"), ("demoted", "#a12727"), ("uncorroborated", "#c07a00"),
           ("capped", "#c07a00"), ("graduated", "#1f7a3a"), ("carried", "#6b7785"))
LEGEND = (("graduated", "#1f7a3a"), ("capped / uncorroborated", "#c07a00"),
          ("demoted", "#a12727"), ("revoked", "#7b3fa0"), ("carried forward", "#6b7785"),
          ("by the operator's hand", "#000000"), ("held / new", "#1f5f99"))


def colour(events: Sequence[str]) -> str:
    for name, c in COLOURS:
        if name in events:
            return c
    return "#1f5f99"


def level_chart(points: Sequence[TimelinePoint], *, width: int = 520, height: int = 120) -> str:
    """``points``: TimelinePoints (wrap_id, at, level, events), oldest first."""
    if not points:
        return '<p class="muted">no recorded wraps</p>'
    top = max(2, max(int(p.level) for p in points))
    left, right, up, down = 34, 12, 10, 22
    inner_w, inner_h = width - left - right, height - up - down
    step = inner_w / max(1, len(points) - 1)

    def x(i: int) -> float:
        return left + (i * step if len(points) > 1 else inner_w / 2)

    def y(level: int) -> float:
        return up + inner_h - (level / top) * inner_h

    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for lvl in range(0, top + 1):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(lvl):.1f}" '
                     f'y2="{y(lvl):.1f}" stroke="#e3e7eb" stroke-width="1"/>')
        parts.append(f'<text x="{left - 6}" y="{y(lvl) + 4:.1f}" font-size="10" '
                     f'text-anchor="end" fill="#5b6570">{lvl}x</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{x(i):.1f},{y(int(p.level)):.1f}"
                    for i, p in enumerate(points))
    parts.append(f'<path d="{path}" fill="none" stroke="#1f5f99" stroke-width="2"/>')
    for i, p in enumerate(points):
        where = f"wrap {p.wrap_id}" if p.wrap_id is not None else "hand edit"
        label = f"{where} · {str(p.at)[:10]}: {p.level}x ({', '.join(p.events)})"
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(int(p.level)):.1f}" r="5" '
                     f'fill="{colour(p.events)}"><title>{esc(label)}</title></circle>')
        tick = str(p.wrap_id) if p.wrap_id is not None else "op"
        parts.append(f'<text x="{x(i):.1f}" y="{height - 6}" font-size="10" '
                     f'text-anchor="middle" fill="#5b6570">{esc(tick)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def legend() -> str:
    items = "".join(f'<span class="small legend-item">'
                    f'<svg width="10" height="10"><circle cx="5" cy="5" r="5" fill="{c}"/></svg> '
                    f"{esc(name)}</span>" for name, c in LEGEND)
    return f"<p>{items}</p>"


def activity_chart(days: Sequence[tuple[str, int, int]], *, width: int = 520,
                   height: int = 110) -> str:
    """``days``: (YYYY-MM-DD, episodes, wraps), oldest first: a bar per day with episodes,
    a dot above it per day with a saved wrap."""
    if not days:
        return '<p class="muted">no episodes or wraps in this period</p>'
    top = max(1, max(e for _d, e, _w in days))
    left, right, up, down = 34, 12, 14, 22
    inner_w, inner_h = width - left - right, height - up - down
    slot = inner_w / len(days)
    bar = max(1.0, slot * 0.7)
    parts = [f'<svg class="chart" id="activity" xmlns="http://www.w3.org/2000/svg" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
             f'<text x="{left - 6}" y="{up + 4}" font-size="10" text-anchor="end" '
             f'fill="#5b6570">{top}</text>',
             f'<line x1="{left}" x2="{width - right}" y1="{up + inner_h}" y2="{up + inner_h}" '
             'stroke="#e3e7eb" stroke-width="1"/>']
    for i, (day, eps, wraps) in enumerate(days):
        x = left + i * slot + (slot - bar) / 2
        h = inner_h * eps / top
        label = f"{day}: {eps} episode(s), {wraps} wrap(s)"
        parts.append(f'<rect x="{x:.1f}" y="{up + inner_h - h:.1f}" width="{bar:.1f}" '
                     f'height="{h:.1f}" fill="#1f5f99"><title>{esc(label)}</title></rect>')
        if wraps:
            parts.append(f'<circle cx="{x + bar / 2:.1f}" cy="{up - 6:.1f}" r="4" '
                         f'fill="#1f7a3a"><title>{esc(label)}</title></circle>')
    for i in (0, len(days) - 1):
        parts.append(f'<text x="{left + i * slot + slot / 2:.1f}" y="{height - 6}" '
                     f'font-size="10" text-anchor="middle" fill="#5b6570">'
                     f"{esc(days[i][0][5:])}</text>")
    parts.append("</svg>")
    return "".join(parts)
