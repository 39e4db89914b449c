"""RFC 9457 problem details: one stable type URI per problem, and the exception map."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.plugins.problem_details import ProblemDetailsException

from outbox.application.errors import InvalidField, InvalidRequest, StoreUnavailable
from outbox.application.identity.errors import (
    Conflict,
    IdentifierTaken,
    InvalidCode,
    InvalidCredentials,
    InvalidToken,
    InvitationForAnotherAddress,
    InvitationLimitReached,
    InvitationNotPending,
    MissingPermission,
    NotFound,
    RateLimited,
    StepUpRequired,
    Unauthenticated,
)
from outbox.application.ports import Telemetry

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:outbox:problem:"
UNAVAILABLE_RETRY_AFTER = 5  # seconds a client waits after a transient database failure


class FieldError(msgspec.Struct, frozen=True):
    """One invalid request field."""

    field: str
    message: str


class Problem(msgspec.Struct, frozen=True, omit_defaults=True):
    """An RFC 9457 problem details object (the schema of every error response)."""

    type: str
    title: str
    status: int
    detail: str = ""
    errors: list[FieldError] | None = None
    permission: str | None = None


# status, title and description of every problem type; the key is the URN's last part.
PROBLEMS: dict[str, tuple[int, str]] = {
    "validation-error": (400, "The request is not valid"),
    "invalid-code": (400, "The code is wrong or no longer valid"),
    "invalid-token": (400, "The token is unknown, used or expired"),
    "unauthenticated": (401, "A valid bearer token is required"),
    "invalid-credentials": (401, "The identifier or password is wrong"),
    "permission-required": (403, "The caller lacks the permission this needs"),
    "invitation-for-another-address": (
        403,
        "The invitation was sent to an address this account has not verified",
    ),
    "step-up-required": (403, "A fresh step-up is required: send a valid Elevation-Token"),
    "not-found": (404, "No such resource"),
    "method-not-allowed": (405, "The method is not allowed here"),
    "identifier-taken": (409, "Another account holds this identifier"),
    "invitation-not-pending": (409, "The invitation was already accepted or revoked"),
    "invitation-limit-reached": (409, "The organization has too many pending invitations"),
    "conflict": (409, "A concurrent request changed the same data; try again"),
    "payload-too-large": (413, "The request body is larger than 16 KiB"),
    "unsupported-media-type": (415, "The request body must be application/json"),
    "rate-limited": (429, "Too many requests; retry after the given delay"),
    "internal-error": (500, "The server failed to handle the request"),
    "service-unavailable": (503, "The service is temporarily unavailable; retry later"),
}
# The problem a framework-raised HTTP error (no route, wrong method, unreadable body…) becomes.
STATUS_NAMES = {
    400: "validation-error",
    401: "unauthenticated",
    403: "permission-required",
    404: "not-found",
    405: "method-not-allowed",
    413: "payload-too-large",
    415: "unsupported-media-type",
    429: "rate-limited",
    500: "internal-error",
    503: "service-unavailable",
}


def problem(
    name: str,
    *,
    detail: str = "",
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> ProblemDetailsException:
    """The exception that renders problem ``name``."""
    status, title = PROBLEMS[name]
    return ProblemDetailsException(
        type_=TYPE_PREFIX + name,
        title=title,
        status_code=status,
        detail=detail,
        headers=headers,
        extra=extra,
    )


def _seconds(error: RateLimited) -> str:
    return str(max(1, math.ceil(error.retry_after.total_seconds())))


_NAMED_FIELD = re.compile(r"field `([^`]+)`|at `\$\.([A-Za-z0-9_]+)")


def _field(item: Mapping[str, Any]) -> str:
    """The request field an error is about; msgspec names it in the message for whole-body
    errors (a missing or unknown field), which Litestar reports under ``data``."""
    key = str(item.get("key") or "")
    if key and key != "data":
        return key
    named = _NAMED_FIELD.search(str(item.get("message", "")))
    if named is not None:
        return named.group(1) or named.group(2)
    return key or str(item.get("source") or "body")


def _validation(error: ValidationException) -> ProblemDetailsException:
    found = error.extra if isinstance(error.extra, list) else []
    errors = [
        {"field": _field(item), "message": str(item.get("message", ""))}
        for item in found
        if isinstance(item, Mapping)
    ]
    return problem("validation-error", detail=str(error.detail), extra={"errors": errors})


def _http(error: HTTPException) -> ProblemDetailsException:
    name = STATUS_NAMES.get(error.status_code)
    if name is None:
        return ProblemDetailsException(status_code=error.status_code, title=str(error.detail))
    return problem(name, detail=str(error.detail), headers=error.headers)


EXCEPTION_MAP: dict[type[Exception], Callable[[Any], ProblemDetailsException]] = {
    ValidationException: _validation,
    HTTPException: _http,
    InvalidField: lambda e: problem(
        "validation-error",
        detail=f"{e.field}: {e.problem}",
        extra={"errors": [{"field": e.field, "message": e.problem}]},
    ),
    InvalidRequest: lambda _: problem("validation-error"),
    InvalidCode: lambda _: problem("invalid-code"),
    InvalidToken: lambda _: problem("invalid-token"),
    Unauthenticated: lambda _: problem(
        "unauthenticated", headers={"WWW-Authenticate": 'Bearer realm="outbox"'}
    ),
    InvalidCredentials: lambda _: problem("invalid-credentials"),
    StepUpRequired: lambda _: problem("step-up-required"),
    MissingPermission: lambda e: problem("permission-required", extra={"permission": e.permission}),
    InvitationForAnotherAddress: lambda _: problem("invitation-for-another-address"),
    NotFound: lambda _: problem("not-found"),
    IdentifierTaken: lambda _: problem("identifier-taken"),
    InvitationNotPending: lambda _: problem("invitation-not-pending"),
    InvitationLimitReached: lambda _: problem("invitation-limit-reached"),
    Conflict: lambda _: problem("conflict"),
    RateLimited: lambda e: problem("rate-limited", headers={"Retry-After": _seconds(e)}),
    StoreUnavailable: lambda _: problem(
        "service-unavailable", headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER)}
    ),
}


def internal_error_handler(
    telemetry: Telemetry,
) -> Callable[[Request[Any, Any, Any], Exception], Response[Any]]:
    """A handler for anything unexpected: logged by name only, answered with a bare 500."""

    def handle(request: Request[Any, Any, Any], error: Exception) -> Response[Any]:
        telemetry.event(
            "http.unexpected_error",
            level="error",
            path=request.url.path,
            error=type(error).__name__,
            code=str(getattr(error, "sqlstate", "") or ""),
        )
        return problem("internal-error").to_response(request)

    return handle


# Problems any route may answer: the body checks of entrypoints/http/hygiene.py, and a bug.
EVERY_ROUTE = ("payload-too-large", "unsupported-media-type", "internal-error")


def responses(*names: str) -> dict[int, ResponseSpec]:
    """OpenAPI entries documenting the given problems and those of every route."""
    grouped: dict[int, list[str]] = {}
    for name in (*names, *EVERY_ROUTE):
        grouped.setdefault(PROBLEMS[name][0], []).append(name)
    return {
        status: ResponseSpec(
            data_container=Problem,
            description="; ".join(f"{TYPE_PREFIX}{n}: {PROBLEMS[n][1]}" for n in found),
            media_type=PROBLEM_MEDIA_TYPE,
            generate_examples=False,
        )
        for status, found in grouped.items()
    }
