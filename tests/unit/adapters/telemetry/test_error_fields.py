"""Exceptions become a name and a code in the event, never a message or a traceback."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from outbox.adapters.telemetry.error_fields import error_code, exception_as_fields
from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.errors import StoreUnavailable
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass


class ProviderCrashed(Exception):
    """Carries a code like a driver error does."""

    sqlstate = "08006"


def _fail(error: BaseException) -> NoReturn:
    raise error


def _store_down() -> NoReturn:
    try:
        _fail(ConnectionError("host db.internal refused 482913"))
    except ConnectionError as cause:
        raise StoreUnavailable("08001") from cause


def _fields(**event: Any) -> dict[str, Any]:
    return dict(exception_as_fields(None, "error", dict(event)))


def test_exc_info_true_names_the_exception_being_handled() -> None:
    try:
        _fail(ProviderCrashed("code 482913 for alice@example.com"))
    except ProviderCrashed:
        fields = _fields(event="x.y", exc_info=True)

    assert {"event": "x.y", "error": "ProviderCrashed", "error_code": "08006"} == fields


def test_an_exception_instance_or_tuple_is_named_too() -> None:
    error = KeyError("alice@example.com")
    try:
        _fail(error)
    except KeyError:
        info = sys.exc_info()

    assert {"error": "KeyError"} == _fields(exc_info=error)
    assert {"error": "KeyError"} == _fields(exc_info=info)


def test_the_cause_is_named_without_its_message() -> None:
    try:
        _store_down()
    except StoreUnavailable:
        fields = _fields(exc_info=True)

    assert {
        "error": "StoreUnavailable",
        "error_code": "08001",
        "error_cause": "ConnectionError",
    } == (fields)


def test_a_pre_rendered_traceback_is_dropped() -> None:
    fields = _fields(
        event="x.y", exception="Traceback ... secret=482913", exc_text="...", stack="..."
    )

    assert {"event": "x.y"} == fields


def test_an_event_without_an_exception_is_left_alone() -> None:
    assert {"event": "x.y", "error": "Mine"} == _fields(event="x.y", error="Mine", exc_info=False)


def test_a_caller_supplied_error_name_is_kept() -> None:
    try:
        _fail(ValueError("nope"))
    except ValueError:
        fields = _fields(error="RenderFailed", exc_info=True)

    assert "RenderFailed" == fields["error"]


def test_the_code_comes_from_a_delivery_failure_or_a_code_attribute() -> None:
    failed = DeliveryFailed(DeliveryFailure(failure_class=FailureClass.THROTTLED, code="429"))

    assert "429" == error_code(failed)
    assert "53300" == error_code(StoreUnavailable("53300"))
    assert "" == error_code(ValueError("no code"))
