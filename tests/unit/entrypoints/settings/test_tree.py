"""The settings tree: read once, whole, with no raw environment kept in it."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from outbox.domain.channels import Channel
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import LogFormat, load_settings

PRODUCTION_WITHOUT_PROVIDERS = {
    "OUTBOX_ENV": "production",
    "OUTBOX_DATABASE_URL": "postgresql://migrator@db.internal/outbox",
}


def test_the_tree_keeps_no_raw_environment() -> None:
    settings = load_settings({"OUTBOX_RATE_LIMIT_CLIENT": "3", "UNRELATED_TOKEN": "t0ps3cret"})

    assert "environ" not in attrs.fields_dict(type(settings))
    assert "t0ps3cret" not in repr(settings)
    assert 3 == settings.identity.rate_limits.per_client.limit


def test_identity_settings_are_part_of_the_one_tree() -> None:
    settings = load_settings({"OUTBOX_CHALLENGE_LIFETIME_SECONDS": "90"})

    assert timedelta(seconds=90) == settings.identity.challenges.lifetime


def test_a_process_that_does_not_send_needs_no_provider_settings() -> None:
    """A migration job in production runs with a database URL and nothing else."""
    settings = load_settings(PRODUCTION_WITHOUT_PROVIDERS)

    assert settings.providers is None


def test_a_process_that_sends_must_configure_every_channel_outside_development() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(PRODUCTION_WITHOUT_PROVIDERS, providers=True)

    assert "OUTBOX_CHANNEL_EMAIL" == caught.value.variable


def test_development_providers_default_to_the_console() -> None:
    settings = load_settings({}, providers=True)

    assert settings.providers is not None
    assert {"console"} == set(settings.providers.channels.values())


def test_the_environment_name_is_read_in_any_case() -> None:
    assert "staging" == load_settings({"OUTBOX_ENV": "Staging"}).environment


def test_a_bad_log_format_names_its_variable() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_LOG_FORMAT": "xml"})

    assert "OUTBOX_LOG_FORMAT" == caught.value.variable
    assert LogFormat.JSON is load_settings({"OUTBOX_LOG_FORMAT": "json"}).log_format


def test_the_database_connect_timeout_defaults_to_five_seconds_and_can_be_shortened() -> None:
    assert timedelta(seconds=5) == load_settings({}).database.connect_timeout
    shortened = load_settings({"OUTBOX_DB_CONNECT_TIMEOUT_SECONDS": "2.5"})
    assert timedelta(seconds=2.5) == shortened.database.connect_timeout


def test_a_database_connect_timeout_under_a_second_is_refused() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_DB_CONNECT_TIMEOUT_SECONDS": "0"})

    assert "OUTBOX_DB_CONNECT_TIMEOUT_SECONDS" == caught.value.variable


def test_every_process_reads_which_channels_have_a_provider_without_credentials() -> None:
    """The admin listener refuses a reissue the worker could not send: it reads the channel
    map, and no provider's credential."""
    settings = load_settings(
        {
            **PRODUCTION_WITHOUT_PROVIDERS,
            "OUTBOX_CHANNEL_EMAIL": "smtp",
            "OUTBOX_CHANNEL_SMS": "none",
        }
    )

    assert settings.providers is None
    assert {Channel.EMAIL: "smtp", Channel.SMS: None} == settings.channels


def test_a_channel_left_unset_outside_development_is_not_known() -> None:
    assert {} == load_settings(PRODUCTION_WITHOUT_PROVIDERS).channels
    assert dict.fromkeys(Channel, "console") == load_settings({}).channels


def test_the_channel_map_is_checked_as_the_worker_checks_it() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({**PRODUCTION_WITHOUT_PROVIDERS, "OUTBOX_CHANNEL_SMS": "console"})

    assert "OUTBOX_CHANNEL_SMS" == caught.value.variable
