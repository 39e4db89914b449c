"""SES against moto running as a real local server, and a local server answering SES errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.ses.models import ses_backends

from outbox.adapters.providers.ses.provider import SesProvider, ses_client
from outbox.application.delivery.errors import DeliveryFailed
from outbox.domain.delivery.failures import FailureClass
from tests.fakes.clock import FixedClock
from tests.fakes.deliveries import CODE, EMAIL, MESSAGE_ID, email_delivery, leaks
from tests.integration.providers.http_stand_in import HttpStandIn, Reply
from tests.integration.providers.impersonations import aws_error, ses

TIMEOUT = 2.0  # generous: a loaded two-process test run must not turn an answer into a timeout
REGION = "eu-west-1"
SENDER = "no-reply@example.org"
ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _provider(clock: FixedClock, endpoint_url: str, sender: str = SENDER) -> SesProvider:
    client = ses_client(
        region=REGION,
        timeout=TIMEOUT,
        max_connections=4,
        endpoint_url=endpoint_url,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
    )
    return SesProvider(client=client, sender=sender, clock=clock, max_workers=4)


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """moto's SES, served over HTTP on a random loopback port."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def verified_sender(moto_url: str) -> str:
    """The sender identity, verified in moto the way an operator verifies it in SES."""
    client = ses_client(
        region=REGION,
        timeout=5,
        max_connections=1,
        endpoint_url=moto_url,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
    )
    client.create_email_identity(EmailIdentity=SENDER)
    client.close()
    return SENDER


@pytest.fixture
def server() -> Iterator[HttpStandIn]:
    """A local HTTP server answering like SESv2, for refusals moto cannot produce."""
    stand_in = HttpStandIn(ses)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture
async def provider(clock: FixedClock, server: HttpStandIn) -> AsyncIterator[SesProvider]:
    """An SES provider pointed at the error stand-in."""
    ses_provider = _provider(clock, server.url)
    yield ses_provider
    await ses_provider.aclose()


async def _refusal(provider: SesProvider) -> DeliveryFailed:
    with pytest.raises(DeliveryFailed) as raised:
        await provider.send(email_delivery())
    return raised.value


async def test_a_message_from_a_verified_sender_is_sent_through_moto(
    clock: FixedClock, moto_url: str, verified_sender: str
) -> None:
    backend = ses_backends[DEFAULT_ACCOUNT_ID][REGION]
    before = len(backend.sent_messages)
    provider = _provider(clock, moto_url, verified_sender)
    try:
        provider_id = await provider.send(email_delivery())
    finally:
        await provider.aclose()

    [sent] = backend.sent_messages[before:]
    assert provider_id == sent.id
    assert (SENDER, {"ToAddresses": [EMAIL]}) == (sent.source, sent.destinations)
    assert "Your verification code" == sent.subject
    assert CODE in sent.body


async def test_an_unverified_sender_is_rejected_by_moto(
    clock: FixedClock, moto_url: str, verified_sender: str
) -> None:
    provider = _provider(clock, moto_url, "stranger@unverified.example")
    try:
        failed = await _refusal(provider)
    finally:
        await provider.aclose()

    assert (FailureClass.REJECTED, "MessageRejected") == (
        failed.failure.failure_class,
        failed.failure.code,
    )


async def test_the_request_carries_both_parts_and_the_message_id_as_header_and_tag(
    provider: SesProvider, server: HttpStandIn
) -> None:
    provider_id = await provider.send(email_delivery())

    [request] = server.received
    assert "0100018c-stand-in-000000" == provider_id
    assert ACCESS_KEY in request.headers["authorization"]
    simple = request.body["Content"]["Simple"]
    assert {
        "Subject": {"Data": "Your verification code", "Charset": "UTF-8"},
        "Body": {
            "Text": {"Data": f"Your code is {CODE}. It expires in 10 minutes.", "Charset": "UTF-8"},
            "Html": {"Data": f"<p>Your code is <strong>{CODE}</strong>.</p>", "Charset": "UTF-8"},
        },
        "Headers": [{"Name": "X-Outbox-Message-Id", "Value": str(MESSAGE_ID)}],
    } == simple
    assert [{"Name": "outbox_message_id", "Value": str(MESSAGE_ID)}] == request.body["EmailTags"]
    assert {"ToAddresses": [EMAIL]} == request.body["Destination"]


