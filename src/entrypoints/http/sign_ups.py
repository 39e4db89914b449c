"""POST /sign-ups and /sign-ups/confirmations."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from outbox.application.identity.confirm_sign_up import ConfirmSignUpCommand
from outbox.application.identity.request_sign_up import RequestSignUpCommand
from outbox.entrypoints.http.caller import ClientAddress, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import (
    ChallengeAccepted,
    SignUpConfirmationRequest,
    SignUpRequest,
)


class SignUpController(Controller):
    """Sign-ups: register an identifier and prove it with a code."""

    path = "/sign-ups"
    tags = ["sign-up"]  # noqa: RUF012 - Litestar reads a class attribute

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        summary="Sign up; a code is queued for the identifier",
        description=(
            "Answers 201 with the challenge expiry only (never whether anything was sent or"
            " whether the identifier exists). Again while the challenge is open: the same"
            " challenge with a new code; the older unsent message is withdrawn. No password"
            " here: it is chosen at the confirmation, by whoever holds the code, so a stranger"
            " who signs the same address up cannot choose the owner's password."
        ),
        responses=responses("validation-error", "rate-limited", "conflict", "service-unavailable"),
    )
    async def sign_up(
        self, data: JSONBody[SignUpRequest], services: Services, client: ClientAddress
    ) -> ChallengeAccepted:
        """Open or resend the sign-up challenge."""
        receipt = await services.request_sign_up(
            RequestSignUpCommand(identifier=data.identifier, client_address=client)
        )
        return ChallengeAccepted(challenge_expires_at=receipt.challenge_expires_at)

    @post(
        "/confirmations",
        status_code=HTTP_204_NO_CONTENT,
        summary="Confirm a sign-up with its code and choose the password",
        description=(
            "The right code verifies the identifier and sets the password given here. Five"
            " wrong codes lock the challenge (its unsent message is withdrawn); a new sign-up"
            " request opens another. A daily budget of wrong codes per account across"
            " challenges: once it is used up every code is refused until the day ends (UTC)."
        ),
        responses=responses(
            "validation-error",
            "invalid-code",
            "identifier-taken",
            "rate-limited",
            "conflict",
            "service-unavailable",
        ),
    )
    async def confirm(
        self,
        data: JSONBody[SignUpConfirmationRequest],
        services: Services,
        client: ClientAddress,
    ) -> None:
        """Verify the identifier and set its password."""
        await services.confirm_sign_up(
            ConfirmSignUpCommand(
                identifier=data.identifier,
                code=data.code,
                password=data.password,
                client_address=client,
            )
        )
