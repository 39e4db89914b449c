"""Hostile input to every parser that reads the outside world: always a classified answer.

Provider replies (Brevo, WasenderAPI, SES, SMTP) become a receipt or a DeliveryFailed of
the taxonomy whose code carries no free text from the provider; caller input (identifiers,
emails, passwords, Idempotency-Key) becomes a value or InvalidField naming the field and
never echoing the input; configuration (seal keys) becomes a keyring or KeyringError. The
domain parsers (Retry-After, destinations) and the envelope have their own property tests
next to them (tests/unit/domain, tests/unit/adapters/crypto); this file covers the rest.
"""

from __future__ import annotations

import asyncio
import json
import re
import string
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import aiosmtplib
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outbox.adapters.crypto.keyring import Keyring, KeyringError, parse_keyring
from outbox.adapters.providers.brevo.provider import BrevoProvider
from outbox.adapters.providers.http_failures import (
    json_object,
    parse_delay,
    parse_rate_limit_reset,
    provider_message_id,
    safe_token,
)
from outbox.adapters.providers.ses.errors import classify_client_error
from outbox.adapters.providers.smtp.provider import _classify as classify_smtp
from outbox.adapters.providers.smtp.provider import _Phase
from outbox.adapters.providers.wasender.provider import WasenderProvider
from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery, RenderedMessage
from outbox.application.errors import InvalidField
from outbox.application.identity.inputs import parse_email, parse_identifier, parse_password
from outbox.application.staff import check_idempotency_key
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.destinations import is_e164, is_email, mask
from tests.fakes.clock import FixedClock
from tests.reliability.profile import PROFILE

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
FUZZ = settings(
    max_examples=PROFILE.fuzz_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
# What a provider's error body looks like, and what it may look like when it misbehaves.
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {},
        optional={
            "code": json_values | st.sampled_from(["not_enough_credits", "duplicate_parameter"]),
            "message": json_values | st.just("Your code 482915 for alice@example.com"),
            "messageId": json_values,
            "success": json_values,
            "status": json_values | st.sampled_from(["logged_out", "need_scan", "connected"]),
            "data": json_values | st.fixed_dictionaries({"status": st.text(max_size=12)}),
            "retry_after": json_values,
        },
    ).map(lambda v: json.dumps(v).encode()),
)
header_values = st.one_of(
    st.text(alphabet=string.printable.strip("\r\n\x0b\x0c"), max_size=40),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.just("Fri, 01 May 2026 12:00:05 GMT"),
)
headers = st.dictionaries(
    st.sampled_from(["retry-after", "x-sib-ratelimit-reset", "x-ratelimit-reset"]),
    header_values,
    max_size=3,
)
transport_errors = st.sampled_from(
    [
        httpx.ConnectError,
        httpx.ConnectTimeout,
        httpx.ReadTimeout,
        httpx.WriteTimeout,
        httpx.PoolTimeout,
        httpx.ReadError,
        httpx.WriteError,
        httpx.RemoteProtocolError,
        httpx.LocalProtocolError,
    ]
)
BREVO_CODE = re.compile(r"[0-9]{3}(:[A-Za-z][A-Za-z_]{0,63})?|[A-Za-z]+|channel_not_configured")
WASENDER_CODE = re.compile(r"[0-9]{3}(:session|:not_sent)?|[A-Za-z]+")


def _delivery(channel: Channel, destination: str) -> Delivery:
    return Delivery(
        message_id=UUID("0190f5c2-7a1b-7c3d-8e4f-000000000001"),
        channel=channel,
        destination=destination,
        content=RenderedMessage(subject="Your code", text="Your code is 482915"),
    )


def _classified(failure: DeliveryFailure, allowed: re.Pattern[str]) -> None:
    assert isinstance(failure.failure_class, FailureClass)
    assert allowed.fullmatch(failure.code), failure.code
    if failure.retry_after is not None:
        assert NOW <= failure.retry_after <= NOW + DAY


async def _answer(provider: Any, delivery: Delivery) -> DeliveryFailure | str:
    try:
        return str(await provider.send(delivery))
    finally:
        await provider.aclose()


def _outcome(make: Any, delivery: Delivery, handler: Any) -> DeliveryFailure | str:
    async def run() -> DeliveryFailure | str:
        provider = make(httpx.MockTransport(handler))
        try:
            return await _answer(provider, delivery)
        except DeliveryFailed as failed:
            return failed.failure

    return asyncio.run(run())


