"""Identity settings: lifetimes and rate limits (SPEC §10), read from the same environment.

Every variable is optional; the defaults are the ones the README documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

import attrs

from application.identity.request_limits import RateLimitPolicy
from domain.identity.challenges import ChallengePolicy
from domain.identity.invitations import InvitationLimits
from domain.identity.rate_limits import RateLimit
from entrypoints.settings import PREFIX, SettingsError


@attrs.frozen(kw_only=True)
class IdentitySettings:
    """How long codes, sessions and links live, and how often each may be asked for."""

    challenges: ChallengePolicy
    session_lifetime: timedelta
    elevation_lifetime: timedelta
    magic_link_lifetime: timedelta
    invitations: InvitationLimits
    rate_limits: RateLimitPolicy


def _integer(environ: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = (environ.get(PREFIX + name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(PREFIX + name, f"expected an integer, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(PREFIX + name, f"must be at least {minimum}, got {value}")
    return value


def _seconds(environ: Mapping[str, str], name: str, default: timedelta) -> timedelta:
    return timedelta(seconds=_integer(environ, name, int(default.total_seconds())))


def _limit(environ: Mapping[str, str], name: str, default: RateLimit) -> RateLimit:
    return RateLimit(
        limit=_integer(environ, f"RATE_LIMIT_{name}", default.limit),
        window=_seconds(environ, f"RATE_LIMIT_{name}_WINDOW_SECONDS", default.window),
    )


def load_identity_settings(environ: Mapping[str, str]) -> IdentitySettings:
    """Read the identity variables; raises SettingsError naming a bad one."""
    challenges = ChallengePolicy()
    limits = RateLimitPolicy()
    invitations = InvitationLimits()
    code_digits = _integer(environ, "CODE_DIGITS", challenges.code_digits, minimum=6)
    if code_digits > 12:
        raise SettingsError(PREFIX + "CODE_DIGITS", f"must be at most 12, got {code_digits}")
    return IdentitySettings(
        challenges=ChallengePolicy(
            lifetime=_seconds(environ, "CHALLENGE_LIFETIME_SECONDS", challenges.lifetime),
            max_failed_attempts=_integer(
                environ, "CHALLENGE_MAX_WRONG_CODES", challenges.max_failed_attempts
            ),
            code_digits=code_digits,
        ),
        session_lifetime=_seconds(environ, "SESSION_LIFETIME_SECONDS", timedelta(hours=12)),
        elevation_lifetime=_seconds(environ, "ELEVATION_LIFETIME_SECONDS", timedelta(minutes=5)),
        magic_link_lifetime=_seconds(environ, "MAGIC_LINK_LIFETIME_SECONDS", timedelta(minutes=15)),
        invitations=InvitationLimits(
            pending_per_organization=_integer(
                environ, "INVITATIONS_PENDING_MAX", invitations.pending_per_organization
            ),
            lifetime=_seconds(environ, "INVITATION_LIFETIME_SECONDS", invitations.lifetime),
        ),
        rate_limits=RateLimitPolicy(
            per_client=_limit(environ, "CLIENT", limits.per_client),
            per_destination=_limit(environ, "DESTINATION", limits.per_destination),
            invitations_per_organization=_limit(
                environ, "INVITATIONS_PER_ORGANIZATION", limits.invitations_per_organization
            ),
            invitations_per_address=_limit(
                environ, "INVITATIONS_PER_ADDRESS", limits.invitations_per_address
            ),
        ),
    )
