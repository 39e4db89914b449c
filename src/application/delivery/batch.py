"""The steps every lane's batch shares: a batch is claimed under a lease, each item runs
before the batch's deadline (the lease less a tenth kept for recording), and the outcomes
are recorded in one round trip, a retry by the retry schedule and a dead letter at its cap.

The security outbox (``DispatchDueMessages``) and the tenant events (``PublishDueEvents``)
differ in what running an item means (render and send; offer to every target); the
deadline, the record and the tally of what the batch did are these, once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

import attrs

from outbox.application.ports import Telemetry
from outbox.domain.delivery.outcomes import (
    DeadLetter,
    Outcome,
    Published,
    RecordResult,
    Release,
    Retry,
)

# Of every lease, the share kept free at its end for recording the batch's outcomes.
RECORD_SHARE = 0.1
# The database refuses a retry time that is not in the future. One whose moment passed while
# the rest of its batch was still running (a slow provider or broker) is recorded this far
# ahead instead, so one late retry cannot cost the whole batch its record.
LATE_RETRY_DELAY = timedelta(seconds=1)
# A published item is the normal case: one debug line each, and the batch's info line counts
# them. At info, one JSON line per message cost about 40 us of the worker's CPU per message,
# a third of the whole dispatch (docs/benchmarks.md).
LEVELS = {
    "published": "debug",
    "retried": "info",
    "released": "info",
    "dead_lettered": "warning",
}

_Record = TypeVar("_Record")


@attrs.frozen(kw_only=True)
class BatchTally:
    """What one batch did: how many items were claimed and how each claimed one ended."""

    claimed: int = 0
    published: int = 0
    retried: int = 0
    released: int = 0
    dead_lettered: int = 0
    lease_lost: int = 0  # recorded too late, or not run because the lease ran out first
    unrecorded: int = 0  # recording failed; lease expiry returns these to the queue


@attrs.frozen(kw_only=True)
class BatchLog:
    """The names a lane's batch is logged under."""

    done: str  # the batch's info line, with its tally
    record_failed: str  # the record's round trip failed
    unit: str  # what the items are called in that line ("messages", "events")


def run_deadline(now: datetime, lease: timedelta) -> datetime:
    """When a batch claimed after ``now`` under ``lease`` must stop running items.

    The lease starts on the database's clock after this moment, so it outlives this bound.
    """
    return now + lease * (1 - RECORD_SHARE)


def not_in_the_past(outcome: Outcome, now: datetime) -> Outcome:
    """``outcome``, with a retry or release time that has passed moved just ahead of ``now``."""
    match outcome:
        case Retry(available_at=at) | Release(available_at=at) if at <= now:
            return attrs.evolve(outcome, available_at=now + LATE_RETRY_DELAY)
        case _:
            return outcome


def describe(outcome: Outcome) -> tuple[str, str]:
    """The outcome's kind as the tally counts it, and its failure class ("" when published)."""
    match outcome:
        case Published():
            return "published", ""
        case DeadLetter(reason=reason):
            return "dead_lettered", reason.value
        case Release(failure_class=failure_class):
            return "released", failure_class.value
        case _:
            return "retried", outcome.failure_class.value


async def record_batch(
    records: Sequence[_Record],
    *,
    claimed: int,
    unstarted: int,
    record: Callable[[Sequence[_Record]], Awaitable[Sequence[RecordResult]]],
    report: Callable[[int, RecordResult], tuple[str, str]],
    telemetry: Telemetry,
    log: BatchLog,
    level: str = "info",
) -> tuple[BatchTally, list[tuple[str, str]]]:
    """Record ``records`` in one round trip and tally the batch; each record's kind and
    failure class.

    ``unstarted`` items were never run (their leases run out); ``report(i, result)`` logs the
    i-th record's result and answers its kind and failure class (as ``describe``; kind
    ``lease_lost`` when the record was refused). A failed round trip is logged and leaves every
    record to lease expiry: nothing else can know what was committed. The batch's line is
    logged at ``level`` (a probe of a target that is down says nothing new: debug).
    """
    if not records:
        skipped = BatchTally(claimed=claimed, lease_lost=unstarted)
        telemetry.event(log.done, **attrs.asdict(skipped))
        return skipped, []
    try:
        results = await record(records)
    except Exception as error:  # noqa: BLE001 - lease expiry is the fallback
        telemetry.event(
            log.record_failed,
            level="error",
            error=type(error).__name__,
            code=str(getattr(error, "code", "") or getattr(error, "sqlstate", "") or ""),
            **{log.unit: len(records)},
        )
        return BatchTally(claimed=claimed, unrecorded=len(records), lease_lost=unstarted), []
    kinds = [report(index, result) for index, result in enumerate(results)]
    tally = Counter(kind for kind, _ in kinds)
    totals = BatchTally(
        claimed=claimed,
        published=tally["published"],
        retried=tally["retried"],
        released=tally["released"],
        dead_lettered=tally["dead_lettered"],
        lease_lost=tally["lease_lost"] + unstarted,
    )
    telemetry.event(log.done, level=level, **attrs.asdict(totals))
    return totals, kinds