def _brevo(transport: httpx.MockTransport) -> BrevoProvider:
    return BrevoProvider(
        api_key="k",
        clock=FixedClock(NOW),
        timeout=1,
        sender_email="no-reply@example.com",
        sms_sender="Outbox",
        base_url="https://brevo.test/v3",
        transport=transport,
    )


def _wasender(transport: httpx.MockTransport) -> WasenderProvider:
    return WasenderProvider(
        api_key="k",
        clock=FixedClock(NOW),
        timeout=1,
        base_url="https://wa.test/api",
        transport=transport,
    )


@FUZZ
@given(
    status=st.integers(100, 599),
    headers=headers,
    body=bodies,
    channel=st.sampled_from([Channel.EMAIL, Channel.SMS]),
)
def test_any_brevo_reply_is_a_receipt_or_a_classified_failure(
    status: int, headers: dict[str, str], body: bytes, channel: Channel
) -> None:
    destination = "alice@example.com" if channel is Channel.EMAIL else "+34612345678"
    outcome = _outcome(
        _brevo,
        _delivery(channel, destination),
        lambda _: httpx.Response(status, headers=headers, content=body),
    )
    if isinstance(outcome, str):
        assert 200 <= status < 300 or status == 400  # a success, or an idempotent replay
        assert len(outcome) <= 255
    else:
        _classified(outcome, BREVO_CODE)
        assert not 200 <= status < 300


@FUZZ
@given(status=st.integers(100, 599), headers=headers, body=bodies)
def test_any_wasender_reply_is_a_receipt_or_a_classified_failure(
    status: int, headers: dict[str, str], body: bytes
) -> None:
    outcome = _outcome(
        _wasender,
        _delivery(Channel.WHATSAPP, "+34612345678"),
        lambda _: httpx.Response(status, headers=headers, content=body),
    )
    if isinstance(outcome, str):
        assert 200 <= status < 300
    else:
        _classified(outcome, WASENDER_CODE)


