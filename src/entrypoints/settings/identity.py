"""Identity settings: how long codes, sessions and links live, and how often each may be asked for.

Every variable is optional; the defaults are the ones the README documents (SPEC §10).
"""

from __future__ import annotations

from datetime import timedelta

import attrs

from application.identity.request_limits import RateLimitPolicy
from domain.identity.challenges import ChallengePolicy
from domain.identity.invitations import InvitationLimits
from domain.identity.rate_limits import RateLimit
from entrypoints.settings.reader import EnvironmentReader

_MIN_CODE_DIGITS = 6
_MAX_CODE_DIGITS = 12


@attrs.frozen(kw_only=True)
class IdentitySettings:
    """How long codes, sessions and links live, and how often each may be asked for."""

    challenges: ChallengePolicy
    session_lifetime: timedelta
    elevation_lifetime: timedelta
    magic_link_lifetime: timedelta
    invitations: InvitationLimits
    rate_limits: RateLimitPolicy


def read_identity_settings(read: EnvironmentReader) -> IdentitySettings:
    """Read the identity variables; raises SettingsError naming a bad one."""
    challenges = ChallengePolicy()
    limits = RateLimitPolicy()
    invitations = InvitationLimits()

    def limit(name: str, default: RateLimit) -> RateLimit:
        return RateLimit(
            limit=read.integer(f"RATE_LIMIT_{name}", default.limit),
            window=read.seconds(f"RATE_LIMIT_{name}_WINDOW_SECONDS", default.window, minimum=1),
        )

    return IdentitySettings(
        challenges=ChallengePolicy(
            lifetime=read.seconds("CHALLENGE_LIFETIME_SECONDS", challenges.lifetime, minimum=1),
            max_failed_attempts=read.integer(
                "CHALLENGE_MAX_WRONG_CODES", challenges.max_failed_attempts
            ),
            code_digits=read.integer(
                "CODE_DIGITS",
                challenges.code_digits,
                minimum=_MIN_CODE_DIGITS,
                maximum=_MAX_CODE_DIGITS,
            ),
        ),
        session_lifetime=read.seconds("SESSION_LIFETIME_SECONDS", timedelta(hours=12), minimum=1),
        elevation_lifetime=read.seconds(
            "ELEVATION_LIFETIME_SECONDS", timedelta(minutes=5), minimum=1
        ),
        magic_link_lifetime=read.seconds(
            "MAGIC_LINK_LIFETIME_SECONDS", timedelta(minutes=15), minimum=1
        ),
        invitations=InvitationLimits(
            pending_per_organization=read.integer(
                "INVITATIONS_PENDING_MAX", invitations.pending_per_organization
            ),
            lifetime=read.seconds("INVITATION_LIFETIME_SECONDS", invitations.lifetime, minimum=1),
        ),
        rate_limits=RateLimitPolicy(
            per_client=limit("CLIENT", limits.per_client),
            per_destination=limit("DESTINATION", limits.per_destination),
            invitations_per_organization=limit(
                "INVITATIONS_PER_ORGANIZATION", limits.invitations_per_organization
            ),
            invitations_per_address=limit(
                "INVITATIONS_PER_ADDRESS", limits.invitations_per_address
            ),
        ),
    )
