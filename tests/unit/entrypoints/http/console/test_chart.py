"""The overview's charts: real axes (labelled ticks, units), both outboxes, nothing stretched."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from xml.etree import ElementTree as ET
from zoneinfo import ZoneInfo

import pytest

from outbox.application.operator.console_views import ActivityMinute, EventActivityMinute
from outbox.entrypoints.http.console.chart import (
    count_label,
    events_chart,
    security_chart,
    time_ticks,
    value_ticks,
)

SVG = "{http://www.w3.org/2000/svg}"
START = datetime(2026, 3, 1, 9, 6, tzinfo=UTC)  # a minute off the ten-minute marks


def _minutes(count: int = 60) -> list[datetime]:
    return [START + timedelta(minutes=i) for i in range(count)]


def _security() -> list[ActivityMinute]:
    return [
        ActivityMinute(minute=t, created=i % 7, published=i % 5, dead_lettered=int(i == 30))
        for i, t in enumerate(_minutes())
    ]


def _events() -> list[EventActivityMinute]:
    return [
        EventActivityMinute(minute=t, pending=40 + i, published=i % 3, dead_lettered=0)
        for i, t in enumerate(_minutes())
    ]


def _parsed(svg: str) -> ET.Element:
    """The chart as XML: it must be well-formed (our own markup, so nothing untrusted)."""
    return ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))  # noqa: S314


def _texts(root: ET.Element, axis: str, kind: str) -> list[str]:
    group = root.find(f"{SVG}g[@class='axis {axis}']")
    assert group is not None, axis
    return [t.text or "" for t in group.iter(f"{SVG}text") if t.get("class") == kind]


def test_the_time_axis_has_a_labelled_tick_every_ten_minutes_in_utc():
    root = _parsed(security_chart(_security()).svg)

    assert ["09:10", "09:20", "09:30", "09:40", "09:50", "10:00"] == _texts(
        root, "time-axis", "tick"
    )
    assert ["time (UTC)"] == _texts(root, "time-axis", "unit")


def test_the_value_axis_runs_from_zero_to_a_round_top_with_its_unit():
    security = _parsed(security_chart(_security()).svg)
    events = _parsed(events_chart(_events()).svg)

    assert ["0", "2", "4", "6"] == _texts(security, "value-axis", "tick")
    assert ["messages / min"] == _texts(security, "value-axis", "unit")
    assert ["0", "50", "100"] == _texts(events, "value-axis", "tick")
    assert ["events"] == _texts(events, "value-axis", "unit")


def test_each_chart_draws_one_line_per_series_of_its_outbox():
    security = _parsed(security_chart(_security()).svg)
    events = _parsed(events_chart(_events()).svg)

    def lines(root: ET.Element) -> dict[str, int]:
        return {
            line.get("data-series", ""): len((line.get("points") or "").split())
            for line in root.iter(f"{SVG}polyline")
        }

    assert {"created": 60, "published": 60, "dead-lettered": 60} == lines(security)
    assert {"waiting": 60, "published": 60, "dead-lettered": 60} == lines(events)
    assert 1 == len(list(events.iter(f"{SVG}polygon")))  # the waiting level is shaded


def test_the_points_stay_inside_the_axes():
    chart = security_chart(_security())
    root = _parsed(chart.svg)
    [x0, y0, width, height] = [float(v) for v in (root.get("viewBox") or "").split()]
    for line in root.iter(f"{SVG}polyline"):
        for point in (line.get("points") or "").split():
            x, y = (float(v) for v in point.split(","))
            assert x0 <= x <= x0 + width
            assert y0 <= y <= y0 + height


def test_a_chart_has_a_title_and_a_description_it_is_labelled_by():
    chart = events_chart(_events())
    root = _parsed(chart.svg)
    title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")

    assert title is not None
    assert desc is not None
    assert "img" == root.get("role")
    assert f"{title.get('id')} {desc.get('id')}" == root.get("aria-labelledby")
    assert "Tenant events outbox: the last hour" == title.text
    assert "09:06 to 10:05 UTC" in (desc.text or "")
    assert "waiting: 99 now, at most 99" in (desc.text or "")


def test_the_drawing_keeps_its_proportions():
    """Stretching a chart to its card would stretch its labels too."""
    assert "preserveAspectRatio" not in security_chart(_security()).svg


def test_an_empty_hour_still_has_both_axes():
    chart = security_chart([])
    root = _parsed(chart.svg)

    assert ["0", "1", "2", "3", "4"] == _texts(root, "value-axis", "tick")
    assert ["time (UTC)"] == _texts(root, "time-axis", "unit")
    assert 0 == chart.peak


def test_the_security_and_events_charts_have_distinct_ids():
    ids = re.findall(r'id="([^"]+)"', security_chart([]).svg + events_chart([]).svg)

    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    ("peak", "ticks"),
    [
        (0, (0, 1, 2, 3, 4)),
        (5, (0, 2, 4, 6)),
        (10, (0, 5, 10)),
        (17, (0, 5, 10, 15, 20)),
        (101, (0, 50, 100, 150)),
        (56_789, (0, 20_000, 40_000, 60_000)),
    ],
)
def test_value_ticks_are_round_and_reach_the_peak(peak: int, ticks: tuple[int, ...]):
    assert ticks == value_ticks(peak)


@pytest.mark.parametrize(
    ("value", "label"), [(950, "950"), (1_500, "1.5k"), (20_000, "20k"), (3_000_000, "3M")]
)
def test_counts_are_short_on_the_value_axis(value: int, label: str):
    assert label == count_label(value)


def test_time_ticks_are_in_utc_whatever_the_zone_of_the_minutes():
    madrid = [t.astimezone(ZoneInfo("Europe/Madrid")) for t in _minutes()]

    assert (4, "09:10") == time_ticks(madrid)[0]
