"""The notifications ports under contract test: the fakes, or PostgreSQL as identity_service
(the identity module's recipient directory, notifications.* through notifications_producer)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

import attrs
import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.notification_recipients import (
    PostgresNotificationScope,
    PostgresRecipientDirectory,
)
from outbox.adapters.postgres.notification_store import PostgresConsent, PostgresNotificationReader
from outbox.adapters.postgres.pool import open_pool
from outbox.application.notifications.ports import (
    ConsentStore,
    NotificationReader,
    NotificationScope,
)
from outbox.domain.channels import Channel
from outbox.domain.notifications.snapshots import Address, Recipient
from tests.fakes.clock import FixedClock
from tests.fakes.notifications import (
    InMemoryConsent,
    InMemoryNotificationReader,
    InMemoryNotificationScope,
    InMemoryNotificationStore,
    InMemoryRecipientDirectory,
    NotificationTables,
)
from tests.fakes.outbox_store import InMemoryOutboxStore

# (purpose, channel, destination, subject_id, template, locale, params, state) of a message.
MessageRow = tuple[str, str, str, UUID | None, str, str, dict[str, Any], str]


class NotificationHarness(Protocol):
    """The ports, and a way to add recipients and to look at the messages."""

    @property
    def consent(self) -> ConsentStore: ...
    @property
    def reader(self) -> NotificationReader: ...

    def scope(self) -> contextlib.AbstractAsyncContextManager[NotificationScope]: ...
    async def add_recipient(
        self, recipient_id: UUID, addresses: Sequence[tuple[Channel, str]], locale: str | None
    ) -> None: ...
    async def message(self, message_id: UUID) -> MessageRow | None: ...


@attrs.define
class MemoryNotificationHarness:
    """The fakes."""

    clock: FixedClock = attrs.field(factory=lambda: FixedClock(datetime.now(UTC)))
    outbox: InMemoryOutboxStore = attrs.field(init=False)
    tables: NotificationTables = attrs.field(init=False)
    directory: InMemoryRecipientDirectory = attrs.field(factory=InMemoryRecipientDirectory)
    consent: InMemoryConsent = attrs.field(init=False)
    reader: InMemoryNotificationReader = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.outbox = InMemoryOutboxStore(clock=self.clock)
        self.tables = NotificationTables(clock=self.clock)
        self.consent = InMemoryConsent(self.tables)
        self.reader = InMemoryNotificationReader(
            tables=self.tables,
            state_of=lambda i: m.state.value if (m := self.outbox.messages.get(i)) else None,
        )

    @contextlib.asynccontextmanager
    async def scope(self) -> AsyncIterator[NotificationScope]:
        yield InMemoryNotificationScope(
            recipients=self.directory,
            notifications=InMemoryNotificationStore(tables=self.tables, writer=self.outbox),
        )

    async def add_recipient(
        self, recipient_id: UUID, addresses: Sequence[tuple[Channel, str]], locale: str | None
    ) -> None:
        self.directory.recipients[recipient_id] = Recipient(
            id=recipient_id,
            addresses=tuple(Address(channel=c, value=v) for c, v in addresses),
            preferred_locale=locale,
        )

    async def message(self, message_id: UUID) -> MessageRow | None:
        m = self.outbox.messages.get(message_id)
        if m is None:
            return None
        return (
            m.purpose.value,
            m.channel.value,
            m.destination,
            m.subject_id,
            m.template,
            m.locale,
            dict(m.params),
            m.state.value,
        )


@attrs.define
class PostgresNotificationHarness:
    """The real adapters on a pool acting as identity_service."""

    pool: AsyncConnectionPool[AsyncConnection]
    database_url: str
    consent: PostgresConsent = attrs.field(init=False)
    reader: PostgresNotificationReader = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.consent = PostgresConsent(self.pool)
        self.reader = PostgresNotificationReader(self.pool)

    @contextlib.asynccontextmanager
    async def scope(self) -> AsyncIterator[NotificationScope]:
        async with self.pool.connection() as conn, conn.transaction():
            yield PostgresNotificationScope(conn)

    async def add_recipient(
        self, recipient_id: UUID, addresses: Sequence[tuple[Channel, str]], locale: str | None
    ) -> None:
        now = datetime.now(UTC)
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT identity.add_identity(%s, %s)", (recipient_id, now))
            for channel, value in addresses:
                await conn.execute(
                    "SELECT identity.save_login_identifier(%s, %s, %s, %s, %s)",
                    (value, channel.value, recipient_id, now, now),
                )
            if locale is not None:
                assert await PostgresRecipientDirectory(conn).set_preferred_locale(
                    recipient_id, locale
                )

    async def message(self, message_id: UUID) -> MessageRow | None:
        async with await psycopg.AsyncConnection.connect(self.database_url) as conn:
            cursor = await conn.execute(
                "SELECT purpose, channel, destination, subject_id, template, locale, params,"
                " state FROM outbox.messages WHERE id = %s",
                (message_id,),
            )
            row: Any = await cursor.fetchone()
        return None if row is None else tuple(row)


async def postgres_notification_harness(
    database_url: str,
) -> AsyncIterator[PostgresNotificationHarness]:
    """The PostgreSQL harness, its pool closed afterwards."""
    pool = await open_pool(database_url, min_size=1, max_size=4, role="identity_service")
    try:
        yield PostgresNotificationHarness(pool=pool, database_url=database_url)
    finally:
        await pool.close()
