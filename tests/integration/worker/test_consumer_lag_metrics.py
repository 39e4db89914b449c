"""The consumers' lag as gauges, read by the worker's role."""

from __future__ import annotations

import uuid

import pytest

from outbox.adapters.postgres.consumer_store import PostgresConsumerLag
from outbox.application.events.observe_consumer_lag import ObserveConsumerLag
from outbox.entrypoints.observability import build_telemetry, new_registry
from tests.consumer_rows import define_type, publish

pytestmark = pytest.mark.integration


async def test_the_worker_role_observes_each_consumer_s_lag(connect_as, worker_pool):
    async with connect_as() as owner:
        await define_type(owner, "sales.order_placed")
        await owner.execute("INSERT INTO events.modules (code) VALUES ('shop')")
        await owner.execute("SELECT events.register_consumer('shop.fulfilment', 'shop')")
        await owner.execute("SELECT events.register_consumer('shop.audit', 'shop')")
        await owner.execute(
            "SELECT events.subscribe('shop.fulfilment', 'sales.order_placed', 1, 1)"
        )
        for n in range(2):
            await publish(
                owner,
                organization_id=uuid.uuid4(),
                event_type="sales.order_placed",
                aggregate=("o", str(n)),
            )
    registry = new_registry(process_metrics=False)
    observe = ObserveConsumerLag(
        source=PostgresConsumerLag(worker_pool), telemetry=build_telemetry(registry)
    )

    # The two here and the two shipped: identity.security_notices, identity.account_notifications.
    assert 4 == await observe()

    def sample(name: str, consumer: str) -> float | None:
        return registry.get_sample_value(name, {"consumer": consumer})

    assert 2 == sample("outbox_consumer_events_behind", "shop.fulfilment")
    assert 0 == sample("outbox_consumer_events_behind", "shop.audit")
    assert 0 == sample("outbox_consumer_dead_letters", "shop.fulfilment")
    assert sample("outbox_consumer_oldest_undelivered_age_seconds", "shop.fulfilment") >= 0
