"""Who is calling: the bearer token's principal, and the client address for rate limits."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import HeaderParameter

from outbox.application.identity.errors import Unauthenticated
from outbox.application.identity.principal import Principal
from outbox.application.identity.services import IdentityServices

SCHEME = "bearer "


def client_address(request: Request[Any, Any, State]) -> str:
    """The peer address (a proxy in front must be trusted to set it right)."""
    return request.client.host if request.client is not None else "unknown"


async def principal(request: Request[Any, Any, State]) -> Principal:
    """The signed-in caller; raises Unauthenticated without a valid bearer token."""
    header = request.headers.get("authorization", "")
    if not header.lower().startswith(SCHEME):
        raise Unauthenticated
    services: IdentityServices = request.app.state.services
    return await services.authenticate(header[len(SCHEME) :].strip())


SECURITY_SCHEME = "BearerToken"
SECURITY: list[dict[str, list[str]]] = [{SECURITY_SCHEME: []}]

# Handler parameter types: injected by name from the app's dependencies.
Services = NamedDependency[IdentityServices]
Caller = NamedDependency[Principal]
ClientAddress = NamedDependency[str]
ElevationToken = Annotated[
    str | None,
    HeaderParameter(
        name="Elevation-Token",
        required=False,
        description="The token of a fresh step-up of this session (POST /step-ups/confirmations).",
    ),
]
