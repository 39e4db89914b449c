"""Write into the outbox from a service's own transaction: a message, or a tenant event.

Each call runs one statement on the psycopg connection it is given and joins the transaction
open there, so the outbox row commits with the business change or not at all. ``Producer``
takes a ``psycopg.Connection``, ``AsyncProducer`` a ``psycopg.AsyncConnection``; both do the
same. The connection's role needs ``outbox_producer`` for messages and the event's module's
producer role for events (docs/producer.md).

    producer = Producer.from_seal_keys(os.environ["OUTBOX_SEAL_KEYS"])
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute("UPDATE shop.orders SET state = 'paid' WHERE id = %s", (order_id,))
        producer.enqueue(conn, purpose=Purpose.NOTIFICATION, channel=Channel.EMAIL,
                         destination="ada@example.com", template="order_paid",
                         params={"order": str(order_id)})
        producer.append_event(conn, organization_id=org, event_type="sales.order_paid", ...)

Bad input raises before anything is written: ``InvalidMessage``, ``InvalidDestination`` or
``InvalidDomainEvent``. The database's refusals come as ``PermissionDenied``,
``InvalidRequest``, ``DuplicateMessage``, ``IdempotencyConflict``, ``EventTypeRetired``,
``ContractVersionUnpublished`` or ``StoreUnavailable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Required, TypedDict, Unpack
from uuid import UUID

import attrs
from psycopg import AsyncConnection, Connection

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import KeyringError, parse_keyring
from outbox.adapters.postgres.error_translation import translated_errors
from outbox.adapters.postgres.event_appender import APPEND, append_params
from outbox.adapters.postgres.outbox_writer import ENQUEUE, enqueue_params
from outbox.adapters.system.ids import Uuid7Ids
from outbox.application.delivery.errors import DuplicateMessage
from outbox.application.errors import InvalidRequest, PermissionDenied, StoreUnavailable
from outbox.application.events.errors import (
    ContractVersionUnpublished,
    EventTypeRetired,
    IdempotencyConflict,
)
from outbox.application.ports import Sealer
from outbox.domain.channels import Channel
from outbox.domain.delivery.errors import InvalidMessage
from outbox.domain.delivery.messages import Message
from outbox.domain.delivery.priorities import Priority
from outbox.domain.destinations import normalize
from outbox.domain.errors import InvalidDestination
from outbox.domain.events.domain_events import InvalidDomainEvent, NewDomainEvent
from outbox.domain.purposes import Purpose

__all__ = [
    "AsyncProducer",
    "Channel",
    "ContractVersionUnpublished",
    "DuplicateMessage",
    "EventFields",
    "EventTypeRetired",
    "IdempotencyConflict",
    "InvalidDestination",
    "InvalidDomainEvent",
    "InvalidMessage",
    "InvalidRequest",
    "KeyringError",
    "MessageFields",
    "PermissionDenied",
    "Priority",
    "Producer",
    "Purpose",
    "StoreUnavailable",
]


class MessageFields(TypedDict, total=False):
    """What ``enqueue`` takes: a purpose, a channel, a destination and a template, then what
    the purpose needs. ``secret`` (a code or a link's token) is sealed to this message and
    never stored in clear; ``subject_id`` names what the message is about (a newer message of
    the same purpose and subject withdraws older unsent ones); ``expires_at`` ends a secret's
    use; ``priority`` overrides the purpose's; ``not_before`` delays the send."""

    purpose: Required[Purpose]
    channel: Required[Channel]
    destination: Required[str]
    template: Required[str]
    params: Mapping[str, str] | None
    locale: str
    subject_id: UUID | None
    secret: str | None
    expires_at: datetime | None
    priority: Priority | None
    not_before: datetime | None


class EventFields(TypedDict):
    """What ``append_event`` takes. ``occurred_at`` is when the business change happened;
    appending again under the same ``idempotency_key`` with the same content
    (``occurred_at`` included) answers the first event's id and appends nothing."""

    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    idempotency_key: str
    payload: Mapping[str, Any]
    occurred_at: datetime


@attrs.frozen
class Writes:
    """What every producer (and ``outbox.testing``'s doubles) checks and builds before the
    one statement: the message with its sealed secret, and the event."""

    sealer: Sealer | None
    ids: Uuid7Ids = attrs.field(factory=Uuid7Ids)

    def message(self, **fields: Unpack[MessageFields]) -> Message:
        """The checked message, its secret sealed; raises before anything is written."""
        message_id = self.ids.new_id()
        purpose, channel = Purpose(fields["purpose"]), Channel(fields["channel"])
        secret = fields.get("secret")
        if secret is not None and self.sealer is None:
            raise InvalidMessage("secret: this producer has no seal keys (from_seal_keys)")
        return Message.enqueue(
            id=message_id,
            purpose=purpose,
            channel=channel,
            destination=normalize(channel, fields["destination"]),
            subject_id=fields.get("subject_id"),
            template=fields["template"],
            now=datetime.now(UTC),
            params=fields.get("params"),
            locale=fields.get("locale", "en"),
            sealed_secret=None
            if secret is None or self.sealer is None
            else self.sealer.seal(message_id=message_id, purpose=purpose, plaintext=secret),
            expires_at=fields.get("expires_at"),
            priority=fields.get("priority"),
            not_before=fields.get("not_before"),
        )

    @staticmethod
    def event(**fields: Unpack[EventFields]) -> NewDomainEvent:
        """The checked event; raises InvalidDomainEvent before anything is written."""
        return NewDomainEvent(**fields)


def _sealer(keys: str) -> Sealer:
    return EnvelopeSealer(parse_keyring(keys))


@attrs.frozen
class Producer:
    """Enqueues messages and appends events on a service's own (synchronous) connection.

    Without seal keys it enqueues everything but messages that carry a secret (codes,
    links); ``from_seal_keys`` takes the keys as ``OUTBOX_SEAL_KEYS`` holds them.
    """

    _writes: Writes = attrs.field(factory=lambda: Writes(sealer=None), alias="writes")

    @classmethod
    def from_seal_keys(cls, keys: str) -> Producer:
        """A producer sealing secrets with ``keys`` (``KEY_ID:BASE64URL_KEY``, newest first);
        raises KeyringError naming the bad entry."""
        return cls(writes=Writes(sealer=_sealer(keys)))

    def enqueue(self, conn: Connection[Any], **message: Unpack[MessageFields]) -> UUID:
        """Enqueue one message (``MessageFields``) in ``conn``'s open transaction; its id."""
        checked = self._writes.message(**message)
        with translated_errors():
            conn.execute(ENQUEUE, enqueue_params(checked))
        return checked.id

    def append_event(self, conn: Connection[Any], **event: Unpack[EventFields]) -> UUID:
        """Append one tenant event (``EventFields``) in ``conn``'s open transaction; its id
        (the first event's, for a replay of its idempotency key)."""
        checked = self._writes.event(**event)
        with translated_errors():
            [(event_id,)] = conn.execute(APPEND, append_params(checked)).fetchall()
        return UUID(str(event_id))


@attrs.frozen
class AsyncProducer:
    """``Producer`` for an asyncio service: the same calls on a ``psycopg.AsyncConnection``."""

    _writes: Writes = attrs.field(factory=lambda: Writes(sealer=None), alias="writes")

    @classmethod
    def from_seal_keys(cls, keys: str) -> AsyncProducer:
        """As ``Producer.from_seal_keys``."""
        return cls(writes=Writes(sealer=_sealer(keys)))

    async def enqueue(self, conn: AsyncConnection[Any], **message: Unpack[MessageFields]) -> UUID:
        """As ``Producer.enqueue``."""
        checked = self._writes.message(**message)
        with translated_errors():
            await conn.execute(ENQUEUE, enqueue_params(checked))
        return checked.id

    async def append_event(self, conn: AsyncConnection[Any], **event: Unpack[EventFields]) -> UUID:
        """As ``Producer.append_event``."""
        checked = self._writes.event(**event)
        with translated_errors():
            cursor = await conn.execute(APPEND, append_params(checked))
            [(event_id,)] = await cursor.fetchall()
        return UUID(str(event_id))
