"""``outboxctl notifications``: the catalogue's consent and reads, as the database operator
(outboxctl's own login, a member of outbox_owner), wired from settings."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import attrs

from outbox.adapters.postgres.notification_recipients import PostgresNotificationScope
from outbox.adapters.postgres.notification_store import PostgresConsent, PostgresNotificationReader
from outbox.adapters.system.ids import Uuid7Ids
from outbox.application.notifications.change_consent import ChangeConsent
from outbox.application.notifications.ports import NotificationReader, TakenSnapshot
from outbox.application.notifications.request_notification import RequestNotification
from outbox.domain.notifications.catalogue import CATALOGUE
from outbox.domain.notifications.snapshots import Intent
from outbox.entrypoints.bootstrap.database import DatabaseAccess, database_pool
from outbox.entrypoints.settings.tree import Settings


@attrs.frozen(kw_only=True)
class NotificationsAdmin:
    """Consent changes, an intent's snapshots, and a staff intent in its own transaction."""

    consent: ChangeConsent
    reader: NotificationReader
    request: Callable[[Intent], Awaitable[tuple[TakenSnapshot, ...]]]


@contextlib.asynccontextmanager
async def notifications_admin(settings: Settings) -> AsyncIterator[NotificationsAdmin]:
    """The database operator's notifications services; the pool closes on exit."""
    async with database_pool(settings, DatabaseAccess.OPERATOR) as pool:
        requester = RequestNotification(catalogue=CATALOGUE, ids=Uuid7Ids())

        async def request(intent: Intent) -> tuple[TakenSnapshot, ...]:
            async with pool.connection() as conn, conn.transaction():
                return await requester(PostgresNotificationScope(conn), intent)

        yield NotificationsAdmin(
            consent=ChangeConsent(catalogue=CATALOGUE, store=PostgresConsent(pool)),
            reader=PostgresNotificationReader(pool),
            request=request,
        )
