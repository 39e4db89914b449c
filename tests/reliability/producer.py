"""Enqueues traffic the producer's way (sealed, as outbox_producer) and remembers every secret.

Each message gets its own destination and a secret no other message has: six-digit codes
for sign-ups, long random tokens for magic links, none for notifications. The ledger
provider is told each WhatsApp secret so it can name the message a text belongs to; the
leak scan looks for every secret and every destination.
"""

from __future__ import annotations

import itertools
import random
import secrets
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

import attrs
import psycopg

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import Keyring, SealKey, key_line
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.adapters.system.ids import Uuid7Ids
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.purposes import Purpose
from tests.reliability.ledger_provider import LedgerProvider

SEAL_KEY = SealKey("reliability", bytes(range(100, 132)))
SEAL_KEY_LINE = key_line(SEAL_KEY)
MAGIC_LINK_BASE = "https://app.test/sign-in"
APPLICATION_NAME = "reliability-producer"  # fault injection spares the producer's sessions


@attrs.frozen(kw_only=True)
class Enqueued:
    """A message the producer committed (or tried to)."""

    id: UUID
    purpose: Purpose
    channel: Channel
    destination: str
    secret: str | None
    expires_at: datetime | None


@attrs.frozen(kw_only=True)
class Kind:
    """One kind of traffic: purpose and channel."""

    purpose: Purpose
    channel: Channel


EMAIL_CODE = Kind(purpose=Purpose.SIGN_UP, channel=Channel.EMAIL)
EMAIL_LINK = Kind(purpose=Purpose.MAGIC_LINK, channel=Channel.EMAIL)
EMAIL_NOTE = Kind(purpose=Purpose.NOTIFICATION, channel=Channel.EMAIL)
WHATSAPP_CODE = Kind(purpose=Purpose.SIGN_UP, channel=Channel.WHATSAPP)
MIXED = (EMAIL_CODE, EMAIL_CODE, EMAIL_LINK, EMAIL_NOTE, WHATSAPP_CODE)


class Producer:
    """Builds sealed messages and commits them in transactions of ``per_transaction``."""

    def __init__(self, url: str, ledger: LedgerProvider) -> None:
        self._url = url
        self._ledger = ledger
        self._sealer = EnvelopeSealer(Keyring((SEAL_KEY,)))
        self._ids = Uuid7Ids()
        self._numbers = itertools.count(1)
        self._codes: Iterator[int] = iter(random.sample(range(100_000, 1_000_000), 200_000))
        self.acknowledged: list[Enqueued] = []  # the commit returned
        self.unknown: list[Enqueued] = []  # the commit failed: may or may not have happened
        self.errors: Counter[str] = Counter()  # why commits failed, by error class

    def build(
        self,
        kind: Kind,
        *,
        lifetime: timedelta | None = timedelta(minutes=10),
        destination: str | None = None,
        subject_id: UUID | None = None,
    ) -> tuple[Message, Enqueued]:
        """One message of ``kind`` and what the checker needs to know about it."""
        number = next(self._numbers)
        message_id = self._ids.new_id()
        now = datetime.now(UTC)
        if destination is None:
            destination = (
                f"+3469{number:07d}" if kind.channel is Channel.WHATSAPP else f"u{number}@rel.test"
            )
        secret: str | None = None
        if kind.purpose is Purpose.MAGIC_LINK:
            secret = secrets.token_urlsafe(24)
        elif kind.purpose.carries_secret:
            secret = str(next(self._codes))
        if secret is not None and kind.channel is Channel.WHATSAPP:
            self._ledger.know_secret(secret, message_id)
        expires_at = now + lifetime if lifetime is not None else None
        message = Message.enqueue(
            id=message_id,
            purpose=kind.purpose,
            channel=kind.channel,
            destination=destination,
            subject_id=None
            if kind.purpose is Purpose.NOTIFICATION
            else (subject_id or self._ids.new_id()),
            template=kind.purpose.value,
            params={"subject": f"Notice {number}", "body": f"Hello, person {number}."}
            if kind.purpose is Purpose.NOTIFICATION
            else {},
            sealed_secret=None
            if secret is None
            else self._sealer.seal(message_id=message_id, purpose=kind.purpose, plaintext=secret),
            expires_at=expires_at if kind.purpose is not Purpose.NOTIFICATION else None,
            now=now,
        )
        return message, Enqueued(
            id=message_id,
            purpose=kind.purpose,
            channel=kind.channel,
            destination=destination,
            secret=secret,
            expires_at=message.expires_at,
        )

    async def enqueue(
        self,
        count: int,
        *,
        kinds: Sequence[Kind] = MIXED,
        per_transaction: int = 100,
        lifetime: timedelta | None = timedelta(minutes=10),
    ) -> list[Enqueued]:
        """Commit ``count`` messages, cycling through ``kinds``; return them."""
        cycle = itertools.cycle(kinds)
        done: list[Enqueued] = []
        while len(done) < count:
            size = min(per_transaction, count - len(done))
            batch = [self.build(next(cycle), lifetime=lifetime) for _ in range(size)]
            await self.commit(batch)
            done.extend(enqueued for _, enqueued in batch)
        return done

    async def commit(self, batch: Sequence[tuple[Message, Enqueued]]) -> bool:
        """Enqueue ``batch`` in one transaction; True when the commit was acknowledged."""
        try:
            async with await psycopg.AsyncConnection.connect(
                self._url, connect_timeout=5, application_name=APPLICATION_NAME
            ) as conn:
                await conn.execute("SET ROLE outbox_producer")
                writer = PostgresOutboxWriter(conn)
                for message, _ in batch:
                    await writer.enqueue(message)
                await conn.commit()
        except Exception as error:
            self.unknown.extend(enqueued for _, enqueued in batch)
            self.errors[type(error).__name__] += 1
            raise
        self.acknowledged.extend(enqueued for _, enqueued in batch)
        return True

    @property
    def needles(self) -> list[str]:
        """Every secret and destination enqueued so far (for the leak scan)."""
        everything = [*self.acknowledged, *self.unknown]
        return [e.secret for e in everything if e.secret] + [e.destination for e in everything]


__all__ = ["MAGIC_LINK_BASE", "SEAL_KEY_LINE", "Enqueued", "Producer"]
