"""In-memory doubles of the producer and the inbox, for a service's own unit tests.

``RecordingProducer`` and ``AsyncRecordingProducer`` take the same calls as
``outbox.producer.Producer`` and ``AsyncProducer`` (the connection argument is accepted and
not used) and keep what was enqueued and appended, after the same checks: bad input raises
the same errors, a newer message of a purpose and subject withdraws the older unsent one, an
event appended again under its idempotency key answers the first id or raises
IdempotencyConflict. They do not know the database's event catalogue: an event type it
would refuse as retired or unpublished is kept. ``InMemoryInbox`` runs a handler through the
real inbox's steps (receipt, retry on the backoff, dead letter at the cap, replay), with the
receipts in memory; ``inbox_event`` builds an event as the relay publishes it. The doubles
pass the contract suites the real adapters pass (docs/producer.md).

    producer = RecordingProducer()
    place_order(producer, conn=None)
    assert ["sales.order_placed"] == [event.event_type for event in producer.events]
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Unpack
from uuid import UUID

import attrs

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import Keyring, generate_key
from outbox.adapters.system.ids import Uuid7Ids
from outbox.application.events.errors import IdempotencyConflict
from outbox.application.events.inbox_events import PREFIX, parse_inbox_event
from outbox.application.events.inbox_ports import (
    InboxDeadLetter,
    InboxEvent,
    InboxHandle,
    InboxReceipt,
)
from outbox.application.events.receive_inbox_events import (
    DEFAULT_BACKOFF,
    InboxResult,
    ReceiveInboxEvents,
)
from outbox.domain.channels import Channel
from outbox.domain.delivery.priorities import Priority
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.events.domain_events import NewDomainEvent
from outbox.domain.purposes import Purpose
from outbox.producer import EventFields, MessageFields, Writes

__all__ = [
    "AppendedEvent",
    "AsyncRecordingProducer",
    "EnqueuedMessage",
    "Event",
    "InMemoryInbox",
    "InMemoryInboxStore",
    "RecordingProducer",
    "RecordingTelemetry",
    "inbox_event",
]

Field = str | int | float | bool | None


# The producer ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class EnqueuedMessage:
    """One message as a producer enqueued it. ``secret`` is the plaintext the real producer
    would have sealed (here, so a test can read the code it sent); ``withdrawn`` is set when
    a newer message of the same purpose and subject replaced it."""

    id: UUID
    purpose: Purpose
    channel: Channel
    destination: str
    template: str
    params: Mapping[str, str]
    locale: str
    subject_id: UUID | None
    secret: str | None = attrs.field(repr=False)
    expires_at: datetime | None
    priority: Priority
    not_before: datetime | None
    withdrawn: bool = False


@attrs.frozen(kw_only=True)
class AppendedEvent:
    """One tenant event as a producer appended it."""

    id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    idempotency_key: str
    payload: Mapping[str, Any]
    occurred_at: datetime


def _test_sealer() -> EnvelopeSealer:
    return EnvelopeSealer(Keyring((generate_key("test"),)))


@attrs.define
class RecordingProducer:
    """``outbox.producer.Producer``'s double; ``seals=False`` is a producer without seal
    keys (a message carrying a secret is refused, as there)."""

    seals: bool = True
    messages: list[EnqueuedMessage] = attrs.field(factory=list)
    events: list[AppendedEvent] = attrs.field(factory=list)
    _writes: Writes = attrs.field(init=False)
    _ids: Uuid7Ids = attrs.field(factory=Uuid7Ids, init=False)

    def __attrs_post_init__(self) -> None:
        self._writes = Writes(sealer=_test_sealer() if self.seals else None)

    # ``conn``: the real producer's connection argument, taken and not used.
    def enqueue(self, conn: object, **message: Unpack[MessageFields]) -> UUID:  # noqa: ARG002
        """As ``Producer.enqueue``; the message is kept in ``messages``."""
        checked = self._writes.message(**message)
        if checked.subject_id is not None and checked.purpose.is_supersedable:
            self.messages = [
                attrs.evolve(kept, withdrawn=True)
                if (kept.purpose, kept.subject_id) == (checked.purpose, checked.subject_id)
                else kept
                for kept in self.messages
            ]
        self.messages.append(
            EnqueuedMessage(
                id=checked.id,
                purpose=checked.purpose,
                channel=checked.channel,
                destination=checked.destination,
                template=checked.template,
                params=dict(checked.params),
                locale=checked.locale,
                subject_id=checked.subject_id,
                secret=message.get("secret"),
                expires_at=checked.expires_at,
                priority=checked.priority,
                not_before=message.get("not_before"),
            )
        )
        return checked.id

    def append_event(self, conn: object, **event: Unpack[EventFields]) -> UUID:  # noqa: ARG002
        """As ``Producer.append_event``; the event is kept in ``events``."""
        checked = self._writes.event(**event)
        appended = AppendedEvent(id=self._ids.new_id(), **_event_fields(checked))
        for kept in self.events:
            same_key = (kept.organization_id, kept.idempotency_key) == (
                checked.organization_id,
                checked.idempotency_key,
            ) and kept.event_type.split(".")[0] == checked.module
            if same_key and attrs.evolve(kept, id=appended.id) != appended:
                raise IdempotencyConflict("p_idempotency_key: already used with other content")
            if same_key:
                return kept.id
        self.events.append(appended)
        return appended.id


def _event_fields(event: NewDomainEvent) -> dict[str, Any]:
    fields = attrs.asdict(event, recurse=False)
    fields.pop("trace_context")
    fields["payload"] = json.loads(json.dumps(dict(event.payload)))  # as stored: JSON
    return fields


@attrs.define
class AsyncRecordingProducer:
    """``outbox.producer.AsyncProducer``'s double: ``RecordingProducer``'s calls, awaited."""

    seals: bool = True
    _sync: RecordingProducer = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._sync = RecordingProducer(seals=self.seals)

    @property
    def messages(self) -> list[EnqueuedMessage]:
        """What was enqueued, in order."""
        return self._sync.messages

    @property
    def events(self) -> list[AppendedEvent]:
        """What was appended, in order (a replay of a key adds nothing)."""
        return self._sync.events

    async def enqueue(self, conn: object, **message: Unpack[MessageFields]) -> UUID:
        """As ``AsyncProducer.enqueue``."""
        return self._sync.enqueue(conn, **message)

    async def append_event(self, conn: object, **event: Unpack[EventFields]) -> UUID:
        """As ``AsyncProducer.append_event``."""
        return self._sync.append_event(conn, **event)


# The inbox ---------------------------------------------------------------------------------


@attrs.frozen
class Event:
    """One reported event."""

    name: str
    level: str
    fields: dict[str, Field]


@attrs.define
class RecordingTelemetry:
    """Keeps every event, counter increment and observation in lists."""

    events: list[Event] = attrs.field(factory=list)
    counts: list[tuple[str, float, dict[str, str]]] = attrs.field(factory=list)
    observations: list[tuple[str, float, dict[str, str]]] = attrs.field(factory=list)
    forgotten: list[str] = attrs.field(factory=list)

    def event(self, name: str, /, *, level: str = "info", **fields: Field) -> None:
        """Keep the event."""
        self.events.append(Event(name, level, dict(fields)))

    def count(self, name: str, /, value: float = 1, **labels: str) -> None:
        """Keep the increment."""
        self.counts.append((name, value, dict(labels)))

    def observe(self, name: str, /, value: float, **labels: str) -> None:
        """Keep the observation."""
        self.observations.append((name, value, dict(labels)))

    def forget(self, name: str, /) -> None:
        """Keep the gauge's name; its earlier observations stay in ``observations``."""
        self.forgotten.append(name)

    def named(self, name: str) -> list[Event]:
        """Every event called ``name``, in order."""
        return [event for event in self.events if event.name == name]