@pytest.mark.parametrize(
    ("status", "code", "failure_class"),
    [
        (400, "MessageRejected", FailureClass.REJECTED),
        (400, "MailFromDomainNotVerifiedException", FailureClass.REJECTED),
        (400, "BadRequestException", FailureClass.REJECTED),
        (400, "SomethingNewException", FailureClass.REJECTED),
        (400, "AccountSuspendedException", FailureClass.PROVIDER_SUSPENDED),
        (400, "SendingPausedException", FailureClass.PROVIDER_SUSPENDED),
        (403, "UnrecognizedClientException", FailureClass.PROVIDER_SUSPENDED),
        (429, "TooManyRequestsException", FailureClass.THROTTLED),
        (400, "LimitExceededException", FailureClass.THROTTLED),
        (400, "Throttling", FailureClass.THROTTLED),
        (500, "InternalFailure", FailureClass.UNAVAILABLE),
        (503, "ServiceUnavailable", FailureClass.UNAVAILABLE),
    ],
)
async def test_aws_errors_are_classified_and_never_retried_by_the_sdk(
    provider: SesProvider,
    server: HttpStandIn,
    status: int,
    code: str,
    failure_class: FailureClass,
) -> None:
    """botocore would retry throttling and 5xx on its own; the outbox must see one attempt."""
    server.then(aws_error(status, code, "refused"))

    failure = (await _refusal(provider)).failure

    assert (failure_class, code) == (failure.failure_class, failure.code)
    assert 1 == len(server.received)


async def test_throttling_carries_retry_after(
    provider: SesProvider, server: HttpStandIn, clock: FixedClock
) -> None:
    server.then(aws_error(429, "TooManyRequestsException", "slow", {"Retry-After": "20"}))

    failure = (await _refusal(provider)).failure

    assert clock.now().timestamp() + 20 == failure.retry_after.timestamp()  # type: ignore[union-attr]


async def test_a_response_that_never_comes_is_indeterminate(
    provider: SesProvider, server: HttpStandIn
) -> None:
    server.then(Reply(status=200, body={"MessageId": "late"}, delay=TIMEOUT * 4))

    failure = (await _refusal(provider)).failure

    assert (FailureClass.INDETERMINATE, "ReadTimeoutError") == (failure.failure_class, failure.code)
    assert 1 == len(server.received)


async def test_a_connection_closed_without_a_response_is_indeterminate(
    provider: SesProvider, server: HttpStandIn
) -> None:
    server.then(Reply(hang_up=True))

    failure = (await _refusal(provider)).failure

    assert (FailureClass.INDETERMINATE, "ConnectionClosedError") == (
        failure.failure_class,
        failure.code,
    )


async def test_a_refused_connection_is_unavailable(clock: FixedClock, refused_port: int) -> None:
    provider = _provider(clock, f"http://127.0.0.1:{refused_port}")
    try:
        failure = (await _refusal(provider)).failure
    finally:
        await provider.aclose()

    assert (FailureClass.UNAVAILABLE, "EndpointConnectionError") == (
        failure.failure_class,
        failure.code,
    )


async def test_a_connect_timeout_is_unavailable(clock: FixedClock, unreachable_port: int) -> None:
    provider = _provider(clock, f"http://127.0.0.1:{unreachable_port}")
    try:
        failure = (await _refusal(provider)).failure
    finally:
        await provider.aclose()

    assert (FailureClass.UNAVAILABLE, "ConnectTimeoutError") == (
        failure.failure_class,
        failure.code,
    )


@pytest.mark.parametrize(
    "reply",
    [
        aws_error(400, "MessageRejected", f"Email address is not verified: {EMAIL}"),
        aws_error(400, "BadRequestException", f"Invalid content: Your code is {CODE}"),
        Reply(status=400, body={"__type": f"Bad{CODE}", "message": EMAIL}),
        Reply(hang_up=True),
    ],
)
async def test_failures_never_show_the_destination_the_text_or_the_keys(
    provider: SesProvider, server: HttpStandIn, reply: Reply
) -> None:
    server.then(reply)

    failed = await _refusal(provider)

    assert [] == leaks(failed, EMAIL, CODE, SECRET_KEY)
