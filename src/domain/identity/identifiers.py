"""Sign-in identifiers: an email address or an E.164 phone number, in canonical form.

Caller input becomes one through ``outbox.application.identity.inputs.parse_identifier``, the one
normalisation used for uniqueness, limits and delivery.
"""

from __future__ import annotations

import attrs

from outbox.domain.channels import Channel


@attrs.frozen
class Identifier:
    """A canonical sign-in identifier and the channel that reaches it (email, or SMS)."""

    value: str = attrs.field(repr=False)
    channel: Channel

    @property
    def is_email(self) -> bool:
        """Whether the identifier is an email address."""
        return self.channel is Channel.EMAIL
