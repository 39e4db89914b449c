"""The redaction processor: secrets masked by key and by shape, useful values kept."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from outbox.adapters.telemetry.redaction import MAX_TEXT, REDACTED, redact_event, redact_text

ENVELOPE = (
    "v1.20260101-example.QEFCQ0RFRkdISUpLTE1OTw.YGFiY2RlZmdoaWpr.W8L99E3QS5wRzlR9_PNYOBpiZ14HrA"
)
TOKEN = "tQ3v_8LrX2mK9pZ1wE7yU4iO6aS5dF0gH"


def _redact(**fields: Any) -> dict[str, Any]:
    return dict(redact_event(None, "info", dict(fields)))


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "new_password",
        "newPassword",
        "token",
        "lease_token",
        "secret",
        "plaintext",
        "envelope",
        "authorization",
        "Authorization",
        "api-key",
        "api_key",
        "key",
        "idempotency_key",
        "otp",
        "cookie",
    ],
)
def test_a_secret_bearing_key_loses_its_value(key: str) -> None:
    assert {key: REDACTED} == _redact(**{key: "s3cr3t value"})


def test_a_secret_key_is_redacted_whatever_its_type() -> None:
    assert {"token": REDACTED, "pin": REDACTED} == _redact(token=123456, pin=1234)


def test_a_nested_mapping_is_redacted_by_its_own_keys() -> None:
    redacted = _redact(headers={"Authorization": "Bearer abc", "Content-Type": "text/plain"})

    assert {"headers": {"Authorization": REDACTED, "Content-Type": "text/plain"}} == redacted


@pytest.mark.parametrize(
    ("key", "value", "masked"),
    [
        ("destination", "alice@example.com", "a***@example.com"),
        ("destination", "+34612345678", "+34***78"),
        ("destination", "not an address", "***"),
        ("recipient", "Bob@Example.COM", "B***@example.com"),
        ("to", "+14155550123", "+14***23"),
        ("email", "carol@example.org", "c***@example.org"),
        ("destination", "a***@example.com", "a***@example.com"),
        ("destination", "+34***78", "+34***78"),
    ],
)
def test_a_destination_key_is_masked(key: str, value: str, masked: str) -> None:
    assert {key: masked} == _redact(**{key: value})


def test_a_list_of_destinations_is_masked_item_by_item() -> None:
    assert {"to": ["a***@example.com", "+34***78"]} == _redact(
        to=["alice@example.com", "+34612345678"]
    )


@pytest.mark.parametrize(
    "value",
    [
        "Throttling",
        "MessageRejected",
        "timeout",
        "no_provider",
        "PROVIDER_SUSPENDED",
        "550",
        "401:unauthorized",
        "403:not_enough_credits",
        "5.7.1",
        "40P01",
        "",
    ],
)
def test_a_code_shaped_like_an_error_code_is_kept(value: str) -> None:
    assert {"code": value, "error_code": value} == _redact(code=value, error_code=value)


@pytest.mark.parametrize(
    "value", ["482913", "00482913", "4829", "AB12CD", "ab12cd", "ABCDEF", 482913]
)
def test_a_code_shaped_like_a_one_time_code_is_redacted(value: str | int) -> None:
    assert {"code": REDACTED, "error_code": REDACTED} == _redact(code=value, error_code=value)


def test_an_http_status_number_under_a_code_key_is_kept() -> None:
    assert {"status_code": 429} == _redact(status_code=429)


def test_harmless_fields_are_kept_as_they_are() -> None:
    fields = {
        "event": "message.published",
        "message_id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "available_at": "2026-11-30T04:27:41.123456+00:00",
        "attempt": 3,
        "retry_in": 0.125,
        "failure_class": "THROTTLED",
        "key_id": "20260101-example",
        "note": "HTTP 429 after 1234567 ms, version v1.2",
        "ok": True,
        "nothing": None,
    }

    assert fields == _redact(**fields)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sent to alice@example.com", "sent to a***@example.com"),
        ("sms to +34612345678 failed", "sms to +34***78 failed"),
        ("your code is 482913.", f"your code is {REDACTED}."),
        ("482913", REDACTED),
        ("Authorization: Bearer eyJhbGciOi.J9x-y_z", f"Authorization: Bearer {REDACTED}"),
        ("auth basic dXNlcjpwYXNzd29yZA==", f"auth basic {REDACTED}"),
        (f"envelope {ENVELOPE} bad", f"envelope v1.{REDACTED} bad"),
        (
            "open https://app.example/accept#token=abc123 now",
            f"open https://app.example/accept#{REDACTED} now",
        ),
        ("GET /reset?token=abc123&x=1", f"GET /reset?token={REDACTED}&x=1"),
        ('{"password": "hunter2"}', f'{{"password": "{REDACTED}"}}'),
        (f"token {TOKEN} rejected", f"token {REDACTED} rejected"),
    ],
)
def test_secrets_are_scrubbed_out_of_any_string(text: str, expected: str) -> None:
    assert expected == redact_text(text)
    assert {"note": expected} == _redact(note=text)


def test_a_uuid_or_a_long_word_is_not_mistaken_for_a_token() -> None:
    text = "message 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b in outbox_oldest_due_age_seconds_total"

    assert text == redact_text(text)


def test_an_exception_value_is_rendered_as_its_name_only() -> None:
    assert {"error": "KeyError"} == _redact(error=KeyError("alice@example.com"))


def test_other_objects_are_rendered_as_scrubbed_text() -> None:
    message_id = uuid.UUID("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")

    class Account:
        def __str__(self) -> str:
            return "Account(alice@example.com)"

    assert {"id": str(message_id), "account": "Account(a***@example.com)"} == _redact(
        id=message_id, account=Account()
    )


def test_the_standard_keys_come_first() -> None:
    redacted = _redact(a=1, event="x.y", level="info", timestamp="t", logger="outbox")

    assert ["timestamp", "level", "logger", "event", "a"] == list(redacted)


def test_a_very_long_string_is_cut_before_it_is_scrubbed() -> None:
    text = "x" * (MAX_TEXT + 10) + " alice@example.com"

    redacted = redact_text(text)

    assert "x" * MAX_TEXT + "…[truncated]" == redacted
