"""The broker relay's publication target: NATS JetStream.

Each event is published to ``<prefix>.<organization>.<event_type>`` with ``Nats-Msg-Id`` set
to its event id, so JetStream's duplicate window absorbs a republish after a lost PubAck or
a crash; an answer of None (accepted) is given only once the PubAck came back. A call writes
all its events at once and then awaits their PubAcks together, at most ``max_in_flight``
awaiting theirs at once (nats-py's ``publish_async`` on one connection; one that has no
answer within ``ack_timeout``, whatever the reason, is indeterminate). A claimed batch
holds at most one event per aggregate (the claim's head rule), so concurrency never
reorders an aggregate.

How a failure is classed (the retry policy then decides):

- no connection, or the connection dropped: ``provider_suspended``: the broker is down,
  not the event at fault, so the events are released without spending an attempt and the
  events lane waits for the broker (``PublishDueEvents``'s breaker) however long it takes;
- no PubAck within ``ack_timeout``: ``indeterminate`` (it may be stored; the republish
  carries the same ``Nats-Msg-Id``);
- no stream answers on the subject: ``provider_suspended`` too (a restarting server says
  the same), with an error naming the stream and subject once;
- another stream than the configured one captures the subject: ``provider_suspended`` (a
  configuration error: the events are released without spending an attempt, and an error
  names the stream and subject; ``outboxctl nats ensure-stream`` fixes it).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import PubAck

from outbox.adapters.nats.connection import NatsOptions, close_quietly, connect
from outbox.application.events.ports import ClaimedEvent, TargetRefusal
from outbox.application.ports import Telemetry
from outbox.domain.delivery.failures import FailureClass

NAME = "nats"
# JetStream's error code for "expected stream does not match" (the Nats-Expected-Stream header).
STREAM_MISMATCH = 10060
HEADER_PREFIX = "Outbox-"
# Where nats-py's async reply token starts after the inbox prefix ("." + a 22-character NUID
# + "."), as its own reply handler reads it.
ASYNC_TOKEN_OFFSET = 22 + 2
_DISCONNECTED = (
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
    nats.errors.NoServersError,
    nats.errors.UnexpectedEOF,
    ConnectionError,
    OSError,
)


def subject_for(prefix: str, event: ClaimedEvent) -> str:
    """``<prefix>.<organization>.<event_type>``: one token per organization, the type's own."""
    return f"{prefix}.{event.organization_id}.{event.event_type}"


def headers_for(event: ClaimedEvent) -> dict[str, str]:
    """``Nats-Msg-Id`` (the event id) and the event's metadata as ``Outbox-*`` headers."""
    headers = {
        "Nats-Msg-Id": str(event.event_id),
        f"{HEADER_PREFIX}Event-Id": str(event.event_id),
        f"{HEADER_PREFIX}Event-Type": event.event_type,
        f"{HEADER_PREFIX}Contract-Version": str(event.contract_version),
        f"{HEADER_PREFIX}Organization": str(event.organization_id),
        f"{HEADER_PREFIX}Aggregate-Type": _header_value(event.aggregate_type),
        f"{HEADER_PREFIX}Aggregate-Id": _header_value(event.aggregate_id),
        f"{HEADER_PREFIX}Append-Sequence": str(event.append_sequence),
        f"{HEADER_PREFIX}Occurred-At": event.occurred_at.isoformat(),
    }
    if event.trace_context:
        headers["traceparent"] = _header_value(event.trace_context)
    return headers


def payload_for(event: ClaimedEvent) -> bytes:
    """The event's payload as compact UTF-8 JSON."""
    return json.dumps(dict(event.payload), separators=(",", ":"), ensure_ascii=False).encode()


def _header_value(value: str) -> str:
    # A line break would end the header block; nothing else in a value needs escaping.
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


class _JetStream(JetStreamContext):
    """nats-py's context, with JetStream's error replies to ``publish_async`` delivered.

    nats-py 2.16 raises the reply's APIError inside its reply handler instead of setting it
    on the publish's future, which then never resolves; here the error is set on the future
    (the ``ack_timeout`` stays the safety net for any other reply that goes unanswered).
    """

    async def _handle_async_reply(self, msg: Msg) -> None:
        try:
            await super()._handle_async_reply(msg)
        except nats.js.errors.APIError as error:
            token = msg.subject[len(self._nc._inbox_prefix) + ASYNC_TOKEN_OFFSET :]
            future = self._publish_async_futures.get(token)
            if future is not None and not future.done():
                future.set_exception(error)


