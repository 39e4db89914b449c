"""The events retention sweep: final events past their window go, in bounded batches."""

from __future__ import annotations

import uuid
from datetime import timedelta

from outbox.application.delivery.sweeps import retention_sweep
from outbox.application.events.publish_due_events import PublishDueEvents
from outbox.domain.delivery.retry_policy import RetryPolicy
from tests.contract.event_outbox_harness import new_event
from tests.fakes.event_outbox import InMemoryEventOutbox
from tests.fakes.telemetry import RecordingTelemetry


async def test_published_events_past_30_days_are_purged_in_batches_and_live_ones_kept() -> None:
    outbox = InMemoryEventOutbox()
    outbox.register_event_type("sales.order_placed")
    for n in range(5):
        await outbox.append(new_event(uuid.UUID(int=1), f"order-{n}"))
    publish = PublishDueEvents(
        store=outbox,
        targets=(),
        clock=outbox.clock,
        telemetry=RecordingTelemetry(),
        policy=RetryPolicy(),
        owner="worker-1",
    )
    await publish()
    live = await outbox.append(new_event(uuid.UUID(int=1), "order-live"))
    outbox.clock.advance(timedelta(days=30))
    telemetry = RecordingTelemetry()

    purged = await retention_sweep(outbox, telemetry, name="events_retention", batch_size=2)()

    assert 5 == purged
    assert [live] == list(outbox.events)
    assert ("outbox_sweep_rows_total", 5, {"sweep": "events_retention"}) in telemetry.counts
    assert 5 == telemetry.named("sweep.events_retention.finished")[0].fields["purged"]
