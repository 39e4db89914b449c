"""Appends tenant events the producer's way: ``append_domain_event`` on the producer's own
connection, in its own transaction, acting as a module's producer role.

An event is *acknowledged* once its transaction's commit returned: only those must be
published. Several producers append at once, for several organizations and aggregates,
sometimes two or three events of one aggregate in one transaction, and now and then replay
an idempotency key (same content: the first event's id, no second event).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import attrs
import psycopg

from outbox.adapters.postgres.event_appender import append_domain_event

MODULE = "shop"
EVENT_TYPE = "shop.order_changed"
AGGREGATE_TYPE = "order"
PRODUCER_ROLE = "outbox_producer"
APPLICATION_NAME = "reliability-event-producer"
SETUP = """
SET ROLE outbox_owner;
SELECT events.register_module('shop');
SELECT events.register_event_type('shop.order_changed', 'shop', 'An order changed');
SELECT events.publish_contract_version('shop.order_changed', 1);
SELECT events.map_producer_role('outbox_producer', 'shop');
RESET ROLE;
"""
OCCURRED_AT = datetime(2026, 1, 1, tzinfo=UTC)

Aggregate = tuple[UUID, str, str]  # organization, aggregate type, aggregate id


@attrs.frozen(kw_only=True)
class Appended:
    """An event whose append committed (or was tried)."""

    id: UUID | None  # None when the commit did not return
    aggregate: Aggregate
    key: str
    payload: Mapping[str, Any]


@attrs.define
class EventProducer:
    """Appends events to ``url``'s database as the ``shop`` module's producer role."""

    url: str
    acknowledged: list[Appended] = attrs.field(factory=list)
    unknown: list[Appended] = attrs.field(factory=list)
    replays: int = 0
    _counter: int = 0

    def setup(self) -> None:
        """Register the module and its event type; map the producer role (superuser)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(SETUP.encode())

    @staticmethod
    def aggregates(organizations: int, per_organization: int) -> list[Aggregate]:
        """``organizations`` x ``per_organization`` aggregates with fresh ids."""
        return [
            (org, AGGREGATE_TYPE, f"order-{index}")
            for org in (uuid.uuid4() for _ in range(organizations))
            for index in range(per_organization)
        ]

    async def append(
        self,
        count: int,
        aggregates: Sequence[Aggregate],
        *,
        producers: int = 4,
        pause: float = 0.0,
        payload: Mapping[str, Any] | None = None,
    ) -> None:
        """Append ``count`` events over ``aggregates`` from ``producers`` connections at once,
        each waiting up to ``pause`` seconds between transactions."""
        remaining = [count]
        await asyncio.gather(
            *(
                self._produce(remaining, aggregates, pause, payload, random.Random())
                for _ in range(producers)
            )
        )

    async def append_to(
        self, aggregate: Aggregate, payloads: Sequence[Mapping[str, Any]]
    ) -> list[Appended]:
        """Append one event per payload to ``aggregate``, each in its own transaction, in order."""
        conn = await self._connect()
        try:
            return [await self._commit(conn, aggregate, [body]) for body in payloads]
        finally:
            await conn.close()

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        conn = await psycopg.AsyncConnection.connect(self.url, application_name=APPLICATION_NAME)
        await conn.execute(f"SET ROLE {PRODUCER_ROLE}")
        await conn.commit()
        return conn

    async def _produce(
        self,
        remaining: list[int],
        aggregates: Sequence[Aggregate],
        pause: float,
        payload: Mapping[str, Any] | None,
        rng: random.Random,
    ) -> None:
        conn = await self._connect()
        try:
            while remaining[0] > 0:
                size = min(remaining[0], rng.choice((1, 1, 1, 2, 3)))
                remaining[0] -= size
                aggregate = rng.choice(aggregates)
                await self._commit(conn, aggregate, [payload or {}] * size)
                if self.acknowledged and rng.random() < 0.02:
                    await self._replay(conn, self.acknowledged[-1])
                if pause:
                    await asyncio.sleep(rng.uniform(0, pause))
        finally:
            await conn.close()

    async def _commit(
        self,
        conn: psycopg.AsyncConnection[Any],
        aggregate: Aggregate,
        payloads: Sequence[Mapping[str, Any]],
    ) -> Appended:
        pending = []
        for extra in payloads:
            self._counter += 1
            key = f"reliability-{self._counter}"
            pending.append((key, {"n": self._counter, **extra}))
        ids: list[UUID] = []
        try:
            async with conn.transaction():
                for key, body in pending:
                    ids.append(await self._append(conn, aggregate, key, body))
        except psycopg.Error:
            self.unknown += [
                Appended(id=None, aggregate=aggregate, key=k, payload=b) for k, b in pending
            ]
            raise
        appended = [
            Appended(id=event_id, aggregate=aggregate, key=key, payload=body)
            for event_id, (key, body) in zip(ids, pending, strict=True)
        ]
        self.acknowledged += appended
        return appended[-1]

    async def _append(
        self,
        conn: psycopg.AsyncConnection[Any],
        aggregate: Aggregate,
        key: str,
        payload: Mapping[str, Any],
    ) -> UUID:
        organization, aggregate_type, aggregate_id = aggregate
        return await append_domain_event(
            conn,
            organization_id=organization,
            event_type=EVENT_TYPE,
            contract_version=1,
            aggregate_type=aggregate_type,
            aggregate_id=aggregate_id,
            idempotency_key=key,
            payload=payload,
            occurred_at=OCCURRED_AT,
        )

    async def _replay(self, conn: psycopg.AsyncConnection[Any], first: Appended) -> None:
        """Append ``first`` again with its key and content: its id, and nothing new."""
        async with conn.transaction():
            again = await self._append(conn, first.aggregate, first.key, first.payload)
        assert again == first.id, f"a replay of {first.key} returned another event"
        self.replays += 1
