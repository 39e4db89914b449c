"""Create an organization; its founder gets every permission."""

from __future__ import annotations

from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Ids, Telemetry
from outbox.domain.identity.organizations import Organization, found_organization


@attrs.frozen(kw_only=True)
class CreateOrganizationCommand:
    """The signed-in founder and the organization's name."""

    identity_id: UUID
    name: str


@attrs.frozen(kw_only=True)
class CreateOrganization:
    """Inserts the organization and the founder's membership in one transaction, within the
    limit of organizations per account."""

    transactions: IdentityTransactions
    limits: RequestLimits
    clock: Clock
    ids: Ids
    telemetry: Telemetry

    async def __call__(self, command: CreateOrganizationCommand) -> Organization:
        """The new organization; raises InvalidField for a name that breaks the naming rule,
        RateLimited when the account founded its share for now."""
        now = self.clock.now()
        try:
            organization, membership = found_organization(
                organization_id=self.ids.new_id(),
                name=command.name,
                founder=command.identity_id,
                now=now,
            )
        except ValueError as error:
            raise InvalidField("name", str(error)) from None
        await self.limits.organization_creation(command.identity_id, now)
        async with self.transactions.begin() as uow:
            await uow.identity.add_organization(organization, membership)
            await uow.commit()
        self.telemetry.event(
            "identity.organization.created",
            organization_id=str(organization.id),
            identity_id=str(command.identity_id),
        )
        return organization
