"""The overview's chart of the last hour: three lines of per-minute counts, as inline SVG.

Only numbers reach the markup, so the SVG is safe to mark as such in the template; colours
are SVG presentation attributes, which a CSP without 'unsafe-inline' allows.
"""

from __future__ import annotations

from collections.abc import Sequence

from outbox.application.operator.console_views import ActivityMinute

WIDTH, HEIGHT, PAD = 600, 140, 6
SERIES = (("created", "#2f5bd3"), ("published", "#1f8a4c"), ("dead_lettered", "#c2362b"))


def peak(minutes: Sequence[ActivityMinute]) -> int:
    """The largest count of any series in any minute."""
    return max((max(m.created, m.published, m.dead_lettered) for m in minutes), default=0)


def activity_svg(minutes: Sequence[ActivityMinute]) -> str:
    """The chart's SVG element: one polyline per series, the y axis scaled to the peak."""
    top = max(peak(minutes), 1)
    step = (WIDTH - 2 * PAD) / max(len(minutes) - 1, 1)
    lines = []
    for field, colour in SERIES:
        scale = (HEIGHT - 2 * PAD) / top
        points = " ".join(
            f"{PAD + i * step:.1f},{HEIGHT - PAD - getattr(m, field) * scale:.1f}"
            for i, m in enumerate(minutes)
        )
        lines.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>'
        )
    grid = "".join(
        f'<line x1="0" x2="{WIDTH}" y1="{y}" y2="{y}" stroke="#e3e6ec" stroke-width="1"/>'
        for y in (PAD, HEIGHT // 2, HEIGHT - PAD)
    )
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none"'
        f' role="img" aria-label="Messages per minute over the last hour">'
        f"{grid}{''.join(lines)}</svg>"
    )
