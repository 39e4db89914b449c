"""How SES refusals and botocore errors map to the failure taxonomy."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import botocore.exceptions

from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.retry_after import parse_retry_after

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
        "LimitExceededException",
        "RequestLimitExceeded",
        "SlowDown",
    }
)
# The account cannot send at all (suspended, paused, or its credentials are refused):
# pause the provider rather than burn every message's attempts.
ACCOUNT_CODES = frozenset(
    {
        "AccountSuspendedException",
        "SendingPausedException",
        "AccessDeniedException",
        "AccessDenied",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "SignatureDoesNotMatch",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "ExpiredToken",
        "MissingAuthenticationTokenException",
    }
)
REJECTED_CODES = frozenset(
    {
        "MessageRejected",
        "MailFromDomainNotVerifiedException",
        "BadRequestException",
        "NotFoundException",
        "ValidationException",
        "InvalidParameterValue",
        "SerializationException",
    }
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z_]{0,63}", re.ASCII)  # no digits: codes are digits


def classify_client_error(response: Mapping[str, Any], now: datetime) -> DeliveryFailure:
    """Classify an AWS error response (``ClientError.response``) by its code, then status.

    Known codes decide first; an unknown code falls back on the HTTP status: 429
    THROTTLED, 5xx UNAVAILABLE, other 4xx REJECTED.
    """
    # Whatever shape the parsed response has (a stand-in or proxy may answer anything), it
    # is read defensively: a field of the wrong type counts as absent.
    error = _mapping(response.get("Error"))
    metadata = _mapping(response.get("ResponseMetadata"))
    raw_code = error.get("Code")
    code = raw_code if isinstance(raw_code, str) and _TOKEN.fullmatch(raw_code) else "ClientError"
    status = metadata.get("HTTPStatusCode")
    status = status if isinstance(status, int) and not isinstance(status, bool) else 0
    hint = _mapping(metadata.get("HTTPHeaders")).get("retry-after")
    if code in THROTTLING_CODES or status == 429:
        retry_after = parse_retry_after(hint if isinstance(hint, str) else None, now)
        return DeliveryFailure(
            failure_class=FailureClass.THROTTLED, code=code, retry_after=retry_after
        )
    if code in ACCOUNT_CODES:
        return DeliveryFailure(failure_class=FailureClass.PROVIDER_SUSPENDED, code=code)
    if code in REJECTED_CODES:
        return DeliveryFailure(failure_class=FailureClass.REJECTED, code=code)
    if status >= 500 or status == 0:
        return DeliveryFailure(failure_class=FailureClass.UNAVAILABLE, code=code)
    return DeliveryFailure(failure_class=FailureClass.REJECTED, code=code)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def classify_botocore_error(error: botocore.exceptions.BotoCoreError) -> DeliveryFailure | None:
    """Classify a botocore error raised without an AWS response, or None if unknown.

    Connection errors (refused, connect timeout, DNS, TLS, proxy) happen before the
    request is sent: UNAVAILABLE. Read timeouts and connections closed before the
    response: the request may have been processed, INDETERMINATE. Missing credentials
    are account-wide: PROVIDER_SUSPENDED. A request botocore refuses to build is REJECTED.
    """
    code = type(error).__name__
    if isinstance(error, botocore.exceptions.ConnectionError):
        return DeliveryFailure(failure_class=FailureClass.UNAVAILABLE, code=code)
    if isinstance(error, botocore.exceptions.HTTPClientError):
        return DeliveryFailure(failure_class=FailureClass.INDETERMINATE, code=code)
    if isinstance(
        error,
        botocore.exceptions.NoCredentialsError | botocore.exceptions.PartialCredentialsError,
    ):
        return DeliveryFailure(failure_class=FailureClass.PROVIDER_SUSPENDED, code=code)
    if isinstance(error, botocore.exceptions.ParamValidationError):
        return DeliveryFailure(failure_class=FailureClass.REJECTED, code=code)
    return None
