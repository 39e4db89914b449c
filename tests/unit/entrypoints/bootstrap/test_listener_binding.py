"""Binding the two listeners: a taken port is a configuration error naming its variable."""

from __future__ import annotations

import socket

import pytest

from outbox.entrypoints.bootstrap.processes import bind_listeners
from outbox.entrypoints.bootstrap.webhooks import bind_webhook_socket
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings


def test_both_listeners_bind_before_anything_starts() -> None:
    public, admin = bind_listeners(
        load_settings({"OUTBOX_HTTP_PORT": "0", "OUTBOX_ADMIN_PORT": "0"})
    )
    with public, admin:
        assert public.getsockname()[1] != admin.getsockname()[1]
        assert "127.0.0.1" == admin.getsockname()[0]


def test_a_taken_admin_port_names_its_variable_and_frees_the_public_one() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(SettingsError) as raised:
            bind_listeners(load_settings({"OUTBOX_HTTP_PORT": "0", "OUTBOX_ADMIN_PORT": str(port)}))

    assert "OUTBOX_ADMIN_PORT" == raised.value.variable
    assert f"127.0.0.1:{port}" in raised.value.problem


def test_a_taken_webhook_port_names_its_variable() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(SettingsError) as raised:
            bind_webhook_socket(load_settings({"OUTBOX_WEBHOOK_PORT": str(port)}))

    assert "OUTBOX_WEBHOOK_PORT" == raised.value.variable
    assert f"127.0.0.1:{port}" in raised.value.problem
