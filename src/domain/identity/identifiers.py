"""Sign-in identifiers: an email address or an E.164 phone number, in canonical form."""

from __future__ import annotations

import attrs

from domain.channels import Channel
from domain.destinations import channel_of, normalize


@attrs.frozen
class Identifier:
    """A canonical sign-in identifier and the channel that reaches it (email, or SMS)."""

    value: str = attrs.field(repr=False)
    channel: Channel

    @classmethod
    def parse(cls, raw: str) -> Identifier:
        """Parse an email address or E.164 number; raises InvalidDestination otherwise."""
        channel = channel_of(raw.strip())
        return cls(normalize(channel, raw), channel)

    @property
    def is_email(self) -> bool:
        """Whether the identifier is an email address."""
        return self.channel is Channel.EMAIL