@settings(max_examples=40, deadline=None)
@given(error=transport_errors, which=st.sampled_from(["brevo", "wasender"]))
def test_a_broken_connection_is_unavailable_or_indeterminate_never_an_exception(
    error: type[httpx.TransportError], which: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error("connection trouble quoting alice@example.com", request=request)

    make = _brevo if which == "brevo" else _wasender
    channel = Channel.EMAIL if which == "brevo" else Channel.WHATSAPP
    outcome = _outcome(make, _delivery(channel, "alice@example.com"), handler)

    assert isinstance(outcome, DeliveryFailure)
    assert outcome.failure_class in {FailureClass.UNAVAILABLE, FailureClass.INDETERMINATE}
    assert error.__name__ == outcome.code


@FUZZ
@given(
    response=st.fixed_dictionaries(
        {},
        optional={
            "Error": st.fixed_dictionaries(
                {}, optional={"Code": json_values | st.text(max_size=70), "Message": json_values}
            )
            | json_values,
            "ResponseMetadata": st.fixed_dictionaries(
                {},
                optional={
                    "HTTPStatusCode": json_values | st.integers(0, 999),
                    "HTTPHeaders": st.fixed_dictionaries(
                        {}, optional={"retry-after": header_values}
                    ),
                },
            ),
        },
    )
)
def test_any_ses_error_response_is_classified(response: dict[str, Any]) -> None:
    try:
        failure = classify_client_error(response, NOW)
    except (AttributeError, TypeError):
        pytest.fail(f"unclassified SES response {response!r}")
    _classified(failure, re.compile(r"[A-Za-z][A-Za-z_]{0,63}|ClientError"))


@FUZZ
@given(
    code=st.integers(-1, 1000),
    message=st.text(max_size=80),
    phase=st.sampled_from(list(_Phase)),
    kind=st.sampled_from(["response", "disconnect", "timeout", "os"]),
)
def test_any_smtp_reply_or_socket_error_is_classified(
    code: int, message: str, phase: _Phase, kind: str
) -> None:
    error: BaseException = {
        "response": aiosmtplib.SMTPResponseException(code, message),
        "disconnect": aiosmtplib.SMTPServerDisconnected(message),
        "timeout": aiosmtplib.SMTPTimeoutError(message),
        "os": ConnectionResetError(message),
    }[kind]
    failure = classify_smtp(error, phase, "alice@example.com")
    _classified(failure, re.compile(r"-?[0-9]{1,4}|[A-Za-z]+"))
    # What a reply said is kept only scrubbed: no address, no digit run a code could be.
    assert "@" not in failure.detail
    assert re.search(r"\d{4}", failure.detail) is None
    assert failure.detail.isprintable()
    if phase is _Phase.DATA and kind != "response":
        assert FailureClass.INDETERMINATE is failure.failure_class


@FUZZ
@given(value=json_values | header_values | st.floats() | st.booleans())
def test_retry_hints_of_any_shape_are_a_time_within_a_day_or_nothing(value: object) -> None:
    for when in (
        parse_delay(value, NOW),
        parse_rate_limit_reset(value if isinstance(value, str) else None, NOW),
    ):
        assert when is None or NOW <= when <= NOW + DAY  # "0" means now


@FUZZ
@given(body=bodies, value=json_values)
def test_body_and_field_readers_never_raise(body: bytes, value: object) -> None:
    assert isinstance(json_object(httpx.Response(200, content=body)), dict)
    token = safe_token(value)
    assert token is None or re.fullmatch(r"[A-Za-z][A-Za-z_]{0,63}", token)
    assert len(provider_message_id(value)) <= 255


# --- caller input -------------------------------------------------------------------------

raw_identifiers = st.one_of(
    st.text(max_size=80),
    st.emails().map(lambda e: e if len(e) < 200 else "a@b.c"),
    st.from_regex(r"\s*\+?[0-9]{0,18}\s*", fullmatch=True),
    st.emails().map(str.upper),
)


def _refusal(parse: Any, *args: Any) -> tuple[Any, Exception | None]:
    """What ``parse`` returned, or the InvalidField / KeyringError it raised."""
    try:
        return parse(*args), None
    except (InvalidField, KeyringError) as error:
        return None, error


def _not_echoed(raw: str, error: Exception) -> bool:
    """A refusal never repeats what was sent (short inputs may match the message by chance)."""
    return len(raw) < 4 or raw not in str(error)


@FUZZ
@given(raw=raw_identifiers)
def test_an_identifier_is_canonical_or_refused_naming_the_field_only(raw: str) -> None:
    for parse, field in ((parse_identifier, "identifier"), (parse_email, "email")):
        identifier, error = _refusal(parse, raw, field)
        if error is not None:
            assert isinstance(error, InvalidField)
            assert field == error.field
            assert _not_echoed(raw.strip(), error)
            continue
        assert is_email(identifier.value) or is_e164(identifier.value)
        assert identifier == parse(identifier.value, field)  # canonical: parsing is idempotent
        assert identifier.value != mask(identifier.value)


@FUZZ
@given(raw=st.text(max_size=300))
def test_a_password_is_kept_as_given_or_refused_without_being_echoed(raw: str) -> None:
    password, error = _refusal(parse_password, raw)
    if error is None:
        assert raw == password
    else:
        assert isinstance(error, InvalidField)
        assert "password" == error.field
        assert _not_echoed(raw, error)


@FUZZ
@given(raw=st.none() | st.text(max_size=300) | st.from_regex(r"[!-~]{1,300}", fullmatch=True))
def test_an_idempotency_key_is_visible_ascii_up_to_255_or_refused(raw: str | None) -> None:
    visible = raw is not None and re.fullmatch(r"[!-~]{1,255}", raw, re.ASCII) is not None
    key, error = _refusal(check_idempotency_key, raw)
    if error is None:
        assert key == raw
        assert raw is None or visible
    else:
        assert isinstance(error, InvalidField)
        assert not visible
        assert "Idempotency-Key" == error.field
        assert raw is None or _not_echoed(raw, error)


# --- configuration ------------------------------------------------------------------------


@FUZZ
@given(
    text=st.text(max_size=200)
    | st.lists(
        st.tuples(
            st.from_regex(r"[A-Za-z0-9_-]{0,40}", fullmatch=True),
            st.binary(min_size=0, max_size=40).map(lambda b: b.hex()),
        ).map(lambda pair: f"{pair[0]}:{pair[1]}"),
        max_size=3,
    ).map(",".join)
)
def test_seal_key_text_is_a_keyring_or_a_keyring_error_without_the_key(text: str) -> None:
    keyring, error = _refusal(parse_keyring, text)
    if error is not None:
        material = [part.partition(":")[2].strip() for part in re.split(r"[,\n]", text)]
        assert all(len(m) < 8 or _not_echoed(m, error) for m in material)
        return
    assert isinstance(keyring, Keyring)
    assert all(32 == len(key.material) for key in keyring.keys)
