"""Sessions: sign in with a password for a bearer token (POST /sessions), sign out
(DELETE /sessions/current), and end every session of the account (DELETE /sessions)."""

from __future__ import annotations

from litestar import Controller, delete, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED

from outbox.application.identity.sign_in import SignInCommand
from outbox.entrypoints.http.caller import SECURITY, Caller, ClientAddress, Services
from outbox.entrypoints.http.problems import responses
from outbox.entrypoints.http.schemas import SessionCreated, SignInRequest


class SessionController(Controller):
    """Sessions: bearer tokens for verified identities."""

    path = "/sessions"
    tags = ["sessions"]  # noqa: RUF012 - Litestar reads a class attribute

    @post(
        "/",
        status_code=HTTP_201_CREATED,
        summary="Sign in",
        responses=responses(
            "validation-error", "invalid-credentials", "rate-limited", "service-unavailable"
        ),
    )
    async def sign_in(
        self, data: JSONBody[SignInRequest], services: Services, client: ClientAddress
    ) -> SessionCreated:
        """Start a session."""
        grant = await services.sign_in(
            SignInCommand(identifier=data.identifier, password=data.password, client_address=client)
        )
        return SessionCreated(token=grant.token, expires_at=grant.expires_at)

    @delete(
        "/current",
        summary="Sign out: end this session",
        description="The bearer token (and any elevation of its session) stops working.",
        security=SECURITY,
        responses=responses("unauthenticated", "service-unavailable"),
    )
    async def sign_out(self, services: Services, principal: Caller) -> None:
        """End the caller's session."""
        await services.sign_out(principal)

    @delete(
        "/",
        summary="End every session of the account, this one too",
        description=(
            "For an owner who fears a stolen token; no step-up is needed, since it only takes"
            " access away. Every verified identifier of the account gets a security notice."
        ),
        security=SECURITY,
        responses=responses("unauthenticated", "service-unavailable"),
    )
    async def revoke_all(self, services: Services, principal: Caller) -> None:
        """End every session of the caller's account."""
        await services.revoke_sessions(principal)
