"""The consumer store under test with the database operator's and the worker's side of it.

``MemoryConsumerHarness`` drives the fake; ``PostgresConsumerHarness`` the real adapter, on a
pool acting as a role mapped to the shop module and a superuser connection that registers,
publishes and reads. Both keep a handler's effects: an effect is written through the
handler's transaction handle and read back once committed, with the transaction that
committed it (PostgreSQL's ``txid_current()``, the fake's commit number).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Protocol
from uuid import UUID

import psycopg

from outbox.adapters.postgres.consumer_store import PostgresConsumerStore
from outbox.adapters.system.clock import SystemClock
from outbox.application.events.consumer_ports import ConsumerStore, DeliveredEvent
from outbox.application.ports import Clock
from tests.consumer_rows import publish
from tests.fakes.consumer_store import FakeConsumerStore

CONSUMER = "shop.fulfilment"
EVENT_TYPE = "sales.order_placed"


class ConsumerHarness(Protocol):
    """What a contract test needs around the store."""

    store: ConsumerStore
    clock: Clock
    short_lease: timedelta

    async def register(self, *, max_attempts: int = 5, ordered: bool = True) -> None: ...
    async def subscribe(self, event_type: str, low: int, high: int) -> None: ...
    async def publish(
        self, organization_id: UUID, *, version: int = 1, aggregate: tuple[str, str] = ...
    ) -> UUID: ...
    async def set_active(self, active: bool) -> None: ...
    async def replay(self, from_sequence: int) -> int: ...
    async def after_lease(self) -> None: ...
    async def cut_lease(self, delivery_id: UUID) -> None: ...
    async def write_effect(self, handle: Any, event: DeliveredEvent) -> None: ...
    async def effects(self) -> list[tuple[UUID, int]]: ...
    async def effect_transactions(self) -> dict[UUID, int]: ...
    async def states(self) -> list[str]: ...


class MemoryConsumerHarness:
    """The fake, its clock moved by hand."""

    short_lease = timedelta(seconds=30)

    def __init__(self) -> None:
        self.fake = FakeConsumerStore()
        self.store: ConsumerStore = self.fake
        self.clock: Clock = self.fake.clock

    async def register(self, *, max_attempts: int = 5, ordered: bool = True) -> None:
        self.fake.register(CONSUMER, "shop", max_attempts=max_attempts, ordered=ordered)

    async def subscribe(self, event_type: str, low: int, high: int) -> None:
        self.fake.subscribe(CONSUMER, event_type, low, high)

    async def publish(
        self, organization_id: UUID, *, version: int = 1, aggregate: tuple[str, str] = ("o", "1")
    ) -> UUID:
        event = self.fake.publish(
            organization_id=organization_id,
            event_type=EVENT_TYPE,
            version=version,
            aggregate=aggregate,
        )
        return event.id

    async def set_active(self, active: bool) -> None:
        self.fake.set_active(CONSUMER, active)

    async def replay(self, from_sequence: int) -> int:
        return self.fake.replay(CONSUMER, from_sequence=from_sequence)

    async def after_lease(self) -> None:
        self.fake.clock.advance(self.short_lease + timedelta(seconds=1))

    async def cut_lease(self, delivery_id: UUID) -> None:
        [delivery] = [d for d in self.fake.deliveries if d.id == delivery_id]
        delivery.lease_expires_at = self.fake.clock.now()

    async def write_effect(self, handle: Any, event: DeliveredEvent) -> None:
        handle.append((event.event_id, event.replay_round))

    async def effects(self) -> list[tuple[UUID, int]]:
        return sorted(self.fake.effects)

    async def effect_transactions(self) -> dict[UUID, int]:
        effects = zip(self.fake.effects, self.fake.effect_commits, strict=True)
        return {event_id: commit for (event_id, _), commit in effects}

    async def states(self) -> list[str]:
        return [d.state for d in sorted(self.fake.deliveries, key=lambda d: d.sequence)]


class PostgresConsumerHarness:
    """The adapter on a pool acting as ``role``; ``owner`` is a superuser connection."""

    short_lease = timedelta(seconds=0.3)

    def __init__(self, *, pool: Any, owner: psycopg.AsyncConnection, role: str) -> None:
        self.store: ConsumerStore = PostgresConsumerStore(pool)
        self.clock: Clock = SystemClock()
        self.owner = owner
        self.role = role

    async def prepare(self) -> None:
        """The effects table the handlers write, readable and writable by the role only; each
        row keeps the transaction that wrote it (top level: a savepoint's rows say the same)."""
        await self.owner.execute(
            "CREATE TABLE public.consumer_effects (event_id uuid NOT NULL,"
            " replay_round integer NOT NULL, PRIMARY KEY (event_id, replay_round),"
            " txid bigint NOT NULL DEFAULT txid_current())"
        )
        await self.owner.execute(f"GRANT INSERT, SELECT ON public.consumer_effects TO {self.role}")

    async def register(self, *, max_attempts: int = 5, ordered: bool = True) -> None:
        await self.owner.execute(
            "SELECT events.register_consumer(%s, 'shop', %s, %s)",
            (CONSUMER, max_attempts, ordered),
        )

    async def subscribe(self, event_type: str, low: int, high: int) -> None:
        await self.owner.execute(
            "SELECT events.subscribe(%s, %s, %s, %s)", (CONSUMER, event_type, low, high)
        )

    async def publish(
        self, organization_id: UUID, *, version: int = 1, aggregate: tuple[str, str] = ("o", "1")
    ) -> UUID:
        published = await publish(
            self.owner,
            organization_id=organization_id,
            event_type=EVENT_TYPE,
            version=version,
            aggregate=aggregate,
        )
        return published.event_id

    async def set_active(self, active: bool) -> None:
        await self.owner.execute("SELECT events.set_consumer_active(%s, %s)", (CONSUMER, active))

    async def replay(self, from_sequence: int) -> int:
        cursor = await self.owner.execute(
            "SELECT events.replay_consumer(%s, %s)", (CONSUMER, from_sequence)
        )
        row = await cursor.fetchone()
        assert row is not None
        return int(row[0])

    async def after_lease(self) -> None:
        await asyncio.sleep(self.short_lease.total_seconds() + 0.1)

    async def cut_lease(self, delivery_id: UUID) -> None:
        await self.owner.execute(
            "UPDATE events.consumer_deliveries SET lease_expires_at = statement_timestamp()"
            " WHERE id = %s",
            (delivery_id,),
        )

    async def write_effect(self, handle: Any, event: DeliveredEvent) -> None:
        await handle.execute(
            "INSERT INTO public.consumer_effects (event_id, replay_round) VALUES (%s, %s)",
            (event.event_id, event.replay_round),
        )

    async def effects(self) -> list[tuple[UUID, int]]:
        cursor = await self.owner.execute("SELECT event_id, replay_round FROM consumer_effects")
        return sorted(await cursor.fetchall())

    async def effect_transactions(self) -> dict[UUID, int]:
        cursor = await self.owner.execute("SELECT event_id, txid FROM consumer_effects")
        return dict(await cursor.fetchall())

    async def states(self) -> list[str]:
        cursor = await self.owner.execute(
            "SELECT state FROM events.consumer_deliveries ORDER BY delivery_sequence"
        )
        return [state for (state,) in await cursor.fetchall()]
