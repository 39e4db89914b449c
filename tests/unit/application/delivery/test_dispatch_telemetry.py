"""What a dispatched batch reports: counters once per label set, one info line per batch."""

from __future__ import annotations

from outbox.application.delivery.batch import BatchTally
from outbox.domain.delivery.failures import FailureClass
from tests.unit.application.delivery.test_dispatch_due_messages import Harness

ATTEMPTS = "outbox_attempts_total"


async def test_attempts_are_counted_once_per_label_set_and_batch() -> None:
    h = Harness()
    h.email.fail_next(None, h.email.refuse(FailureClass.REJECTED, "550"), None)
    for _ in range(3):
        await h.enqueue()
    await h.dispatch()
    counts = sorted(
        (labels["outcome"], labels["failure_class"], value)
        for name, value, labels in h.telemetry.counts
        if name == ATTEMPTS
    )
    assert [("dead_lettered", "REJECTED", 1), ("published", "", 2)] == counts


async def test_a_batch_reports_its_tally_in_one_info_event() -> None:
    h = Harness()
    h.email.fail_next(h.email.refuse(FailureClass.THROTTLED, "429"))
    for _ in range(3):
        await h.enqueue()
    result = await h.dispatch()
    assert BatchTally(claimed=3, published=2, retried=1) == result
    [event] = h.telemetry.named("batch.dispatched")
    assert "info" == event.level
    assert {
        "claimed": 3,
        "published": 2,
        "retried": 1,
        "released": 0,
        "dead_lettered": 0,
        "lease_lost": 0,
        "unrecorded": 0,
    } == event.fields


async def test_published_messages_log_at_debug_and_failures_stay_visible() -> None:
    h = Harness()
    h.email.fail_next(None, h.email.refuse(FailureClass.REJECTED, "550"))
    await h.enqueue()
    await h.enqueue()
    await h.dispatch()
    assert ["debug"] == [event.level for event in h.telemetry.named("message.published")]
    assert ["warning"] == [event.level for event in h.telemetry.named("message.dead_lettered")]


async def test_an_empty_claim_reports_no_batch() -> None:
    h = Harness()
    await h.dispatch()
    assert [] == h.telemetry.named("batch.dispatched")
