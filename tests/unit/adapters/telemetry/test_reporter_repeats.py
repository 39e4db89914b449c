"""Repeated calls, as the worker makes them per message, land on the right metric every time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from prometheus_client import CollectorRegistry

from outbox.adapters.telemetry.reporter import StructlogPrometheusTelemetry

SENT = "outbox_send_seconds_count"


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    with structlog.testing.capture_logs() as captured:
        yield captured


def test_alternating_label_sets_accumulate_separately() -> None:
    registry = CollectorRegistry()
    telemetry = StructlogPrometheusTelemetry(registry)
    for _ in range(3):
        telemetry.observe("outbox_send_seconds", 0.01, provider="ses")
        telemetry.observe("outbox_send_seconds", 0.02, provider="brevo")
        telemetry.count("outbox_attempts_total", provider="ses", outcome="published")
    assert 3 == registry.get_sample_value(SENT, {"provider": "ses"})
    assert 3 == registry.get_sample_value(SENT, {"provider": "brevo"})
    assert 3 == registry.get_sample_value(
        "outbox_attempts_total", {"provider": "ses", "outcome": "published", "failure_class": ""}
    )


def test_repeated_events_are_each_counted_by_name_and_level() -> None:
    registry = CollectorRegistry()
    telemetry = StructlogPrometheusTelemetry(registry)
    for _ in range(4):
        telemetry.event("message.published", level="debug")
        telemetry.event("message.published")
    assert 4 == registry.get_sample_value(
        "outbox_log_events_total", {"event": "message.published", "level": "debug"}
    )
    assert 4 == registry.get_sample_value(
        "outbox_log_events_total", {"event": "message.published", "level": "info"}
    )


def test_a_repeated_misuse_is_ignored_every_time_and_reported_once(
    logs: list[dict[str, Any]],
) -> None:
    registry = CollectorRegistry()
    telemetry = StructlogPrometheusTelemetry(registry)
    for _ in range(3):
        telemetry.count("outbox_send_seconds", provider="ses")
        telemetry.event("Not An Event Name")
    assert registry.get_sample_value(SENT, {"provider": "ses"}) is None
    assert 3 == registry.get_sample_value(
        "outbox_log_events_total", {"event": "invalid", "level": "info"}
    )
    warnings = [line["event"] for line in logs if line["event"].startswith("telemetry.")]
    assert ["telemetry.metric_misused", "telemetry.invalid_event_name"] == warnings
