"""The telemetry adapter: events to structlog, counters and timings to Prometheus."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from prometheus_client import CollectorRegistry

from outbox.adapters.telemetry.metrics import CATALOGUE, Kind
from outbox.adapters.telemetry.reporter import StructlogPrometheusTelemetry
from outbox.application.ports import Telemetry

ATTEMPT = {"provider": "ses", "outcome": "retried", "failure_class": "THROTTLED"}


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    with structlog.testing.capture_logs() as captured:
        yield captured


@pytest.fixture
def telemetry(registry: CollectorRegistry, logs: list[dict[str, Any]]) -> Telemetry:
    return StructlogPrometheusTelemetry(registry)


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_an_event_is_logged_with_its_level_logger_and_flat_fields(
    telemetry: Telemetry, logs: list[dict[str, Any]]
) -> None:
    telemetry.event("message.published", message_id="m-1", attempt=2, ok=True)

    assert [
        {
            "event": "message.published",
            "log_level": "info",
            "logger": "outbox",
            "message_id": "m-1",
            "attempt": 2,
            "ok": True,
        }
    ] == logs


def test_security_events_go_to_the_security_logger(
    telemetry: Telemetry, logs: list[dict[str, Any]]
) -> None:
    telemetry.event("security.decryption_failed", level="critical", message_id="m-1")
    telemetry.event("securityish.event")

    assert [("outbox.security", "critical"), ("outbox", "info")] == [
        (log["logger"], log["log_level"]) for log in logs
    ]


@pytest.mark.parametrize(
    ("level", "logged"),
    [
        ("debug", "debug"),
        ("info", "info"),
        ("warning", "warning"),
        ("error", "error"),
        ("critical", "critical"),
        ("alert", "critical"),
    ],
)
def test_each_level_logs_at_that_level(
    telemetry: Telemetry, logs: list[dict[str, Any]], level: str, logged: str
) -> None:
    telemetry.event("x.happened", level=level)

    assert [logged] == [log["log_level"] for log in logs]


def test_an_unknown_level_logs_as_a_warning_and_says_so_once(
    telemetry: Telemetry, logs: list[dict[str, Any]]
) -> None:
    telemetry.event("x.happened", level="loud")
    telemetry.event("x.happened", level="loud")

    assert [
        ("telemetry.unknown_level", "warning"),
        ("x.happened", "warning"),
        ("x.happened", "warning"),
    ] == [(log["event"], log["log_level"]) for log in logs]


def test_a_field_named_like_a_structlog_key_is_renamed_not_lost(
    telemetry: Telemetry, logs: list[dict[str, Any]]
) -> None:
    telemetry.event("x.happened", event="inner", logger="theirs", timestamp="t")

    expected = {"event": "x.happened", "event_": "inner", "logger": "outbox", "logger_": "theirs"}
    assert expected.items() <= logs[0].items()
    assert "t" == logs[0]["timestamp_"]


def test_events_are_counted_by_name_and_level(
    telemetry: Telemetry, registry: CollectorRegistry
) -> None:
    telemetry.event("delivery.failed", level="warning")
    telemetry.event("delivery.failed", level="warning")
    telemetry.event("security.decryption_failed", level="critical")

    assert 2 == _sample(
        registry, "outbox_log_events_total", event="delivery.failed", level="warning"
    )
    assert 1 == _sample(
        registry, "outbox_log_events_total", event="security.decryption_failed", level="critical"
    )


def test_a_malformed_event_name_is_counted_as_invalid(
    telemetry: Telemetry, registry: CollectorRegistry, logs: list[dict[str, Any]]
) -> None:
    telemetry.event("Something Happened for alice@example.com")

    assert 1 == _sample(registry, "outbox_log_events_total", event="invalid", level="info")
    assert "telemetry.invalid_event_name" in [log["event"] for log in logs]


def test_a_counter_adds_what_it_is_told(telemetry: Telemetry, registry: CollectorRegistry) -> None:
    telemetry.count("outbox_attempts_total", **ATTEMPT)
    telemetry.count("outbox_attempts_total", 2, **ATTEMPT)
    telemetry.count("outbox_sweep_rows_total", 40, sweep="expiry")

    assert 3 == _sample(registry, "outbox_attempts_total", **ATTEMPT)
    assert 40 == _sample(registry, "outbox_sweep_rows_total", sweep="expiry")
    assert _sample(registry, "outbox_sweep_rows_total", sweep="retention") is None


def test_a_histogram_records_each_observation(
    telemetry: Telemetry, registry: CollectorRegistry
) -> None:
    telemetry.observe("outbox_send_seconds", 0.02, provider="smtp")
    telemetry.observe("outbox_send_seconds", 0.3, provider="smtp")
    telemetry.observe("outbox_claim_batch_size", 100)

    assert 2 == _sample(registry, "outbox_send_seconds_count", provider="smtp")
    assert 0.32 == pytest.approx(_sample(registry, "outbox_send_seconds_sum", provider="smtp"))
    assert 1 == _sample(registry, "outbox_send_seconds_bucket", provider="smtp", le="0.025")
    assert 1 == _sample(registry, "outbox_claim_batch_size_bucket", le="100.0")
    assert 0 == _sample(registry, "outbox_claim_batch_size_bucket", le="50.0")


def test_a_gauge_is_set_by_observe_and_moved_by_count(
    telemetry: Telemetry, registry: CollectorRegistry
) -> None:
    telemetry.observe("outbox_messages", 7, state="pending")
    telemetry.observe("outbox_messages", 5, state="pending")
    telemetry.observe("outbox_oldest_due_age_seconds", 12.5)
    telemetry.count("outbox_in_flight", 3)
    telemetry.count("outbox_in_flight", -1)

    assert 5 == _sample(registry, "outbox_messages", state="pending")
    assert 12.5 == _sample(registry, "outbox_oldest_due_age_seconds")
    assert 2 == _sample(registry, "outbox_in_flight")


def test_a_missing_label_is_empty_and_an_unknown_one_is_dropped(
    telemetry: Telemetry, registry: CollectorRegistry, logs: list[dict[str, Any]]
) -> None:
    telemetry.count("outbox_attempts_total", provider="ses", destination="alice@example.com")

    assert 1 == _sample(
        registry, "outbox_attempts_total", provider="ses", outcome="", failure_class=""
    )
    assert [("telemetry.unknown_label", "destination")] == [
        (log["event"], log["label"]) for log in logs
    ]


def test_an_unknown_metric_is_ignored_and_reported_once(
    telemetry: Telemetry, logs: list[dict[str, Any]]
) -> None:
    telemetry.count("outbox_nonsense_total")
    telemetry.count("outbox_nonsense_total")
    telemetry.observe("outbox_nonsense_seconds", 1.0)

    assert [
        ("telemetry.unknown_metric", "outbox_nonsense_total"),
        ("telemetry.unknown_metric", "outbox_nonsense_seconds"),
    ] == [(log["event"], log["metric"]) for log in logs]


def test_a_metric_used_as_the_wrong_kind_is_left_untouched(
    telemetry: Telemetry, registry: CollectorRegistry, logs: list[dict[str, Any]]
) -> None:
    telemetry.observe("outbox_attempts_total", 5, **ATTEMPT)
    telemetry.count("outbox_send_seconds", provider="ses")

    assert _sample(registry, "outbox_attempts_total", **ATTEMPT) is None
    assert _sample(registry, "outbox_send_seconds_count", provider="ses") is None
    assert ["telemetry.metric_misused"] * 2 == [log["event"] for log in logs]


def test_a_negative_counter_increment_does_not_raise(
    telemetry: Telemetry, registry: CollectorRegistry, logs: list[dict[str, Any]]
) -> None:
    telemetry.count("outbox_sweep_rows_total", -1, sweep="expiry")

    assert 0 == _sample(registry, "outbox_sweep_rows_total", sweep="expiry")
    assert ["telemetry.invalid_value"] == [log["event"] for log in logs]


def test_two_adapters_with_their_own_registries_do_not_collide() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    StructlogPrometheusTelemetry(first).count("outbox_sweep_rows_total", 1, sweep="expiry")
    StructlogPrometheusTelemetry(second)

    assert 1 == _sample(first, "outbox_sweep_rows_total", sweep="expiry")
    assert _sample(second, "outbox_sweep_rows_total", sweep="expiry") is None


def test_every_catalogue_metric_is_registered(registry: CollectorRegistry) -> None:
    """All of them, but an unlabelled gauge only once this process sets it."""
    telemetry = StructlogPrometheusTelemetry(registry)
    unlabelled = {spec.name for spec in CATALOGUE if spec.kind is Kind.GAUGE and not spec.labels}
    before = {metric.name for metric in registry.collect()}
    for name in unlabelled:
        telemetry.observe(name, 1)
    families = {metric.name: metric.type for metric in registry.collect()}

    assert {
        "outbox_oldest_due_age_seconds",
        "outbox_in_flight",
        # The admin listener's health gauges (its /metrics alone sets them).
        "outbox_db_autovacuum",
        "outbox_db_horizon_age_seconds",
        "outbox_relay_last_published_age_seconds",
    } == unlabelled
    assert set() == unlabelled & before
    assert {spec.name.removesuffix("_total"): spec.kind.value for spec in CATALOGUE} == families


def test_a_forgotten_gauge_reports_only_what_is_set_next(
    telemetry: Telemetry, registry: CollectorRegistry
) -> None:
    name = "outbox_tenant_events_dead_letters"
    telemetry.observe(name, 3, organization="org-1")
    telemetry.observe(name, 4, organization="org-2")

    telemetry.forget(name)
    telemetry.observe(name, 5, organization="org-2")

    assert _sample(registry, name, organization="org-1") is None
    assert 5 == _sample(registry, name, organization="org-2")


def test_forgetting_a_counter_is_refused_and_said_once(
    telemetry: Telemetry, registry: CollectorRegistry, logs: list[dict[str, Any]]
) -> None:
    telemetry.count("outbox_sweep_rows_total", 2, sweep="retention")

    telemetry.forget("outbox_sweep_rows_total")
    telemetry.forget("outbox_sweep_rows_total")

    assert 2 == _sample(registry, "outbox_sweep_rows_total", sweep="retention")
    assert 1 == len([log for log in logs if log["event"] == "telemetry.metric_misused"])
