"""OUTBOX_PROVIDER_PROBE_SECONDS: how long a suspended provider rests before a probe."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings


def test_a_suspended_provider_is_probed_after_a_minute_by_default() -> None:
    assert timedelta(minutes=1) == load_settings({}).worker.suspension_probe


def test_the_probe_interval_is_configurable() -> None:
    settings = load_settings({"OUTBOX_PROVIDER_PROBE_SECONDS": "0.5"})
    assert timedelta(seconds=0.5) == settings.worker.suspension_probe


def test_a_bad_probe_interval_names_the_variable() -> None:
    with pytest.raises(SettingsError, match="OUTBOX_PROVIDER_PROBE_SECONDS"):
        load_settings({"OUTBOX_PROVIDER_PROBE_SECONDS": "soon"})
