"""``outboxctl notifications``: the catalogue's consent and reads, as the database operator
(outboxctl's own login, a member of outbox_owner), wired from settings (SPEC §19)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import attrs

from adapters.postgres.notification_store import PostgresConsent, PostgresNotificationReader
from application.notifications.change_consent import ChangeConsent
from application.notifications.ports import NotificationReader
from domain.notifications.catalogue import CATALOGUE
from entrypoints.bootstrap.database import DatabaseAccess, database_pool
from entrypoints.settings.tree import Settings


@attrs.frozen(kw_only=True)
class NotificationsAdmin:
    """Consent changes and an intent's snapshots."""

    consent: ChangeConsent
    reader: NotificationReader


@contextlib.asynccontextmanager
async def notifications_admin(settings: Settings) -> AsyncIterator[NotificationsAdmin]:
    """The database operator's notifications services; the pool closes on exit."""
    async with database_pool(settings, DatabaseAccess.OPERATOR) as pool:
        yield NotificationsAdmin(
            consent=ChangeConsent(catalogue=CATALOGUE, store=PostgresConsent(pool)),
            reader=PostgresNotificationReader(pool),
        )
