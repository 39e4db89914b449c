"""The inbox's ports: an event read from the broker, and the service's own store."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class InboxEvent:
    """A tenant event as the broker delivered it to one inbox consumer.

    ``attempt`` counts the broker's deliveries of this message (1 the first time).
    """

    event_id: UUID
    subject: str
    organization_id: str
    event_type: str
    contract_version: int
    aggregate_type: str
    aggregate_id: str
    append_sequence: int
    payload: Mapping[str, Any] = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(repr=False)
    data: bytes = attrs.field(repr=False)  # the message body as it came, kept by a dead letter
    stream_sequence: int
    attempt: int


# ``handle(event, transaction)``: write the effect through ``transaction`` (for PostgreSQL,
# the psycopg AsyncConnection of the open transaction the receipt is recorded in) and return.
InboxHandle = Callable[[InboxEvent, Any], Awaitable[None]]


class InboxDelivery(Protocol):
    """One message of the stream, to settle once handled (or not)."""

    @property
    def event(self) -> InboxEvent | None:
        """The event, or None when the message is not one (no event id, bad headers)."""
        ...

    @property
    def raw_subject(self) -> str:
        """The subject it came on."""
        ...

    @property
    def raw_headers(self) -> Mapping[str, str]:
        """Its headers as they came."""
        ...

    @property
    def raw_data(self) -> bytes:
        """Its body as it came."""
        ...

    @property
    def attempt(self) -> int:
        """How many times the broker delivered it (1 the first time)."""
        ...

    async def ack(self) -> None:
        """Done: never deliver it again."""
        ...

    async def nak(self, delay: float) -> None:
        """Not now: deliver it again after ``delay`` seconds."""
        ...

    async def term(self) -> None:
        """Never deliver it again (it is dead-lettered)."""
        ...


@attrs.frozen(kw_only=True)
class InboxDeadLetter:
    """An event kept after its last failed attempt (or a message that is no event)."""

    event_id: UUID
    subject: str
    headers: Mapping[str, str]
    data: bytes = attrs.field(repr=False)
    attempts: int
    error_class: str
    dead_lettered_at: datetime
    replay_requested_at: datetime | None


@attrs.frozen(kw_only=True)
class InboxReceipt:
    """An event the inbox handled: its id, stream sequence and when."""

    event_id: UUID
    stream_sequence: int
    received_at: datetime


class InboxStore(Protocol):
    """The inbox tables of the consuming service's database (schema ``inbox``)."""

    async def handle_once(self, consumer: str, event: InboxEvent, handle: InboxHandle) -> bool:
        """Record the receipt and run ``handle`` in one transaction; commit; True.

        False (and ``handle`` not run) when the event was received before. An exception of
        ``handle`` rolls both back and propagates.
        """
        ...

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
        """Keep the message as a dead letter (payload and headers; the error's class only)."""
        ...

    async def replay_one(
        self, consumer: str, handle: Callable[[InboxDeadLetter, Any], Awaitable[None]]
    ) -> InboxDeadLetter | None:
        """Take one dead letter marked for replay and run ``handle`` on it in the transaction
        that removes it; None when none is marked. An exception rolls back and propagates."""
        ...

    async def dead_letters(self, consumer: str, *, limit: int) -> Sequence[InboxDeadLetter]:
        """The consumer's dead letters, oldest first."""
        ...

    async def receipts(self, consumer: str, *, limit: int) -> Sequence[InboxReceipt]:
        """The consumer's latest receipts, newest first."""
        ...

    async def request_replay(self, consumer: str, event_id: UUID) -> bool:
        """Mark a dead letter for the running inbox to handle again; False when there is none."""
        ...