class JetStreamTarget:
    """Publishes claimed events to one JetStream stream; connects lazily and reconnects.

    Until a first connection succeeds, a failed attempt is retried no sooner than
    ``connect_cooldown`` later (meanwhile every publish answers ``unavailable`` at once);
    once connected, nats-py reconnects on its own.
    """

    def __init__(
        self,
        *,
        options: NatsOptions,
        telemetry: Telemetry,
        stream: str,
        subject_prefix: str,
        ack_timeout: timedelta = timedelta(seconds=5),
        max_in_flight: int = 256,
        connect_cooldown: timedelta = timedelta(seconds=5),
    ) -> None:
        self._options = options
        self._telemetry = telemetry
        self.stream = stream
        self.subject_prefix = subject_prefix
        self._ack_timeout = ack_timeout.total_seconds()
        self._max_in_flight = max_in_flight
        self._client: Client | None = None
        self._jetstream: JetStreamContext | None = None
        self._connecting = asyncio.Lock()
        self._connect_cooldown = connect_cooldown.total_seconds()
        self._next_connect = 0.0
        self._connect_failing = False  # the last connect failed: say the next failure quietly
        self._misconfigured: set[str] = set()  # problems already reported, said once each

    @property
    def name(self) -> str:
        """``nats``: kept in attempts and metrics."""
        return NAME

    @property
    def connected(self) -> bool:
        """Whether the client is connected right now."""
        return self._client is not None and self._client.is_connected

    async def start(self) -> None:
        """Connect and check the stream, reporting a problem; never raises for the broker."""
        jetstream = await self._connected()
        if jetstream is None:
            return
        await self._check_stream(jetstream)

    async def close(self) -> None:
        """Close the connection (every publish awaited its PubAck)."""
        client, self._client, self._jetstream = self._client, None, None
        if client is not None and not client.is_closed:
            await close_quietly(client)

    async def publish(self, events: Sequence[ClaimedEvent]) -> Sequence[TargetRefusal | None]:
        """Publish every event; None for each one JetStream acknowledged, in order.

        Every event is written at once (nats-py's ``publish_async``, at most ``max_in_flight``
        awaiting their PubAck across calls), then the PubAcks are awaited together for at
        most ``ack_timeout``: one without an answer by then is indeterminate.
        """
        jetstream = await self._connected()
        if jetstream is None or not self.connected:
            refusal = TargetRefusal(
                failure_class=FailureClass.PROVIDER_SUSPENDED, code="no_connection"
            )
            return [refusal] * len(events)
        subjects = [subject_for(self.subject_prefix, event) for event in events]
        sent: list[asyncio.Future[PubAck] | TargetRefusal] = []
        try:
            for event, subject in zip(events, subjects, strict=True):
                sent.append(await self._send(jetstream, event, subject))
            futures = [future for future in sent if isinstance(future, asyncio.Future)]
            if futures:
                await asyncio.wait(futures, timeout=self._ack_timeout)
        finally:
            for future in sent:  # frees its window slot; an unanswered one is indeterminate
                if isinstance(future, asyncio.Future) and not future.done():
                    future.cancel()
        answers = [
            self._answer(future, subject) for future, subject in zip(sent, subjects, strict=True)
        ]
        acked = datetime.now(UTC)
        for event, answer in zip(events, answers, strict=True):
            if answer is None:
                lag = max(0.0, (acked - event.appended_at).total_seconds())
                self._telemetry.observe("outbox_relay_lag_seconds", lag, target=NAME)
        return answers

    async def _send(
        self, jetstream: JetStreamContext, event: ClaimedEvent, subject: str
    ) -> asyncio.Future[PubAck] | TargetRefusal:
        """Write one event; the future of its PubAck, or why it could not be written."""
        try:
            return await jetstream.publish_async(
                subject,
                payload_for(event),
                wait_stall=self._ack_timeout,
                stream=self.stream,
                headers=headers_for(event),
            )
        except nats.js.errors.TooManyStalledMsgsError:
            return TargetRefusal(failure_class=FailureClass.UNAVAILABLE, code="stalled")
        except _DISCONNECTED:
            # The failed write may have taken a window slot nats-py never frees: a fresh
            # context (its own window and reply subscription) serves the next publishes.
            if self._client is not None and jetstream is self._jetstream:
                self._jetstream = self._context(self._client)
            return TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED, code="disconnected")

    def _answer(
        self, sent: asyncio.Future[PubAck] | TargetRefusal, subject: str
    ) -> TargetRefusal | None:
        """What one written event's PubAck (or its absence) says."""
        if isinstance(sent, TargetRefusal):
            return sent
        if sent.cancelled():
            return TargetRefusal(failure_class=FailureClass.INDETERMINATE, code="ack_timeout")
        error = sent.exception()
        if error is None:
            if sent.result().stream != self.stream:
                return self._misconfiguration("stream_mismatch", subject)
            return None
        return self._error(error, subject)

    def _error(self, error: BaseException, subject: str) -> TargetRefusal:
        """The refusal a PubAck's error says."""
        if isinstance(error, nats.js.errors.NoStreamResponseError):
            # Also what a restarting server or a stream electing its leader answers: retried
            # with backoff, and said once as an error in case the stream is really missing.
            return self._misconfiguration("no_stream", subject)
        if isinstance(error, nats.js.errors.APIError):
            return self._api_error(error, subject)
        return TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED, code="disconnected")

    def _context(self, client: Client) -> JetStreamContext:
        return _JetStream(
            client, timeout=self._ack_timeout, publish_async_max_pending=self._max_in_flight
        )

    def _api_error(self, error: nats.js.errors.APIError, subject: str) -> TargetRefusal:
        if error.err_code == STREAM_MISMATCH:
            return self._misconfiguration("stream_mismatch", subject)
        code = f"jetstream_{error.err_code or error.code or 'error'}"
        return TargetRefusal(failure_class=FailureClass.UNAVAILABLE, code=code)

    def _misconfiguration(self, code: str, subject: str) -> TargetRefusal:
        """A stream/subject problem: said once as an error, the events released unspent."""
        if code not in self._misconfigured:
            self._misconfigured.add(code)
            self._telemetry.event(
                f"nats.{code}",
                level="error",
                stream=self.stream,
                subject=subject,
                hint=(
                    f"no stream {self.stream!r} captures {self.subject_prefix}.>; run"
                    " outboxctl nats ensure-stream"
                ),
            )
        return TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED, code=code)

    async def _connected(self) -> JetStreamContext | None:
        """The JetStream context, connecting first if need be; None when no server answers."""
        if self._client is not None and not self._client.is_closed:
            return self._jetstream
        async with self._connecting:
            if self._client is not None and not self._client.is_closed:
                return self._jetstream
            if time.monotonic() < self._next_connect:
                return None  # a broker that just refused is not asked again at once
            try:
                client = await connect(
                    self._options, self._telemetry, role="relay", reports_outages=True
                )
            except (nats.errors.Error, *_DISCONNECTED, TimeoutError) as error:
                # Said once per outage; the lane's relay.target_suspended says the rest.
                self._telemetry.event(
                    "nats.connect_failed",
                    level="debug" if self._connect_failing else "warning",
                    servers=self._options.shown,
                    error=type(error).__name__,
                )
                self._next_connect = time.monotonic() + self._connect_cooldown
                self._connect_failing = True
                return None
            self._connect_failing = False
            self._client = client
            self._jetstream = self._context(client)
            self._misconfigured.clear()
            return self._jetstream

    async def _check_stream(self, jetstream: JetStreamContext) -> None:
        wanted = f"{self.subject_prefix}.>"
        try:
            info = await jetstream.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            self._misconfiguration("no_stream", wanted)
            return
        except (nats.errors.Error, *_DISCONNECTED):
            return  # the first publish will say what is wrong
        subjects = info.config.subjects or []
        if wanted not in subjects and ">" not in subjects:
            self._misconfiguration("stream_mismatch", wanted)
