"""The shared reading of HTTP failures: what was sent, what the status says, when to retry."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from outbox.adapters.providers.http_failures import (
    failure_for_status,
    failure_for_transport_error,
    json_object,
    parse_delay,
    parse_rate_limit_reset,
    provider_message_id,
    safe_token,
)
from outbox.domain.delivery.failures import FailureClass
from tests.fakes.clock import EPOCH

REQUEST = httpx.Request("POST", "https://api.example.test/send")


@pytest.mark.parametrize(
    "error",
    [
        httpx.ConnectError("refused", request=REQUEST),
        httpx.ConnectTimeout("slow", request=REQUEST),
        httpx.PoolTimeout("busy", request=REQUEST),
        httpx.ProxyError("proxy"),
        httpx.UnsupportedProtocol("ftp"),
        httpx.LocalProtocolError("bad header"),
    ],
)
def test_errors_before_the_request_left_are_unavailable(error: httpx.TransportError) -> None:
    failure = failure_for_transport_error(error)

    assert (FailureClass.UNAVAILABLE, type(error).__name__) == (failure.failure_class, failure.code)


@pytest.mark.parametrize(
    "error",
    [
        httpx.ReadTimeout("slow", request=REQUEST),
        httpx.WriteTimeout("slow", request=REQUEST),
        httpx.ReadError("reset", request=REQUEST),
        httpx.WriteError("reset", request=REQUEST),
        httpx.RemoteProtocolError("closed", request=REQUEST),
    ],
)
def test_errors_after_the_request_may_have_left_are_indeterminate(
    error: httpx.TransportError,
) -> None:
    assert FailureClass.INDETERMINATE == failure_for_transport_error(error).failure_class


@pytest.mark.parametrize(
    ("status", "failure_class"),
    [
        (429, FailureClass.THROTTLED),
        (401, FailureClass.PROVIDER_SUSPENDED),
        (403, FailureClass.PROVIDER_SUSPENDED),
        (408, FailureClass.UNAVAILABLE),
        (500, FailureClass.UNAVAILABLE),
        (504, FailureClass.UNAVAILABLE),
        (400, FailureClass.REJECTED),
        (404, FailureClass.REJECTED),
        (422, FailureClass.REJECTED),
        (302, FailureClass.UNAVAILABLE),
    ],
)
def test_statuses_map_to_the_taxonomy(status: int, failure_class: FailureClass) -> None:
    failure = failure_for_status(status)

    assert (failure_class, str(status)) == (failure.failure_class, failure.code)


def test_only_throttling_keeps_a_retry_hint() -> None:
    later = EPOCH + timedelta(seconds=9)

    assert later == failure_for_status(429, retry_after=later).retry_after
    assert failure_for_status(503, retry_after=later).retry_after is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("30", 30),
        ("2.1", 3),
        (45, 45),
        (0.5, 1),
        ("Thu, 01 Jan 2026 12:01:00 GMT", 60),
        ("-1", None),
        ("soon", None),
        ("90000", None),
        (True, None),
        (None, None),
        (float("nan"), None),
    ],
)
def test_delays_accept_retry_after_and_plain_seconds(value: object, seconds: int | None) -> None:
    expected = None if seconds is None else EPOCH + timedelta(seconds=seconds)

    assert expected == parse_delay(value, EPOCH)


def test_a_rate_limit_reset_may_be_a_timestamp_or_a_delay() -> None:
    in_a_minute = str(int(EPOCH.timestamp()) + 60)

    assert EPOCH + timedelta(seconds=60) == parse_rate_limit_reset(in_a_minute, EPOCH)
    assert EPOCH + timedelta(seconds=60) == parse_rate_limit_reset("60", EPOCH)
    assert parse_rate_limit_reset(str(int(EPOCH.timestamp()) - 5), EPOCH) is None
    assert parse_rate_limit_reset("later", EPOCH) is None


def test_only_short_alphabetic_tokens_pass_into_codes() -> None:
    assert "not_enough_credits" == safe_token("not_enough_credits")
    assert safe_token("493817") is None
    assert safe_token("code493817") is None
    assert safe_token("alice@example.com") is None
    assert safe_token("a" * 65) is None
    assert safe_token(42) is None


def test_bodies_that_are_not_json_objects_read_as_empty() -> None:
    assert {} == json_object(httpx.Response(200, content=b"<html>"))
    assert {} == json_object(httpx.Response(200, json=[1, 2]))
    assert {"a": 1} == json_object(httpx.Response(200, json={"a": 1}))


def test_provider_ids_are_text_or_empty() -> None:
    assert "17" == provider_message_id(17)
    assert "<id@host>" == provider_message_id("<id@host>")
    assert "" == provider_message_id(None)
    assert "" == provider_message_id(True)
    assert 255 == len(provider_message_id("x" * 300))
