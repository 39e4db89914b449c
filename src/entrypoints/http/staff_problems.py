"""The problem types of the staff routes (RFC 9457), beside the shared ones in problems.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar.openapi.datastructures import ResponseSpec
from litestar.plugins.problem_details import ProblemDetailsException

from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.events.errors import DeadLetterNotFound, EventNotFound, EventRepairRefused
from outbox.application.staff import (
    IdempotencyKeyReused,
    RequestInProgress,
    StaffRequired,
    StepUpRequired,
)
from outbox.entrypoints.http.problems import (
    EVERY_ROUTE,
    PROBLEM_MEDIA_TYPE,
    PROBLEMS,
    TYPE_PREFIX,
    Problem,
    problem,
)

STAFF_PROBLEMS: dict[str, tuple[int, str]] = {
    "staff-required": (403, "The caller is not an active staff member"),
    "reissue-refused": (409, "The dead letter cannot be sent again; reason says why"),
    "repair-refused": (409, "The dead letter was already released or republished; reason says"),
    "request-in-progress": (409, "A request with this Idempotency-Key is running; retry later"),
    "idempotency-key-reused": (422, "The Idempotency-Key was already used for another request"),
}


def staff_problem(name: str, *, extra: dict[str, Any] | None = None) -> ProblemDetailsException:
    """The exception that renders staff problem ``name``."""
    status, title = STAFF_PROBLEMS[name]
    return ProblemDetailsException(
        type_=TYPE_PREFIX + name, title=title, status_code=status, extra=extra
    )


STAFF_EXCEPTION_MAP: dict[type[Exception], Callable[[Any], ProblemDetailsException]] = {
    StaffRequired: lambda _: staff_problem("staff-required"),
    StepUpRequired: lambda _: problem("step-up-required"),
    DeadLetterRefused: lambda e: staff_problem(
        "reissue-refused", extra={"reason": e.refusal.value}
    ),
    RequestInProgress: lambda _: staff_problem("request-in-progress"),
    IdempotencyKeyReused: lambda _: staff_problem("idempotency-key-reused"),
    MessageNotFound: lambda _: problem("not-found"),
    EventRepairRefused: lambda e: staff_problem(
        "repair-refused", extra={"reason": f"already_{e.resolution}"}
    ),
    DeadLetterNotFound: lambda _: problem("not-found"),
    EventNotFound: lambda _: problem("not-found"),
}


def staff_responses(*names: str) -> dict[int, ResponseSpec]:
    """OpenAPI entries documenting the given shared or staff problems (grouped by status)."""
    known = {**PROBLEMS, **STAFF_PROBLEMS}
    grouped: dict[int, list[str]] = {}
    for name in (*names, *EVERY_ROUTE):
        grouped.setdefault(known[name][0], []).append(name)
    return {
        status: ResponseSpec(
            data_container=Problem,
            description="; ".join(f"{TYPE_PREFIX}{n}: {known[n][1]}" for n in found),
            media_type=PROBLEM_MEDIA_TYPE,
            generate_examples=False,
        )
        for status, found in grouped.items()
    }
