"""Organizations, and memberships that carry permissions."""

from __future__ import annotations

import enum
from datetime import datetime
from uuid import UUID

import attrs


class Permission(enum.StrEnum):
    """What a member may do in an organization."""

    MANAGE_ACCOUNT = "organization.account.manage"


MAX_NAME_LENGTH = 200


@attrs.frozen(kw_only=True)
class Organization:
    """A group of identities that can invite others."""

    id: UUID
    name: str
    created_by: UUID
    created_at: datetime


@attrs.frozen(kw_only=True)
class Membership:
    """One identity's place in one organization, with its permissions."""

    organization_id: UUID
    identity_id: UUID
    permissions: frozenset[Permission] = attrs.field(factory=frozenset)
    created_at: datetime

    def allows(self, permission: Permission) -> bool:
        """Whether the member holds ``permission``."""
        return permission in self.permissions


def found_organization(
    *,
    organization_id: UUID,
    name: str,
    founder: UUID,
    now: datetime,
) -> tuple[Organization, Membership]:
    """A new organization and its founder's membership, which holds every permission."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"an organization name has 1 to {MAX_NAME_LENGTH} characters")
    if not name.isprintable():
        raise ValueError("an organization name has no control or unpaired surrogate characters")
    organization = Organization(id=organization_id, name=name, created_by=founder, created_at=now)
    membership = Membership(
        organization_id=organization_id,
        identity_id=founder,
        permissions=frozenset(Permission),
        created_at=now,
    )
    return organization, membership
