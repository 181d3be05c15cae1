"""A pattern's level across wraps as a small inline SVG chart (no script, no styles: SVG
presentation attributes only, so the console's content policy needs nothing more)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .render import esc

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


def level_chart(points: Sequence[Any], *, width: int = 520, height: int = 120) -> str:
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
