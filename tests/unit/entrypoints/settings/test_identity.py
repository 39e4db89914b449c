"""Identity settings: documented defaults, and errors that name the variable."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.domain.identity.rate_limits import Backoff, RateLimit
from outbox.entrypoints.settings.identity import IdentitySettings, read_identity_settings
from outbox.entrypoints.settings.reader import EnvironmentReader, SettingsError
from outbox.entrypoints.settings.tree import load_settings


def load_identity_settings(environ: dict[str, str]) -> IdentitySettings:
    """The identity part of the settings tree."""
    return load_settings(environ).identity


def test_the_defaults_are_the_documented_ones() -> None:
    settings = load_identity_settings({})

    assert timedelta(minutes=10) == settings.challenges.lifetime
    assert 5 == settings.challenges.max_failed_attempts
    assert 6 == settings.challenges.code_digits
    assert 20 == settings.challenges.wrong_codes_per_day
    assert timedelta(hours=12) == settings.session_lifetime
    assert timedelta(minutes=5) == settings.elevation_lifetime
    assert timedelta(minutes=15) == settings.magic_link_lifetime
    assert timedelta(days=7) == settings.invitations.lifetime
    assert 100 == settings.invitations.pending_per_organization
    assert RateLimit(limit=20, window=timedelta(minutes=1)) == settings.rate_limits.per_client
    assert (
        Backoff(
            first_wait=timedelta(minutes=1),
            max_wait=timedelta(minutes=5),
            quiet=timedelta(minutes=15),
        )
        == settings.rate_limits.per_destination
    )
    assert settings.rate_limits.sms_countries is None  # development texts every country
    assert RateLimit(limit=100, window=timedelta(hours=1)) == (
        settings.rate_limits.sms_per_country_prefix
    )
    assert RateLimit(limit=10, window=timedelta(days=1)) == (
        settings.rate_limits.organizations_per_account
    )


def test_outside_development_sms_goes_to_the_configured_countries_only() -> None:
    rules = read_identity_settings(EnvironmentReader({}, strict=True), development=False)
    configured = read_identity_settings(
        EnvironmentReader({"OUTBOX_SMS_COUNTRIES": "es, FR"}, strict=True), development=False
    )
    every = read_identity_settings(
        EnvironmentReader({"OUTBOX_SMS_COUNTRIES": "*"}, strict=True), development=False
    )

    assert frozenset() == rules.rate_limits.sms_countries
    assert frozenset({"ES", "FR"}) == configured.rate_limits.sms_countries
    assert every.rate_limits.sms_countries is None


def test_variables_override_the_defaults() -> None:
    settings = load_identity_settings(
        {
            "OUTBOX_RATE_LIMIT_CLIENT": "3",
            "OUTBOX_RATE_LIMIT_CLIENT_WINDOW_SECONDS": "10",
            "OUTBOX_RATE_LIMIT_INVITATIONS_PER_ADDRESS": "2",
            "OUTBOX_CODE_DIGITS": "8",
            "OUTBOX_CHALLENGE_LIFETIME_SECONDS": "300",
            "OUTBOX_WRONG_CODES_PER_DAY": "30",
        }
    )

    assert 30 == settings.challenges.wrong_codes_per_day

    assert RateLimit(limit=3, window=timedelta(seconds=10)) == settings.rate_limits.per_client
    assert 2 == settings.rate_limits.invitations_per_address.limit
    assert 8 == settings.challenges.code_digits
    assert timedelta(minutes=5) == settings.challenges.lifetime


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("OUTBOX_RATE_LIMIT_CLIENT", "many", "expected an integer"),
        ("OUTBOX_DESTINATION_MAX_WAIT_SECONDS", "0", "at least 1"),
        ("OUTBOX_DESTINATION_FIRST_WAIT_SECONDS", "600", "must not exceed"),
        ("OUTBOX_SMS_COUNTRIES", "ES,XX", "ISO 3166"),
        ("OUTBOX_SMS_HOURLY_BUDGET_PER_PREFIX", "0", "at least 1"),
        ("OUTBOX_CODE_DIGITS", "4", "at least 6"),
        ("OUTBOX_CODE_DIGITS", "20", "at most 12"),
        ("OUTBOX_WRONG_CODES_PER_DAY", "0", "at least 1"),
    ],
)
def test_a_bad_value_names_its_variable(variable: str, value: str, problem: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_identity_settings({variable: value})
    assert variable == caught.value.variable
    assert problem in caught.value.problem
