"""The JetStream publication target against a real nats-server -js."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta

import nats
import pytest
from nats.js import JetStreamContext

from outbox.adapters.nats.connection import NatsOptions
from outbox.adapters.nats.jetstream_target import JetStreamTarget
from outbox.application.events.ports import TargetRefusal
from outbox.domain.delivery.failures import FailureClass
from tests.fakes.telemetry import RecordingTelemetry
from tests.integration.nats.conftest import ACME, MakeEvent, make_stream
from tests.nats_server import NatsServer


def _target(
    url: str,
    stream: str,
    telemetry: RecordingTelemetry,
    *,
    prefix: str | None = None,
    ack_timeout: float = 2.0,
) -> JetStreamTarget:
    return JetStreamTarget(
        options=NatsOptions(servers=(url,), connect_timeout=1, reconnect_wait=0.1),
        telemetry=telemetry,
        stream=stream,
        subject_prefix=prefix or stream.lower(),
        ack_timeout=timedelta(seconds=ack_timeout),
    )


@pytest.fixture
async def target(
    nats_server: NatsServer, stream_name: str
) -> AsyncIterator[tuple[JetStreamTarget, RecordingTelemetry]]:
    await make_stream(nats_server.url, stream_name)
    telemetry = RecordingTelemetry()
    target = _target(nats_server.url, stream_name, telemetry)
    await target.start()
    yield target, telemetry
    await target.close()


async def _stored(jetstream: JetStreamContext, stream: str) -> list[nats.aio.msg.Msg]:
    info = await jetstream.stream_info(stream)
    return [
        await jetstream.get_msg(stream, sequence)
        for sequence in range(info.state.first_seq, info.state.last_seq + 1)
        if info.state.messages
    ]


async def test_an_event_is_stored_under_its_subject_with_its_id_and_metadata(
    target, jetstream, stream_name: str, make_event: MakeEvent
) -> None:
    publisher, telemetry = target
    event = make_event(
        "order-7", trace_context="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    )

    assert [None] == list(await publisher.publish([event]))

    [stored] = await _stored(jetstream[1], stream_name)
    assert f"{stream_name.lower()}.{ACME}.sales.order_placed" == stored.subject
    assert {
        "Nats-Msg-Id": str(event.event_id),
        "Outbox-Event-Id": str(event.event_id),
        "Outbox-Event-Type": "sales.order_placed",
        "Outbox-Contract-Version": "2",
        "Outbox-Organization": str(ACME),
        "Outbox-Aggregate-Type": "order",
        "Outbox-Aggregate-Id": "order-7",
        "Outbox-Append-Sequence": str(event.append_sequence),
        "Outbox-Occurred-At": event.occurred_at.isoformat(),
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    } == {
        key: value for key, value in (stored.headers or {}).items() if key != "Nats-Expected-Stream"
    }
    assert dict(event.payload) == json.loads(stored.data)
    [(_, lag, labels)] = [o for o in telemetry.observations if o[0] == "outbox_relay_lag_seconds"]
    assert ({"target": "nats"}, True) == (labels, 0 <= lag < 60)


async def test_a_republished_event_is_stored_once(
    target, jetstream, stream_name: str, make_event: MakeEvent
) -> None:
    """The retry after a lost PubAck carries the same Nats-Msg-Id: the window absorbs it."""
    publisher, _ = target
    event = make_event()
    await publisher.publish([event])

    assert [None] == list(await publisher.publish([make_event(event_id=event.event_id)]))

    assert 1 == len(await _stored(jetstream[1], stream_name))


async def test_a_batch_keeps_each_aggregates_order_in_the_stream(
    target, jetstream, stream_name: str, make_event: MakeEvent
) -> None:
    """Batch after batch (one event per aggregate each, as the claim gives), async publishes."""
    publisher, _ = target
    batches = [[make_event(f"order-{a}") for a in range(20)] for _ in range(5)]
    for batch in batches:
        assert [None] * 20 == list(await publisher.publish(batch))

    stored = await _stored(jetstream[1], stream_name)
    assert 100 == len(stored)
    for aggregate in range(20):
        sequences = [
            int(m.headers["Outbox-Append-Sequence"])
            for m in stored
            if m.headers and m.headers["Outbox-Aggregate-Id"] == f"order-{aggregate}"
        ]
        assert sorted(sequences) == sequences
        assert 5 == len(sequences)


async def test_no_server_is_a_suspended_target_and_a_restarted_one_takes_the_retry(
    private_nats_server: NatsServer, stream_name: str, make_event: MakeEvent
) -> None:
    await make_stream(private_nats_server.url, stream_name, storage="file")  # survives a restart
    telemetry = RecordingTelemetry()
    publisher = _target(private_nats_server.url, stream_name, telemetry)
    await publisher.start()
    event = make_event()
    private_nats_server.stop()
    try:
        for _ in range(100):  # the client notices the drop
            if not publisher.connected:
                break
            await asyncio.sleep(0.05)
        answer = await publisher.publish([event])
        assert [
            TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED, code="no_connection")
        ] == list(answer)
        private_nats_server.start()
        answers = []
        for _ in range(100):  # the client reconnects, JetStream recovers the stream
            answers = list(await publisher.publish([event]))
            if answers == [None]:
                break
            await asyncio.sleep(0.05)
        assert [None] == answers
    finally:
        await publisher.close()
    client = await nats.connect(private_nats_server.url)
    try:
        assert 1 == (await client.jetstream().stream_info(stream_name)).state.messages
    finally:
        await client.close()


async def test_a_broker_down_at_start_is_a_suspended_target_not_fatal(
    stream_name: str, make_event: MakeEvent
) -> None:
    telemetry = RecordingTelemetry()
    publisher = _target("nats://relay:s3cret@127.0.0.1:1", stream_name, telemetry)

    await publisher.start()
    answer = await publisher.publish([make_event()])

    assert [FailureClass.PROVIDER_SUSPENDED] == [a.failure_class for a in answer if a is not None]
    [failed, *_] = telemetry.named("nats.connect_failed")
    assert "nats://***@127.0.0.1:1" == failed.fields["servers"]
    assert "s3cret" not in repr(telemetry.events)


async def test_no_puback_within_the_timeout_is_indeterminate(
    nats_server: NatsServer, stream_name: str, make_event: MakeEvent
) -> None:
    """A responder that never acknowledges (a stalled JetStream) leaves the outcome unknown."""
    await make_stream(nats_server.url, stream_name)
    silent = await nats.connect(nats_server.url)
    # A second stream would refuse the subject; a core subscriber on the prefix in another
    # account is what a stalled leader looks like from the publisher: nobody answers in time.
    prefix = f"slow{stream_name.lower()}"
    await silent.subscribe(f"{prefix}.>", cb=_ignore)
    telemetry = RecordingTelemetry()
    publisher = _target(nats_server.url, stream_name, telemetry, prefix=prefix, ack_timeout=0.3)
    try:
        answer = await publisher.publish([make_event()])
    finally:
        await publisher.close()
        await silent.close()

    assert [TargetRefusal(failure_class=FailureClass.INDETERMINATE, code="ack_timeout")] == list(
        answer
    )


async def test_a_subject_no_stream_captures_is_a_named_configuration_error(
    nats_server: NatsServer, stream_name: str, make_event: MakeEvent
) -> None:
    await make_stream(nats_server.url, stream_name)
    telemetry = RecordingTelemetry()
    publisher = _target(nats_server.url, stream_name, telemetry, prefix="nobody.listens")
    await publisher.start()
    try:
        answer = await publisher.publish([make_event()])
    finally:
        await publisher.close()

    assert [TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED, code="no_stream")] == list(
        answer
    )
    [error] = telemetry.named("nats.stream_mismatch")  # start() saw the subjects do not match
    assert stream_name == error.fields["stream"]
    assert "error" == error.level


async def test_a_subject_of_another_stream_is_refused_as_a_mismatch(
    nats_server: NatsServer, stream_name: str, make_event: MakeEvent
) -> None:
    await make_stream(nats_server.url, stream_name)
    other = f"O{stream_name}"
    await make_stream(nats_server.url, other)
    telemetry = RecordingTelemetry()
    publisher = _target(nats_server.url, stream_name, telemetry, prefix=other.lower())
    try:
        answer = await publisher.publish([make_event()])
    finally:
        await publisher.close()

    assert [
        TargetRefusal(failure_class=FailureClass.PROVIDER_SUSPENDED, code="stream_mismatch")
    ] == list(answer)


async def _ignore(_message: object) -> None:
    return None
