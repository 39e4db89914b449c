"""The inbox's side of the stream: a durable pull consumer over the relay's subjects.

Messages are fetched in batches and settled one by one: ``ack`` after the service's commit,
``nak`` with a delay for a retry, ``term`` once the event is dead-lettered. A message not
acknowledged within ``ack_wait`` (the consumer crashed) is delivered again; the inbox's
receipt makes that redelivery harmless.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import timedelta

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from outbox.adapters.nats.connection import NatsOptions, close_quietly, connect
from outbox.application.events.inbox_events import parse_inbox_event
from outbox.application.events.inbox_ports import InboxEvent
from outbox.application.ports import Telemetry

# What a fetch or a consumer-info request meets while the server restarts or the link is down:
# nothing to read yet; the client reconnects on its own and the next call goes through.
_BROKER_AWAY = (
    TimeoutError,  # nats.errors.TimeoutError too: no reply within the wait
    nats.errors.NoRespondersError,  # connected again, JetStream not serving yet
    nats.errors.ConnectionReconnectingError,
)


class JetStreamDelivery:
    """One fetched message, as the inbox settles it."""

    def __init__(self, message: Msg) -> None:
        self._message = message
        metadata = message.metadata
        self._attempt = int(metadata.num_delivered or 1)
        self._event = parse_inbox_event(
            subject=message.subject,
            headers=self.raw_headers,
            data=message.data,
            stream_sequence=int(metadata.sequence.stream) if metadata.sequence else 0,
            attempt=self._attempt,
        )

    @property
    def event(self) -> InboxEvent | None:
        """The relay's event, or None when the message is not one."""
        return self._event

    @property
    def raw_subject(self) -> str:
        """The message's subject."""
        return self._message.subject

    @property
    def raw_headers(self) -> Mapping[str, str]:
        """The message's headers."""
        return dict(self._message.headers or {})

    @property
    def raw_data(self) -> bytes:
        """The message's body."""
        return bytes(self._message.data)

    @property
    def attempt(self) -> int:
        """JetStream's delivery count."""
        return self._attempt

    async def ack(self) -> None:
        """Acknowledge and wait for JetStream to confirm (a lost ack means a redelivery)."""
        await self._message.ack_sync()

    async def nak(self, delay: float) -> None:
        """Deliver again after ``delay`` seconds."""
        await self._message.nak(delay=delay or None)

    async def term(self) -> None:
        """Never deliver again."""
        await self._message.term()


class JetStreamInboxSource:
    """A durable pull consumer of ``stream`` filtered on ``subject``."""

    def __init__(
        self,
        *,
        options: NatsOptions,
        telemetry: Telemetry,
        stream: str,
        durable: str,
        subject: str,
        ack_wait: timedelta = timedelta(seconds=30),
        max_ack_pending: int = 1000,
    ) -> None:
        self._options = options
        self._telemetry = telemetry
        self._stream = stream
        self._durable = durable
        self._subject = subject
        self._ack_wait = ack_wait
        self._max_ack_pending = max_ack_pending
        self._client: Client | None = None
        self._subscription: JetStreamContext.PullSubscription | None = None

    async def open(self) -> None:
        """Connect and bind the durable consumer (created on first use).

        Raises nats' errors when no server answers or the stream does not exist.
        """
        client = await connect(self._options, self._telemetry, role="inbox")
        try:
            self._subscription = await client.jetstream().pull_subscribe(
                self._subject,
                durable=self._durable,
                stream=self._stream,
                config=ConsumerConfig(
                    durable_name=self._durable,
                    ack_policy=AckPolicy.EXPLICIT,
                    deliver_policy=DeliverPolicy.ALL,
                    ack_wait=self._ack_wait.total_seconds(),
                    max_deliver=-1,  # the inbox's attempt cap decides, not the broker
                    max_ack_pending=self._max_ack_pending,
                    filter_subject=self._subject,
                ),
            )
        except BaseException:
            await close_quietly(client)
            raise
        self._client = client

    async def fetch(self, batch: int, wait: float) -> Sequence[JetStreamDelivery]:
        """Up to ``batch`` messages, waiting at most ``wait`` seconds; none when idle or
        while the connection is down."""
        if self._subscription is None:
            raise RuntimeError("the inbox source is not open")
        try:
            messages = await self._subscription.fetch(batch, timeout=wait)
        except nats.errors.TimeoutError:
            return []
        except _BROKER_AWAY:
            await asyncio.sleep(min(wait, 1.0))  # the server is away: do not spin
            return []
        return [JetStreamDelivery(message) for message in messages]

    async def settled(self) -> bool:
        """Whether nothing is left for this consumer: none pending, none awaiting an ack (a
        message nak'ed with a delay still awaits one)."""
        if self._subscription is None:
            raise RuntimeError("the inbox source is not open")
        try:
            info = await self._subscription.consumer_info()
        except _BROKER_AWAY:
            return False
        return not info.num_pending and not info.num_ack_pending

    async def close(self) -> None:
        """Unbind (the durable consumer stays) and close the connection."""
        client, self._client, self._subscription = self._client, None, None
        if client is not None:
            await close_quietly(client)