@attrs.define
class InMemoryInboxStore:
    """The inbox's receipts and dead letters in memory; ``transaction`` is what a handler
    gets as its transaction (a handler that raises leaves no receipt; what it changed in
    ``transaction`` is the test's to undo)."""

    transaction: Any = None
    received: dict[tuple[str, UUID], InboxReceipt] = attrs.field(factory=dict)
    kept: dict[tuple[str, UUID], InboxDeadLetter] = attrs.field(factory=dict)

    async def handle_once(self, consumer: str, event: InboxEvent, handle: InboxHandle) -> bool:
        """Run ``handle`` and keep the receipt; False (nothing run) for a known event."""
        if (consumer, event.event_id) in self.received:
            return False
        await handle(event, self.transaction)
        self._receive(consumer, event.event_id, event.stream_sequence)
        return True

    def _receive(self, consumer: str, event_id: UUID, stream_sequence: int) -> None:
        self.received[consumer, event_id] = InboxReceipt(
            event_id=event_id, stream_sequence=stream_sequence, received_at=datetime.now(UTC)
        )

    async def dead_letter(
        self,
        consumer: str,
        *,
        event_id: UUID,
        subject: str,
        headers: Mapping[str, str],
        data: bytes,
        attempts: int,
        error_class: str,
    ) -> None:
        """Keep (or update) the dead letter."""
        self.kept[consumer, event_id] = InboxDeadLetter(
            event_id=event_id,
            subject=subject[:1000],
            headers=dict(headers),
            data=data,
            attempts=max(1, attempts),
            error_class=error_class[:200],
            dead_lettered_at=datetime.now(UTC),
            replay_requested_at=None,
        )

    async def replay_one(
        self, consumer: str, handle: Callable[[InboxDeadLetter, Any], Awaitable[None]]
    ) -> InboxDeadLetter | None:
        """The oldest dead letter marked for replay: handled and removed, or neither."""
        marked = [
            letter
            for (owner, _), letter in self.kept.items()
            if owner == consumer and letter.replay_requested_at is not None
        ]
        if not marked:
            return None
        letter = min(marked, key=lambda kept: kept.dead_lettered_at)
        taken = attrs.evolve(letter, replay_requested_at=None)
        if (consumer, letter.event_id) not in self.received:
            await handle(taken, self.transaction)
            self._receive(consumer, letter.event_id, 0)
        del self.kept[consumer, letter.event_id]
        return taken

    async def dead_letters(self, consumer: str, *, limit: int) -> Sequence[InboxDeadLetter]:
        """Oldest first."""
        mine = [letter for (owner, _), letter in self.kept.items() if owner == consumer]
        return sorted(mine, key=lambda letter: letter.dead_lettered_at)[:limit]

    async def receipts(self, consumer: str, *, limit: int) -> Sequence[InboxReceipt]:
        """Newest first."""
        mine = [receipt for (owner, _), receipt in self.received.items() if owner == consumer]
        return sorted(mine, key=lambda receipt: receipt.received_at, reverse=True)[:limit]

    async def request_replay(self, consumer: str, event_id: UUID) -> bool:
        """Mark it; False when there is no such dead letter."""
        letter = self.kept.get((consumer, event_id))
        if letter is None:
            return False
        self.kept[consumer, event_id] = attrs.evolve(letter, replay_requested_at=datetime.now(UTC))
        return True


