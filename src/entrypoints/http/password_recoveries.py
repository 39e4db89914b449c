"""POST /password-recoveries and /password-recoveries/confirmations."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecoveryCommand
from outbox.application.identity.request_password_recovery import RequestPasswordRecoveryCommand
from outbox.entrypoints.http.caller import ClientAddress, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import (
    ChallengeAccepted,
    PasswordRecoveryConfirmationRequest,
    PasswordRecoveryRequest,
)


class PasswordRecoveryController(Controller):
    """Password recovery, indistinguishable for known and unknown identifiers."""

    path = "/password-recoveries"
    tags = ["password-recovery"]  # noqa: RUF012 - Litestar reads a class attribute

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        summary="Ask for a recovery code",
        description=(
            "Known and unknown identifiers get the same status, body and headers. A failure"
            " after the account lookup is logged and answered with the same 201; a failure"
            " before it is a 503 (transient, with Retry-After) or a 500, alike for everyone."
            " The per-destination limit is silent; the per-client-address limit is a 429."
        ),
        responses=responses("validation-error", "rate-limited", "service-unavailable"),
    )
    async def request(
        self, data: JSONBody[PasswordRecoveryRequest], services: Services, client: ClientAddress
    ) -> ChallengeAccepted:
        """Open or resend a recovery challenge if the identifier is an account."""
        receipt = await services.request_password_recovery(
            RequestPasswordRecoveryCommand(identifier=data.identifier, client_address=client)
        )
        return ChallengeAccepted(challenge_expires_at=receipt.challenge_expires_at)

    @post(
        "/confirmations",
        status_code=HTTP_204_NO_CONTENT,
        summary="Set a new password with the recovery code; every session ends",
        responses=responses(
            "validation-error", "invalid-code", "rate-limited", "conflict", "service-unavailable"
        ),
    )
    async def confirm(
        self,
        data: JSONBody[PasswordRecoveryConfirmationRequest],
        services: Services,
        client: ClientAddress,
    ) -> None:
        """Set the password."""
        await services.confirm_password_recovery(
            ConfirmPasswordRecoveryCommand(
                identifier=data.identifier,
                code=data.code,
                new_password=data.new_password,
                client_address=client,
            )
        )
