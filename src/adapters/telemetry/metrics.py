"""The metric catalogue: every name the application may report, as Prometheus metrics.

The telemetry name *is* the Prometheus name. What ``count`` and ``observe`` mean per kind:

- counter: ``count`` adds (``observe`` is refused);
- histogram: ``observe`` records one value (``count`` is refused);
- gauge: ``observe`` sets the current value, ``count`` adds (may be negative).

Labels are fixed per metric: a missing label is reported as ``""`` and an unknown one is
dropped, so a careless caller can neither crash the process nor explode cardinality
(nor leak a destination into a label).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000)


class Kind(enum.Enum):
    """How a metric accumulates."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@attrs.frozen
class MetricSpec:
    """One metric: its name, kind, help text, label names and (histograms) buckets."""

    name: str
    kind: Kind
    documentation: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = SECONDS


CATALOGUE: tuple[MetricSpec, ...] = (
    MetricSpec(
        "outbox_attempts_total",
        Kind.COUNTER,
        "Delivery attempts recorded, by provider, outcome and failure class.",
        ("provider", "outcome", "failure_class"),
    ),
    MetricSpec(
        "outbox_send_seconds",
        Kind.HISTOGRAM,
        "Time a provider took to accept or refuse one message.",
        ("provider",),
    ),
    MetricSpec(
        "outbox_claim_batch_size",
        Kind.HISTOGRAM,
        "Messages per claimed batch (empty claims are not observed).",
        buckets=BATCH,
    ),
    MetricSpec("outbox_claim_seconds", Kind.HISTOGRAM, "Time one claim took."),
    MetricSpec("outbox_record_seconds", Kind.HISTOGRAM, "Time recording one batch took."),
    MetricSpec(
        "outbox_sweep_rows_total",
        Kind.COUNTER,
        "Rows dead-lettered by the expiry sweep or deleted by the retention sweep.",
        ("sweep",),
    ),
    MetricSpec("outbox_messages", Kind.GAUGE, "Messages by state, as last observed.", ("state",)),
    MetricSpec(
        "outbox_oldest_due_age_seconds",
        Kind.GAUGE,
        "Age of the oldest due pending message, as last observed.",
    ),
    MetricSpec(
        "outbox_provider_paused",
        Kind.GAUGE,
        "1 while a provider is paused by its circuit breaker, else 0.",
        ("provider",),
    ),
    MetricSpec(
        "outbox_tenant_events",
        Kind.GAUGE,
        "Live tenant event records by state, for the ten organizations with the largest backlog"
        " and one 'other' series summing the rest, as last observed.",
        ("organization", "state"),
    ),
    MetricSpec(
        "outbox_tenant_events_oldest_due_age_seconds",
        Kind.GAUGE,
        "Age of the oldest due pending tenant event that no dead letter parks, per organization"
        " ('other': the oldest of the rest), as last observed.",
        ("organization",),
    ),
    MetricSpec(
        "outbox_tenant_events_dead_letters",
        Kind.GAUGE,
        "Unresolved tenant event dead letters per organization, as last observed.",
        ("organization",),
    ),
    MetricSpec(
        "outbox_tenant_events_parked_aggregates",
        Kind.GAUGE,
        "Aggregates an unresolved dead letter parks, per organization, as last observed.",
        ("organization",),
    ),
    MetricSpec(
        "outbox_db_horizon_age_seconds",
        Kind.GAUGE,
        "How long the oldest transaction this login can see (all of them with pg_monitor) has"
        " held the xmin horizon back, as last observed; 0 when none.",
        (),
    ),
    MetricSpec(
        "outbox_db_autovacuum",
        Kind.GAUGE,
        "Whether autovacuum is on (1) or off (0), as last observed.",
        (),
    ),
    MetricSpec(
        "outbox_db_table_live_rows",
        Kind.GAUGE,
        "Live rows of a hot table (the statistics' estimate), as last observed.",
        ("table",),
    ),
    MetricSpec(
        "outbox_db_table_dead_rows",
        Kind.GAUGE,
        "Dead rows of a hot table not yet vacuumed (the statistics' estimate), as last observed.",
        ("table",),
    ),
    MetricSpec(
        "outbox_db_table_size_bytes",
        Kind.GAUGE,
        "Size of a hot table with its indexes and TOAST, as last observed.",
        ("table",),
    ),
    MetricSpec(
        "outbox_lane_due",
        Kind.GAUGE,
        "Items of a lane due now (pending and available), as last observed.",
        ("lane",),
    ),
    MetricSpec(
        "outbox_lane_oldest_due_age_seconds",
        Kind.GAUGE,
        "How long a lane's oldest due item has waited (0 when none), as last observed.",
        ("lane",),
    ),
    MetricSpec(
        "outbox_relay_last_published_age_seconds",
        Kind.GAUGE,
        "How long ago the relay last recorded a publication, as last observed.",
        (),
    ),
    MetricSpec(
        "outbox_db_replication_slot_retained_bytes",
        Kind.GAUGE,
        "WAL a replication slot keeps from being removed, as last observed.",
        ("slot",),
    ),
    MetricSpec(
        "outbox_doctor_findings",
        Kind.GAUGE,
        "What outboxctl doctor would report, counted by check and severity, as last observed.",
        ("check", "severity"),
    ),
    MetricSpec(
        "outbox_consumer_events_behind",
        Kind.GAUGE,
        "Deliveries of a consumer neither completed nor dead-lettered, as last observed.",
        ("consumer",),
    ),
    MetricSpec(
        "outbox_consumer_oldest_undelivered_age_seconds",
        Kind.GAUGE,
        "Age of a consumer's oldest delivery not yet completed (0 when none), as last observed.",
        ("consumer",),
    ),
    MetricSpec(
        "outbox_consumer_dead_letters",
        Kind.GAUGE,
        "Dead-lettered deliveries of a consumer, as last observed.",
        ("consumer",),
    ),
    MetricSpec(
        "outbox_consumer_deliveries_total",
        Kind.COUNTER,
        "Deliveries a consumer process ended, by consumer and outcome (completed, retried,"
        " dead_lettered).",
        ("consumer", "outcome"),
    ),
    MetricSpec(
        "outbox_relay_lag_seconds",
        Kind.HISTOGRAM,
        "The relay's lag: from an event's append to its PubAck, per event the broker accepted.",
        ("target",),
        buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0),
    ),
    MetricSpec(
        "outbox_inbox_events_total",
        Kind.COUNTER,
        "Events an inbox consumer read from JetStream, by consumer and outcome (handled,"
        " duplicates, retried, dead_lettered).",
        ("consumer", "outcome"),
    ),
    MetricSpec("outbox_in_flight", Kind.GAUGE, "Messages this process is sending right now."),
    MetricSpec(
        "outbox_event_publications_total",
        Kind.COUNTER,
        "Tenant events recorded by the worker's events lane, by outcome (lease_lost included).",
        ("outcome",),
    ),
    MetricSpec(
        "outbox_event_publish_seconds",
        Kind.HISTOGRAM,
        "Time a publication target took to answer one call (a slice of a batch).",
        ("target",),
    ),
    MetricSpec(
        "outbox_relay_target_suspended",
        Kind.GAUGE,
        "1 while a publication target (the broker) is unreachable and the events lane waits"
        " for it without spending attempts; 0 once it answers again.",
        ("target",),
    ),
    MetricSpec("outbox_event_claim_seconds", Kind.HISTOGRAM, "Time one events claim took."),
    MetricSpec(
        "outbox_event_claim_batch_size",
        Kind.HISTOGRAM,
        "Tenant events per claimed batch (empty claims are not observed).",
        buckets=BATCH,
    ),
    MetricSpec(
        "outbox_log_events_total",
        Kind.COUNTER,
        "Log lines written, by event name and level (alert on security.* and errors).",
        ("event", "level"),
    ),
    # Delivery receipts: counted by the webhook listener, gauged on scrape.
    MetricSpec(
        "outbox_receipts_total",
        Kind.COUNTER,
        "Provider receipts believed, by provider, event and result (matched, unmatched,"
        " duplicate).",
        ("provider", "event", "result"),
    ),
    MetricSpec(
        "outbox_receipts_rejected_total",
        Kind.COUNTER,
        "Webhook requests refused (signature, credential, topic, age, body), by provider and"
        " reason.",
        ("provider", "reason"),
    ),
    MetricSpec(
        "outbox_delivery_states",
        Kind.GAUGE,
        "Published messages per delivery state (accepted, delivered, failed, bounced,"
        " complained), as last observed.",
        ("state",),
    ),
)

Metric = Counter | Gauge | Histogram


@attrs.frozen
class Registered:
    """A catalogue entry bound to its live Prometheus metric."""

    spec: MetricSpec
    metric: Metric
    label_set: frozenset[str]


def register(
    registry: CollectorRegistry, catalogue: Iterable[MetricSpec] = CATALOGUE
) -> Mapping[str, Registered]:
    """Create every metric of ``catalogue`` in ``registry``; return them by telemetry name."""
    return {spec.name: _register(registry, spec) for spec in catalogue}


def _register(registry: CollectorRegistry, spec: MetricSpec) -> Registered:
    metric: Metric
    if spec.kind is Kind.COUNTER:
        metric = Counter(spec.name, spec.documentation, spec.labels, registry=registry)
    elif spec.kind is Kind.GAUGE:
        metric = Gauge(spec.name, spec.documentation, spec.labels, registry=registry)
    else:
        metric = Histogram(
            spec.name, spec.documentation, spec.labels, registry=registry, buckets=spec.buckets
        )
    return Registered(spec=spec, metric=metric, label_set=frozenset(spec.labels))
