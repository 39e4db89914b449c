"""Organizations, and memberships that carry permissions."""

from __future__ import annotations

import enum
import re
import unicodedata
from datetime import datetime
from uuid import UUID

import attrs


class Permission(enum.StrEnum):
    """What a member may do in an organization."""

    MANAGE_ACCOUNT = "organization.account.manage"


MAX_NAME_LENGTH = 100
# An organization's name travels into invitation subjects and bodies, so it must not be able
# to carry a link, an address to write to, or text that changes how the rest reads. The
# checks run on the NFKC form, so full-width and other look-alike dots and colons count.
_SCHEME = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9+.-]*:(?=\S)")
# Labels and top-level domains in any script (``пример.рф``), and the ideographic full stops
# that browsers read as dots (NFKC keeps U+3002, and folds U+FF61 into it).
_HOST = re.compile(r"(?<![\w-])[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}(?!\w)")
_DOTS = str.maketrans({"\u3002": ".", "\uff61": ".", "\uff0e": "."})


def check_organization_name(name: str) -> str:
    """The name NFC-normalised and trimmed; raises ValueError naming the rule it breaks.

    1 to 100 characters; no control, format (bidirectional overrides) or unpaired surrogate
    characters; no URL, scheme (``javascript:``), host name (``evil.example``, ``пример.рф``,
    ``evil。com``) or email address. "Acme Inc.", "R&D: Team 7" and "Müller & Söhne GmbH" pass.
    """
    name = unicodedata.normalize("NFC", name).strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"an organization name has 1 to {MAX_NAME_LENGTH} characters")
    if not name.isprintable():
        raise ValueError("an organization name has no control or formatting characters")
    folded = unicodedata.normalize("NFKC", name).translate(_DOTS)
    if "@" in folded:
        raise ValueError("an organization name may not contain an email address or '@'")
    if _SCHEME.search(folded) or _HOST.search(folded) or "//" in folded:
        raise ValueError("an organization name may not contain a link or a host name")
    return name


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
    """A new organization and its founder's membership, which holds every permission.

    Raises ValueError for a name ``check_organization_name`` refuses.
    """
    name = check_organization_name(name)
    organization = Organization(id=organization_id, name=name, created_by=founder, created_at=now)
    membership = Membership(
        organization_id=organization_id,
        identity_id=founder,
        permissions=frozenset(Permission),
        created_at=now,
    )
    return organization, membership
