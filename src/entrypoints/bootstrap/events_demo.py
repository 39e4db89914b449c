"""``outboxctl events demo``: module ``demo`` appends order events for a few organizations
(development only), so the tenant events outbox has something to publish."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from uuid import UUID

import attrs

from outbox.adapters.postgres.demo_producer import (
    DEMO_EVENT_TYPE,
    DEMO_MODULE,
    DEMO_PRODUCER_ROLE,
    append_as_demo_producer,
    onboard_demo_module,
)
from outbox.domain.events.domain_events import NewDomainEvent
from outbox.entrypoints.bootstrap.database import DatabaseAccess, database_pool
from outbox.entrypoints.settings.tree import Settings

AGGREGATES_PER_ORGANIZATION = 3


@attrs.frozen(kw_only=True)
class DemoReceipt:
    """What the demo appended: per organization, how many events."""

    module: str
    event_type: str
    producer_role: str
    appended: int
    by_organization: dict[UUID, int]


def demo_events(organizations: int, count: int, *, now: datetime) -> list[NewDomainEvent]:
    """``count`` order-placed events over ``organizations`` random organizations, a few
    orders each; the payload is an order number and a total, nothing personal."""
    organization_ids = [uuid.uuid4() for _ in range(organizations)]
    run = uuid.uuid4().hex[:12]  # a fresh run appends new events, a key per event
    events = []
    for n in range(count):
        organization = organization_ids[n % organizations]
        order = (n // organizations) % AGGREGATES_PER_ORGANIZATION
        total_cents = random.randint(100, 99_999)  # noqa: S311 (sample data, not a secret)
        events.append(
            NewDomainEvent(
                organization_id=organization,
                event_type=DEMO_EVENT_TYPE,
                contract_version=1,
                aggregate_type="order",
                aggregate_id=f"demo-{run}-{n % organizations}-{order}",
                idempotency_key=f"demo-{run}-{n}",
                payload={"order_number": n + 1, "total_cents": total_cents},
                occurred_at=now,
            )
        )
    return events


async def run_events_demo(settings: Settings, *, organizations: int, count: int) -> DemoReceipt:
    """Onboard module ``demo`` (idempotent) as the database operator, then append the events
    as its producer role, one transaction each."""
    events = demo_events(organizations, count, now=datetime.now(UTC))
    async with (
        database_pool(settings, DatabaseAccess.OPERATOR) as pool,
        pool.connection() as conn,
    ):
        await onboard_demo_module(conn)
        await append_as_demo_producer(conn, events)
    by_organization: dict[UUID, int] = {}
    for event in events:
        by_organization[event.organization_id] = by_organization.get(event.organization_id, 0) + 1
    return DemoReceipt(
        module=DEMO_MODULE,
        event_type=DEMO_EVENT_TYPE,
        producer_role=DEMO_PRODUCER_ROLE,
        appended=len(events),
        by_organization=by_organization,
    )
