"""OUTBOX_<PROVIDER>_RATE_PER_SECOND: a send quota for each provider in use."""

from __future__ import annotations

import pytest

from outbox.adapters.providers.rate_limit import LeakyBucketRateLimit
from outbox.entrypoints.bootstrap.providers import build_rate_limits
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings

SMTP = {
    "OUTBOX_CHANNEL_EMAIL": "smtp",
    "OUTBOX_SMTP_HOST": "smtp.example.org",
    "OUTBOX_SMTP_FROM": "Example <no-reply@example.org>",
}


def test_no_quota_is_set_by_default() -> None:
    settings = load_settings({}, providers=True)

    assert settings.providers is not None
    assert {} == dict(settings.providers.rate_per_second)
    assert {} == build_rate_limits(settings)


def test_a_quota_is_read_for_each_provider_in_use_and_built_into_a_bucket() -> None:
    settings = load_settings(
        SMTP | {"OUTBOX_SMTP_RATE_PER_SECOND": "14", "OUTBOX_CONSOLE_RATE_PER_SECOND": "0.5"},
        providers=True,
    )

    assert settings.providers is not None
    assert {"smtp": 14.0, "console": 0.5} == dict(settings.providers.rate_per_second)
    limits = build_rate_limits(settings)
    assert {"smtp", "console"} == set(limits)
    assert all(isinstance(limit, LeakyBucketRateLimit) for limit in limits.values())
    assert 14.0 == limits["smtp"].per_second


def test_a_quota_of_a_provider_not_in_use_is_ignored() -> None:
    settings = load_settings({"OUTBOX_SES_RATE_PER_SECOND": "nonsense"}, providers=True)

    assert settings.providers is not None
    assert {} == dict(settings.providers.rate_per_second)


@pytest.mark.parametrize("value", ["0", "-3", "fast", "inf", "nan"])
def test_a_bad_quota_names_its_variable(value: str) -> None:
    with pytest.raises(SettingsError, match="OUTBOX_SMTP_RATE_PER_SECOND") as caught:
        load_settings(SMTP | {"OUTBOX_SMTP_RATE_PER_SECOND": value}, providers=True)

    assert "a positive number of sends per second" in str(caught.value)
