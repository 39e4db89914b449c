"""POST /sessions: sign in with a password, get a bearer token."""

from __future__ import annotations

from litestar import Controller, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_201_CREATED

from application.identity.sign_in import SignInCommand
from entrypoints.http.caller import ClientAddress, Services
from entrypoints.http.problems import responses
from entrypoints.http.schemas import SessionCreated, SignInRequest


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
