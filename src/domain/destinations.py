"""Destinations: the one definition of what a valid address is and how it is masked."""

from __future__ import annotations

import re
import unicodedata

from outbox.domain.channels import Channel
from outbox.domain.errors import InvalidDestination

# Deliberately narrower than RFC 5322: what providers accept and people type.
_EMAIL = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+",
    re.ASCII,
)
_E164 = re.compile(r"\+[1-9][0-9]{6,14}", re.ASCII)
_MAX_EMAIL = 254
_MASK = "***"


def is_email(value: str) -> bool:
    """Whether ``value`` is an email address we accept."""
    return len(value) <= _MAX_EMAIL and _EMAIL.fullmatch(value) is not None


def is_e164(value: str) -> bool:
    """Whether ``value`` is an E.164 phone number (``+`` and 7 to 15 digits)."""
    return _E164.fullmatch(value) is not None


def normalize(channel: Channel, value: str) -> str:
    """Return the canonical form of a destination for ``channel`` or raise InvalidDestination.

    An email address is NFC-normalised and lower-cased as a whole: the one spelling used for
    uniqueness, limits and delivery, so letter case can never make one mailbox two (no
    provider we deliver through treats local parts case-sensitively). Phone numbers must
    already be E.164 (the identity module validates them with phonenumbers first).
    """
    value = unicodedata.normalize("NFC", value.strip())
    if channel is Channel.EMAIL:
        if not is_email(value):
            raise InvalidDestination("not an email address")
        return value.lower()
    if not is_e164(value):
        raise InvalidDestination("not an E.164 phone number")
    return value


def mask(value: str) -> str:
    """Mask an email address or E.164 number for logs, tables and operator views.

    ``alice@example.com`` → ``a***@example.com``; ``+34612345678`` → ``+34***78``.
    Anything else is masked completely, so a malformed value can never leak.
    """
    if is_email(value):
        local, _, host = value.rpartition("@")
        return f"{local[0]}{_MASK}@{host.lower()}"
    if is_e164(value):
        return f"{value[:3]}{_MASK}{value[-2:]}"
    return _MASK


def channel_of(value: str) -> Channel:
    """Guess the natural channel of a sign-in identifier: email, else SMS for a phone number."""
    if is_email(value):
        return Channel.EMAIL
    if is_e164(value):
        return Channel.SMS
    raise InvalidDestination("not an email address or E.164 phone number")
