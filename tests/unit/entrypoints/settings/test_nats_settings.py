"""The broker relay's settings: off without OUTBOX_NATS_URL, checked, never quoting a secret."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.entrypoints.settings.nats import Retention
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings


def test_the_relay_is_off_without_a_nats_url() -> None:
    assert None is load_settings({}).nats


def test_the_relay_defaults_name_a_stream_and_a_prefix() -> None:
    nats = load_settings({"OUTBOX_NATS_URL": "nats://a:4222, nats://b:4222"}).nats

    assert nats is not None
    assert ("nats://a:4222", "nats://b:4222") == nats.servers
    assert ("OUTBOX_EVENTS", "outbox.events") == (nats.stream, nats.subject_prefix)
    assert timedelta(minutes=2) == nats.duplicate_window
    assert timedelta(seconds=5) == nats.ack_timeout
    assert Retention.LIMITS is nats.retention


def test_a_bad_nats_url_is_refused_without_quoting_its_password() -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings({"OUTBOX_NATS_URL": "http://relay:s3cret@broker:4222"})

    assert "OUTBOX_NATS_URL" in str(refused.value)
    assert "s3cret" not in str(refused.value)
    assert "***" in str(refused.value)


def test_the_settings_never_show_the_nats_password() -> None:
    settings = load_settings(
        {"OUTBOX_NATS_URL": "nats://relay:s3cret@broker:4222", "OUTBOX_NATS_PASSWORD": "pw0rd"}
    )

    assert "s3cret" not in repr(settings)
    assert "pw0rd" not in repr(settings)


def test_a_subject_prefix_must_be_dot_separated_tokens() -> None:
    with pytest.raises(SettingsError) as refused:
        load_settings({"OUTBOX_NATS_URL": "nats://a:4222", "OUTBOX_NATS_SUBJECT_PREFIX": "a.*.b"})

    assert "OUTBOX_NATS_SUBJECT_PREFIX" in str(refused.value)
