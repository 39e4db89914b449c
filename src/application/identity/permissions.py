"""The organization permission check: may this identity manage the organization's accounts?"""

from __future__ import annotations

from uuid import UUID

from outbox.application.identity.errors import MissingPermission, NotFound
from outbox.application.identity.ports import IdentityStore
from outbox.domain.identity.organizations import Organization, Permission


async def require_permission(
    store: IdentityStore, *, organization_id: UUID, identity_id: UUID
) -> Organization:
    """The organization, if ``identity_id`` may manage its accounts; else MissingPermission.

    A non-member is refused the same way whether or not the organization exists.
    """
    membership = await store.find_membership(
        organization_id=organization_id, identity_id=identity_id
    )
    if membership is None or not membership.allows(Permission.MANAGE_ACCOUNT):
        raise MissingPermission(Permission.MANAGE_ACCOUNT.value)
    organization = await store.find_organization(organization_id)
    if organization is None:
        raise NotFound
    return organization
