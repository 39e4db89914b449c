"""The ways a message reaches a person."""

from __future__ import annotations

import enum


class Channel(enum.StrEnum):
    """A delivery channel; which provider serves it is configuration."""

    EMAIL = "email"
    SMS = "sms"
    WHATSAPP = "whatsapp"
