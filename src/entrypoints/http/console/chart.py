"""The overview's charts of the last hour, one per outbox, as inline SVG with real axes.

Each chart has a time axis (a labelled tick every ten minutes, in UTC) and a value axis
(labelled ticks from zero to a round top, and its unit), a title and a description a screen
reader reads. Only numbers, times and the constant labels here reach the markup, so the SVG
is safe to mark as such in the template; colours and fonts are SVG presentation attributes,
which a CSP without 'unsafe-inline' allows. The drawing keeps its proportions
(``preserveAspectRatio`` left as it is), so the labels never stretch when the card narrows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import attrs

from outbox.application.operator.console_views import ActivityMinute, EventActivityMinute

WIDTH, HEIGHT = 480, 230
LEFT, RIGHT, TOP, BOTTOM = 46, 14, 28, 42  # room for the value labels, unit and time labels
FONT = 'font-family="system-ui, sans-serif" font-size="13"'
INK, MUTED, GRID = "#1d2330", "#5d6678", "#e3e6ec"
TIME_STEP = 10  # minutes between two time ticks
MAX_VALUE_TICKS = 5

CREATED, PUBLISHED, DEAD, WAITING = "#2f5bd3", "#1f8a4c", "#c2362b", "#b86e00"


@attrs.frozen(kw_only=True)
class Series:
    """One line of a chart: its name in the legend, its colour and one value a minute."""

    label: str
    colour: str
    values: tuple[int, ...]
    area: bool = False  # a level (how many waited), shaded under the line


@attrs.frozen(kw_only=True)
class Chart:
    """A chart ready for the page: its SVG, and what the legend beside it names."""

    key: str
    heading: str
    unit: str
    series: tuple[Series, ...]
    svg: str

    @property
    def peak(self) -> int:
        """The largest value of any series in any minute."""
        return max((max(s.values, default=0) for s in self.series), default=0)


def security_chart(minutes: Sequence[ActivityMinute]) -> Chart:
    """The security outbox's messages created, published and dead-lettered per minute."""
    series = (
        Series(label="created", colour=CREATED, values=tuple(m.created for m in minutes)),
        Series(label="published", colour=PUBLISHED, values=tuple(m.published for m in minutes)),
        Series(label="dead-lettered", colour=DEAD, values=tuple(m.dead_lettered for m in minutes)),
    )
    return _chart(
        key="security",
        heading="Security outbox",
        unit="messages / min",
        what="Messages of the security outbox per minute",
        times=[m.minute for m in minutes],
        series=series,
    )


def events_chart(minutes: Sequence[EventActivityMinute]) -> Chart:
    """The tenant events waiting at each minute's end, and published and dead-lettered in it."""
    series = (
        Series(
            label="waiting", colour=WAITING, values=tuple(m.pending for m in minutes), area=True
        ),
        Series(label="published", colour=PUBLISHED, values=tuple(m.published for m in minutes)),
        Series(label="dead-lettered", colour=DEAD, values=tuple(m.dead_lettered for m in minutes)),
    )
    return _chart(
        key="events",
        heading="Tenant events outbox",
        unit="events",
        what=(
            "Tenant events waiting (pending or leased) at the end of each minute,"
            " and published and dead-lettered per minute"
        ),
        times=[m.minute for m in minutes],
        series=series,
    )


def value_ticks(peak: int) -> tuple[int, ...]:
    """Round ticks from zero to the first at or above ``peak`` (1, 2 or 5 times a power of
    ten apart, at most five of them); 0 to 4 for an empty hour."""
    peak = max(peak, MAX_VALUE_TICKS - 1)
    magnitude = 10 ** max(math.floor(math.log10(peak / (MAX_VALUE_TICKS - 1))), 0)
    step = next(
        s * magnitude
        for s in (1, 2, 5, 10)
        if math.ceil(peak / (s * magnitude)) <= MAX_VALUE_TICKS - 1
    )
    return tuple(range(0, step * math.ceil(peak / step) + 1, step))