def inbox_event(
    event_type: str,
    payload: Mapping[str, Any],
    *,
    event_id: UUID | None = None,
    organization_id: UUID | None = None,
    contract_version: int = 1,
    aggregate_type: str = "",
    aggregate_id: str = "",
    append_sequence: int = 1,
    stream_sequence: int = 1,
    attempt: int = 1,
) -> InboxEvent:
    """An event as an inbox reads it from the relay's stream (its headers and JSON body)."""
    event_id = event_id or Uuid7Ids().new_id()
    organization = str(organization_id or Uuid7Ids().new_id())
    headers = {
        "Nats-Msg-Id": str(event_id),
        f"{PREFIX}Organization": organization,
        f"{PREFIX}Event-Type": event_type,
        f"{PREFIX}Contract-Version": str(contract_version),
        f"{PREFIX}Aggregate-Type": aggregate_type,
        f"{PREFIX}Aggregate-Id": aggregate_id,
        f"{PREFIX}Append-Sequence": str(append_sequence),
    }
    event = parse_inbox_event(
        subject=f"outbox.events.{organization}.{event_type}",
        headers=headers,
        data=json.dumps(dict(payload)).encode(),
        stream_sequence=stream_sequence,
        attempt=attempt,
    )
    assert event is not None  # noqa: S101 - built from the headers the parser reads
    return event


@attrs.define
class _Delivery:
    """One message of the stream, and how the inbox settled it."""

    event: InboxEvent
    settled: list[tuple[str, float | None]]

    @property
    def raw_subject(self) -> str:
        return self.event.subject

    @property
    def raw_headers(self) -> Mapping[str, str]:
        return self.event.headers

    @property
    def raw_data(self) -> bytes:
        return self.event.data

    @property
    def attempt(self) -> int:
        return self.event.attempt

    async def ack(self) -> None:
        self.settled.append(("ack", None))

    async def nak(self, delay: float) -> None:
        self.settled.append(("nak", delay))

    async def term(self) -> None:
        self.settled.append(("term", None))


@attrs.define
class InMemoryInbox:
    """An inbox for ``handler`` without a broker or a database: ``deliver`` hands it an
    event as the stream would (``attempt`` counts the deliveries), ``replay`` marks a dead
    letter and runs it again. ``settlements`` is what the broker was told, per event; the
    retry delays are the ``backoff``'s steps exactly (the real inbox adds up to a fifth)."""

    handler: InboxHandle
    consumer: str = "test"
    max_attempts: int = 5
    backoff: Sequence[timedelta] = DEFAULT_BACKOFF
    store: InMemoryInboxStore = attrs.field(factory=InMemoryInboxStore)
    telemetry: RecordingTelemetry = attrs.field(factory=RecordingTelemetry)
    settlements: list[tuple[UUID, str, float | None]] = attrs.field(factory=list)

    def _receive(self) -> ReceiveInboxEvents:
        return ReceiveInboxEvents(
            store=self.store,
            consumer=self.consumer,
            handle=self.handler,
            telemetry=self.telemetry,
            policy=RetryPolicy(schedule=self.backoff, max_attempts=self.max_attempts),
        )

    async def deliver(self, event: InboxEvent) -> InboxResult:
        """Handle one delivery of ``event``: handled, a duplicate, retried or dead-lettered."""
        settled: list[tuple[str, float | None]] = []
        result = await self._receive()([_Delivery(event=event, settled=settled)])
        self.settlements += [(event.event_id, verb, delay) for verb, delay in settled]
        return result

    async def replay(self, event_id: UUID) -> bool:
        """Mark the dead letter ``event_id`` and handle it again; False when there is none."""
        if not await self.store.request_replay(self.consumer, event_id):
            return False
        await self._receive().replay()
        return True

    @property
    def received(self) -> list[UUID]:
        """The events handled (receipts kept), in the order they were."""
        return [event_id for (owner, event_id) in self.store.received if owner == self.consumer]

    @property
    def dead_letters(self) -> list[InboxDeadLetter]:
        """The events kept after their last failed attempt."""
        return [letter for (owner, _), letter in self.store.kept.items() if owner == self.consumer]
