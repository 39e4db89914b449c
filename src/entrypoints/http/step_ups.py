"""POST /step-ups and /step-ups/confirmations, signed in."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED

from outbox.application.identity.confirm_step_up import ConfirmStepUpCommand
from outbox.application.identity.request_step_up import RequestStepUpCommand
from outbox.entrypoints.http.caller import SECURITY, Caller, ClientAddress, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import (
    ChallengeAccepted,
    ElevationCreated,
    StepUpConfirmationRequest,
)


class StepUpController(Controller):
    """Step-up: prove presence again with a code for a short-lived elevation token."""

    path = "/step-ups"
    tags = ["step-up"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        summary="Ask for a step-up code, queued to the first verified identifier",
        description="Nothing is sent before the challenge commits: the code is only enqueued.",
        responses=responses("unauthenticated", "rate-limited", "conflict", "service-unavailable"),
    )
    async def request(
        self, services: Services, client: ClientAddress, principal: Caller
    ) -> ChallengeAccepted:
        """Open or resend the step-up challenge."""
        receipt = await services.request_step_up(
            RequestStepUpCommand(principal=principal, client_address=client)
        )
        return ChallengeAccepted(challenge_expires_at=receipt.challenge_expires_at)

    @post(
        "/confirmations",
        status_code=HTTP_201_CREATED,
        summary="Confirm the step-up; answers an elevation token",
        responses=responses(
            "validation-error",
            "unauthenticated",
            "invalid-code",
            "rate-limited",
            "conflict",
            "service-unavailable",
        ),
    )
    async def confirm(
        self,
        data: JSONBody[StepUpConfirmationRequest],
        services: Services,
        client: ClientAddress,
        principal: Caller,
    ) -> ElevationCreated:
        """Grant an elevation."""
        grant = await services.confirm_step_up(
            ConfirmStepUpCommand(principal=principal, code=data.code, client_address=client)
        )
        return ElevationCreated(elevation_token=grant.token, expires_at=grant.expires_at)
