"""Links that carry a token in their fragment, for invitations and magic links."""

from __future__ import annotations

import attrs

from outbox.domain.purposes import Purpose


@attrs.frozen(kw_only=True)
class LinkBases:
    """The configured base URL per link purpose; None means not configured."""

    invitation: str | None = None
    magic_link: str | None = None

    def base_for(self, purpose: Purpose) -> str | None:
        """The base URL for ``purpose``'s link, or None if it is not configured."""
        if purpose is Purpose.INVITATION:
            return self.invitation
        if purpose is Purpose.MAGIC_LINK:
            return self.magic_link
        return None


def link_with_token(base: str, token: str) -> str:
    """Put ``token`` in the URL fragment, which browsers never send to servers or logs."""
    return f"{base}#token={token}"
