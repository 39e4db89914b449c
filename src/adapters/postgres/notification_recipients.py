"""The identity module's recipient directory for notifications: an account's
verified identifiers (emails first, oldest first) and its preferred locale, read in the
caller's transaction through identity.find_verified_identifiers and identity.preferred_locale
(identity_service only)."""

from __future__ import annotations

from uuid import UUID

from psycopg import AsyncConnection

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.identity_store import PostgresIdentityStore
from outbox.adapters.postgres.notification_store import PostgresNotificationStore
from outbox.domain.channels import Channel
from outbox.domain.notifications.snapshots import Address, Recipient

PREFERRED_LOCALE = "SELECT identity.preferred_locale(%s::uuid)"
SET_PREFERRED_LOCALE = "SELECT identity.set_preferred_locale(%s::uuid, %s::text)"


class PostgresRecipientDirectory:
    """RecipientDirectory over the identity module's tables, on one connection."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn
        self._identity = PostgresIdentityStore(conn)

    async def resolve(self, recipient_id: UUID) -> Recipient | None:
        """The account ``recipient_id`` with its verified identifiers, or None when it has
        none (an account without a verified identifier cannot be told anything)."""
        verified = await self._identity.find_verified_identifiers(recipient_id)
        if not verified:
            return None
        with translated_errors():
            cursor = await self._conn.execute(PREFERRED_LOCALE, (recipient_id,))
            row = await cursor.fetchone()
        return Recipient(
            id=recipient_id,
            addresses=tuple(
                Address(channel=Channel(login.channel), value=login.value) for login in verified
            ),
            preferred_locale=None if row is None else row[0],
        )

    async def set_preferred_locale(self, recipient_id: UUID, locale: str) -> bool:
        """Set the account's preferred locale; False when there is no such account."""
        with translated_errors():
            cursor = await self._conn.execute(SET_PREFERRED_LOCALE, (recipient_id, locale))
            row = await cursor.fetchone()
        return bool(row and row[0])


class PostgresNotificationScope:
    """NotificationScope on one connection: the identity module's directory and the
    snapshots, in the transaction open there (a consumer's delivery)."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.recipients = PostgresRecipientDirectory(conn)
        self.notifications = PostgresNotificationStore(conn)