def count_label(value: int) -> str:
    """A count short enough for the value axis: 950, 1.5k, 20k, 3M."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if value >= size:
            return f"{value / size:.1f}".removesuffix(".0") + suffix
    return str(value)


def time_ticks(times: Sequence[datetime]) -> tuple[tuple[int, str], ...]:
    """The minutes that get a time tick (every ten minutes on the clock): index and HH:MM."""
    return tuple(
        (i, f"{t.astimezone(UTC):%H:%M}")
        for i, t in enumerate(times)
        if t.astimezone(UTC).minute % TIME_STEP == 0
    )


def _chart(
    *,
    key: str,
    heading: str,
    unit: str,
    what: str,
    times: list[datetime],
    series: tuple[Series, ...],
) -> Chart:
    ticks = value_ticks(max((max(s.values, default=0) for s in series), default=0))
    top = ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(times) - 1, 1)

    def x(i: int) -> float:
        return LEFT + i * step

    def y(value: int) -> float:
        return TOP + plot_h - value * plot_h / top

    parts = [_value_axis(ticks, unit, y), _time_axis(times, x)]
    for s in series:
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(s.values))
        if s.area and s.values:
            base = f"{x(len(s.values) - 1):.1f},{y(0):.1f} {x(0):.1f},{y(0):.1f}"
            parts.append(
                f'<polygon points="{points} {base}" fill="{s.colour}" fill-opacity="0.12"'
                ' stroke="none"/>'
            )
        parts.append(
            f'<polyline class="series" data-series="{s.label}" fill="none"'
            f' stroke="{s.colour}" stroke-width="2" stroke-linejoin="round" points="{points}"/>'
        )
    title, desc = f"chart-{key}-title", f"chart-{key}-desc"
    svg = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"'
        f' aria-labelledby="{title} {desc}">'
        f'<title id="{title}">{heading}: the last hour</title>'
        f'<desc id="{desc}">{_describe(what, times, series)}</desc>'
        f"{''.join(parts)}</svg>"
    )
    return Chart(key=key, heading=heading, unit=unit, series=series, svg=svg)


def _line(x1: float, x2: float, y1: float, y2: float, colour: str) -> str:
    return (
        f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" stroke="{colour}"'
        ' stroke-width="1"/>'
    )


def _value_axis(ticks: tuple[int, ...], unit: str, y: Callable[[int], float]) -> str:
    parts = [f'<text class="unit" x="4" y="{TOP - 12}" fill="{INK}">{unit}</text>']
    for value in ticks:
        at = y(value)
        parts.append(_line(LEFT, WIDTH - RIGHT, at, at, GRID))
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{at + 4:.1f}" text-anchor="end">'
            f"{count_label(value)}</text>"
        )
    parts.append(_line(LEFT, LEFT, TOP, HEIGHT - BOTTOM, MUTED))
    return f'<g class="axis value-axis" {FONT} fill="{MUTED}">{"".join(parts)}</g>'


def _time_axis(times: Sequence[datetime], x: Callable[[int], float]) -> str:
    base = HEIGHT - BOTTOM
    parts = [_line(LEFT, WIDTH - RIGHT, base, base, MUTED)]
    for i, label in time_ticks(times):
        at = x(i)
        parts.append(_line(at, at, base, base + 5, MUTED))
        parts.append(
            f'<text class="tick" x="{at:.1f}" y="{base + 18}" text-anchor="middle">{label}</text>'
        )
    parts.append(
        f'<text class="unit" x="{WIDTH - RIGHT}" y="{HEIGHT - 4}" text-anchor="end">'
        "time (UTC)</text>"
    )
    return f'<g class="axis time-axis" {FONT} fill="{MUTED}">{"".join(parts)}</g>'


def _describe(what: str, times: Sequence[datetime], series: tuple[Series, ...]) -> str:
    if not times:
        return f"{what}: no minute to show."
    first, last = (f"{t.astimezone(UTC):%H:%M}" for t in (times[0], times[-1]))
    parts = []
    for s in series:
        if s.area:
            parts.append(f"{s.label}: {s.values[-1]} now, at most {max(s.values)}")
        else:
            parts.append(f"{s.label}: {sum(s.values)} in all, at most {max(s.values)} a minute")
    return f"{what}, {first} to {last} UTC. " + "; ".join(parts) + "."
