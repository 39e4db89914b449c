"""How big each measurement is: the full run, and the smoke run CI uses to keep it working."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class Sizes:
    """Message counts, repetitions and rates of one run."""

    repetitions: int
    drain_messages: int  # messages drained per repetition by pgqueuer, the ceiling and dispatch
    enqueue_transactions: int  # one-message transactions per repetition
    producers: int  # concurrent producer connections for both enqueue figures
    latency_rate: int  # messages per second offered by the paced producer
    latency_seconds: float  # how long the paced producer runs per repetition
    latency_flood: int  # notifications queued before the codes of the flood latency figure
    backlog_small: int  # pending rows in the small-backlog case
    backlog_large: int  # pending rows in the large-backlog case
    backlog_drained: int  # messages drained per repetition in both backlog cases
    consumer_deliveries: int = 5_000  # deliveries completed per repetition, runner and ceiling
    event_organizations: int = 10  # organizations the tenant events are spread over
    event_aggregates: int = 5_000  # aggregates they are spread over (event n: n % aggregates)
    batch_size: int = 100
    concurrency: int = 32  # the worker's in-batch send concurrency


FULL = Sizes(
    repetitions=5,
    drain_messages=10_000,
    enqueue_transactions=5_000,
    producers=4,
    latency_rate=500,
    latency_seconds=10.0,
    latency_flood=50_000,
    backlog_small=10_000,
    backlog_large=1_000_000,
    backlog_drained=10_000,
)

# The smoke run proves every group still runs and reports; it is part of the test suite, so
# it is as small as still exercises each path (a flood is still several batches deep).
SMOKE = Sizes(
    repetitions=2,
    drain_messages=200,
    enqueue_transactions=100,
    producers=2,
    latency_rate=200,
    latency_seconds=0.5,
    latency_flood=1_000,
    backlog_small=200,
    backlog_large=1_000,
    backlog_drained=200,
    consumer_deliveries=100,
    event_organizations=3,
    event_aggregates=60,
)
