"""Which listeners ``outboxctl serve`` runs: light, so the command line can name them
without loading the HTTP stack."""

from __future__ import annotations

import enum


class Served(enum.StrEnum):
    """Which listeners ``outboxctl serve`` runs: one process, or the admin listener apart.

    The public listeners (the identity API and the provider webhooks) use the API's login
    (``identity_service``); the admin listener (staff routes, console, metrics) its own
    (``staff_service``), which the public login must not hold.
    """

    ALL = "all"
    PUBLIC = "public"
    ADMIN = "admin"

    @property
    def public(self) -> bool:
        """Whether the public API and the webhook listener are served."""
        return self is not Served.ADMIN

    @property
    def admin(self) -> bool:
        """Whether the admin listener is served."""
        return self is not Served.PUBLIC
