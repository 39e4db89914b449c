"""Identity settings: how long codes, sessions and links live, and how often each may be asked for.

Every variable is optional; the defaults are the ones the README documents.
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import phonenumbers

from outbox.application.identity.request_limits import RateLimitPolicy
from outbox.domain.identity.challenges import ChallengePolicy
from outbox.domain.identity.invitations import InvitationLimits
from outbox.domain.identity.rate_limits import Backoff, RateLimit
from outbox.entrypoints.settings.reader import EnvironmentReader

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


def _countries(value: str) -> frozenset[str] | None:
    """``*`` for every country, else comma-separated ISO 3166 alpha-2 codes phonenumbers knows."""
    if value.strip() == "*":
        return None
    codes = frozenset(code.strip().upper() for code in value.split(",") if code.strip())
    if not codes <= phonenumbers.SUPPORTED_REGIONS:
        raise ValueError(value)
    return codes


def _backoff(read: EnvironmentReader, default: Backoff) -> Backoff:
    """The pace per destination; the first wait may not exceed the longest."""
    first = read.seconds("DESTINATION_FIRST_WAIT_SECONDS", default.first_wait, minimum=1)
    longest = read.seconds("DESTINATION_MAX_WAIT_SECONDS", default.max_wait, minimum=1)
    if first > longest:
        first = read.refuse(
            "DESTINATION_FIRST_WAIT_SECONDS",
            "must not exceed OUTBOX_DESTINATION_MAX_WAIT_SECONDS",
            longest,
        )
    quiet = read.seconds("DESTINATION_QUIET_SECONDS", default.quiet, minimum=1)
    return Backoff(first_wait=first, max_wait=longest, quiet=quiet)


def read_identity_settings(read: EnvironmentReader, *, development: bool) -> IdentitySettings:
    """Read the identity variables; raises SettingsError naming a bad one.

    SMS goes to every country in development and, unless ``OUTBOX_SMS_COUNTRIES`` names
    some, to none elsewhere.
    """
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
            wrong_codes_per_day=read.integer("WRONG_CODES_PER_DAY", challenges.wrong_codes_per_day),
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
            per_destination=_backoff(read, Backoff()),
            sms_countries=read.parse(
                "SMS_COUNTRIES",
                None if development else frozenset[str](),
                _countries,
                "'*' or comma-separated ISO 3166 country codes such as ES,FR",
            ),
            sms_per_country_prefix=RateLimit(
                limit=read.integer(
                    "SMS_HOURLY_BUDGET_PER_PREFIX", limits.sms_per_country_prefix.limit
                ),
                window=limits.sms_per_country_prefix.window,
            ),
            organizations_per_account=limit(
                "ORGANIZATIONS_PER_ACCOUNT", limits.organizations_per_account
            ),
            invitations_per_organization=limit(
                "INVITATIONS_PER_ORGANIZATION", limits.invitations_per_organization
            ),
            invitations_per_address=limit(
                "INVITATIONS_PER_ADDRESS", limits.invitations_per_address
            ),
        ),
    )
