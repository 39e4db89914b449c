"""SES error codes and botocore errors read into the taxonomy."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import botocore.exceptions
import pytest

from outbox.adapters.providers.ses.errors import classify_botocore_error, classify_client_error
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from tests.fakes.clock import EPOCH


def _response(code: object, status: int, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "Error": {"Code": code, "Message": "alice@example.com 493817"},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers or {}},
    }


@pytest.mark.parametrize(
    ("code", "status", "failure_class"),
    [
        ("ThrottlingException", 400, FailureClass.THROTTLED),
        ("SlowDown", 503, FailureClass.THROTTLED),
        ("ExpiredTokenException", 400, FailureClass.PROVIDER_SUSPENDED),
        ("AccessDeniedException", 403, FailureClass.PROVIDER_SUSPENDED),
        ("NotFoundException", 404, FailureClass.REJECTED),
        ("Unheard", 429, FailureClass.THROTTLED),
        ("Unheard", 502, FailureClass.UNAVAILABLE),
        ("Unheard", 409, FailureClass.REJECTED),
    ],
)
def test_codes_decide_then_the_status(code: str, status: int, failure_class: FailureClass) -> None:
    failure = classify_client_error(_response(code, status), EPOCH)

    assert (failure_class, code) == (failure.failure_class, failure.code)


def test_a_code_that_is_not_a_plain_word_is_not_repeated() -> None:
    failure = classify_client_error(_response("Bad 493817 alice@example.com", 400), EPOCH)

    assert DeliveryFailure(failure_class=FailureClass.REJECTED, code="ClientError") == failure


def test_throttling_reads_retry_after() -> None:
    failure = classify_client_error(
        _response("TooManyRequestsException", 429, {"retry-after": "7"}), EPOCH
    )

    assert EPOCH + timedelta(seconds=7) == failure.retry_after


def test_a_response_without_metadata_is_unavailable() -> None:
    assert FailureClass.UNAVAILABLE == classify_client_error({}, EPOCH).failure_class


@pytest.mark.parametrize(
    ("error", "failure_class"),
    [
        (botocore.exceptions.EndpointConnectionError(endpoint_url="x"), FailureClass.UNAVAILABLE),
        (botocore.exceptions.ConnectTimeoutError(endpoint_url="x"), FailureClass.UNAVAILABLE),
        (botocore.exceptions.SSLError(endpoint_url="x", error="e"), FailureClass.UNAVAILABLE),
        (botocore.exceptions.ReadTimeoutError(endpoint_url="x"), FailureClass.INDETERMINATE),
        (
            botocore.exceptions.ConnectionClosedError(endpoint_url="x"),
            FailureClass.INDETERMINATE,
        ),
        (botocore.exceptions.NoCredentialsError(), FailureClass.PROVIDER_SUSPENDED),
        (botocore.exceptions.ParamValidationError(report="bad"), FailureClass.REJECTED),
    ],
)
def test_botocore_errors_are_classified_by_when_they_happen(
    error: botocore.exceptions.BotoCoreError, failure_class: FailureClass
) -> None:
    failure = classify_botocore_error(error)

    assert failure is not None
    assert (failure_class, type(error).__name__) == (failure.failure_class, failure.code)


def test_an_unknown_botocore_error_is_left_to_the_worker() -> None:
    assert classify_botocore_error(botocore.exceptions.DataNotFoundError(data_path="x")) is None
