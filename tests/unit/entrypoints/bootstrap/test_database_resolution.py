"""The composition root picks the configured database, or the embedded one under data_dir."""

from __future__ import annotations

from outbox.entrypoints.bootstrap.database import (
    embedded_data_dir,
    resolve_database_url,
    resolve_worker_database_url,
    session_role,
)
from outbox.entrypoints.settings.tree import load_settings

API_URL = "postgresql://api@db.internal/outbox"
WORKER_URL = "postgresql://worker@db.internal/outbox"


def test_a_configured_url_is_used_as_it_is():
    settings = load_settings({"OUTBOX_DATABASE_URL": API_URL})
    assert API_URL == resolve_database_url(settings)


def test_the_worker_uses_its_own_url_when_one_is_configured():
    settings = load_settings(
        {"OUTBOX_DATABASE_URL": API_URL, "OUTBOX_WORKER_DATABASE_URL": WORKER_URL}
    )
    assert WORKER_URL == resolve_worker_database_url(settings)


def test_the_worker_falls_back_to_the_api_url():
    settings = load_settings({"OUTBOX_DATABASE_URL": API_URL})
    assert API_URL == resolve_worker_database_url(settings)


def test_the_embedded_server_lives_under_the_data_dir(tmp_path):
    settings = load_settings({"OUTBOX_DATA_DIR": str(tmp_path)})
    assert tmp_path / "postgres" == embedded_data_dir(settings)


def test_pools_set_the_group_role_only_on_the_embedded_superuser_connection(tmp_path):
    embedded = load_settings({"OUTBOX_DATA_DIR": str(tmp_path)})
    configured = load_settings({"OUTBOX_DATABASE_URL": API_URL})

    assert "outbox_worker" == session_role(embedded, "outbox_worker")
    assert session_role(configured, "outbox_worker") is None
