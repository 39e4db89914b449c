"""Staff routes over provider pauses, on the admin listener.

As every staff route: a bearer session of an active staff member and a fresh step-up
(Elevation-Token), both checked by the database with every call. ``outboxctl providers``
does the same as the database operator, for when no step-up code can arrive.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter
from litestar.status_codes import HTTP_200_OK

from outbox.application.operator.pause_provider import ProviderCommand
from outbox.application.operator.require_elevation import ElevationCheck
from outbox.application.operator.services import OperatorServices
from outbox.entrypoints.http.caller import SECURITY, Caller, ElevationToken
from outbox.entrypoints.http.schemas import Body
from outbox.entrypoints.http.staff_problems import staff_responses
from outbox.entrypoints.wire.providers import ProviderChangeView, ProviderPausesView

Operator = NamedDependency[OperatorServices]
ProviderName = Annotated[str, Parameter(description="The provider's name: smtp, ses, brevo, …")]
_READ = ("unauthenticated", "staff-required", "step-up-required", "service-unavailable")
_WRITE = ("validation-error", *_READ)


class ProviderRequest(Body, frozen=True):
    """Why the provider is paused or resumed (kept in the audit; never personal data)."""

    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class StaffProvidersController(Controller):
    """Pause and resume a provider for every worker, audited."""

    path = "/platform-admin/providers"
    tags = ["staff"]  # noqa: RUF012 - Litestar reads a class attribute
    security = SECURITY

    @get("/", summary="The paused providers", responses=staff_responses(*_READ))
    async def pauses(
        self, operator: Operator, principal: Caller, elevation_token: ElevationToken = None
    ) -> ProviderPausesView:
        """Who paused each, when and why."""
        actor = await operator.require_elevation(
            ElevationCheck(principal=principal, elevation_token=elevation_token)
        )
        return ProviderPausesView.of(await operator.pauses.pauses(actor=actor))

    @post(
        "/{provider:str}/pause",
        status_code=HTTP_200_OK,
        summary="Stop every worker sending through a provider (audited)",
        responses=staff_responses(*_WRITE),
    )
    async def pause(
        self,
        operator: Operator,
        principal: Caller,
        provider: ProviderName,
        data: JSONBody[ProviderRequest],
        elevation_token: ElevationToken = None,
    ) -> ProviderChangeView:
        """Its messages wait, no attempt spent; ``changed`` is false if it was paused."""
        return await _change(
            operator, principal, elevation_token, provider, data.reason, pause=True
        )

    @post(
        "/{provider:str}/resume",
        status_code=HTTP_200_OK,
        summary="Let every worker send through a provider again (audited)",
        responses=staff_responses(*_WRITE),
    )
    async def resume(
        self,
        operator: Operator,
        principal: Caller,
        provider: ProviderName,
        data: JSONBody[ProviderRequest],
        elevation_token: ElevationToken = None,
    ) -> ProviderChangeView:
        """``changed`` is false if it was not paused."""
        return await _change(
            operator, principal, elevation_token, provider, data.reason, pause=False
        )


async def _change(
    operator: OperatorServices,
    principal: Caller,
    elevation_token: str | None,
    provider: str,
    reason: str,
    *,
    pause: bool,
) -> ProviderChangeView:
    actor = await operator.require_elevation(
        ElevationCheck(principal=principal, elevation_token=elevation_token)
    )
    command = ProviderCommand(actor=actor, provider=provider, reason=reason)
    use = operator.pause_provider if pause else operator.resume_provider
    changed = await use(command)
    return ProviderChangeView(provider=provider.strip(), paused=pause, changed=changed)
