"""The two listeners' settings: where each listens and which proxies are believed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings


def test_the_admin_listener_is_on_loopback_and_no_proxy_is_trusted_by_default() -> None:
    http = load_settings({}).http

    assert ("127.0.0.1", 8001) == (http.admin_host, http.admin_port)
    assert () == http.trusted_proxies
    assert timedelta(seconds=10) == http.request_timeout


def test_trusted_proxies_are_addresses_or_networks_normalised() -> None:
    http = load_settings(
        {
            "OUTBOX_TRUSTED_PROXIES": " 10.0.0.0/8, 192.168.1.7 ,::1",
            "OUTBOX_ADMIN_HOST": "0.0.0.0",  # noqa: S104 - a value under test, not a bind
            "OUTBOX_ADMIN_PORT": "9100",
        }
    ).http

    assert ("10.0.0.0/8", "192.168.1.7/32", "::1/128") == http.trusted_proxies
    assert ("0.0.0.0", 9100) == (http.admin_host, http.admin_port)  # noqa: S104


@pytest.mark.parametrize("value", ["*", "10.0.0.0/8,", "proxy.example", "10.0.0.300"])
def test_a_trusted_proxy_that_is_not_an_address_names_the_variable(value: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings({"OUTBOX_TRUSTED_PROXIES": value})

    assert "OUTBOX_TRUSTED_PROXIES" == raised.value.variable


def test_a_bad_admin_port_names_the_variable() -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings({"OUTBOX_ADMIN_PORT": "70000"})

    assert "OUTBOX_ADMIN_PORT" == raised.value.variable
