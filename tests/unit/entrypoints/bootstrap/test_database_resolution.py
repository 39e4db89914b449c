"""The composition root picks the configured database, or the embedded one under data_dir."""

from __future__ import annotations

import pytest

from outbox.entrypoints.bootstrap.database import (
    embedded_data_dir,
    resolve_admin_database_url,
    resolve_consumers_database_url,
    resolve_database_url,
    resolve_worker_database_url,
    session_role,
)
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings

API_URL = "postgresql://api@db.internal/outbox"
WORKER_URL = "postgresql://worker@db.internal/outbox"
ADMIN_URL = "postgresql://admin@db.internal/outbox"
CONSUMERS_URL = "postgresql://consumers@db.internal/outbox"


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


@pytest.mark.parametrize(
    ("resolve", "variable"),
    [
        (resolve_database_url, "OUTBOX_DATABASE_URL"),
        (resolve_worker_database_url, "OUTBOX_WORKER_DATABASE_URL"),
        (resolve_admin_database_url, "OUTBOX_ADMIN_DATABASE_URL"),
        (resolve_consumers_database_url, "OUTBOX_CONSUMERS_DATABASE_URL"),
    ],
)
def test_outside_development_a_missing_url_is_named_never_an_embedded_server(
    tmp_path, resolve, variable
):
    settings = load_settings({"OUTBOX_ENV": "production", "OUTBOX_DATA_DIR": str(tmp_path)})

    with pytest.raises(SettingsError) as refused:
        resolve(settings)

    assert variable == refused.value.variable
    assert "only development starts an embedded PostgreSQL" in refused.value.problem
    assert not (tmp_path / "postgres").exists()


def test_each_job_uses_its_own_url_and_falls_back_to_the_apis():
    own = load_settings(
        {
            "OUTBOX_DATABASE_URL": API_URL,
            "OUTBOX_ADMIN_DATABASE_URL": ADMIN_URL,
            "OUTBOX_CONSUMERS_DATABASE_URL": CONSUMERS_URL,
        }
    )
    shared = load_settings({"OUTBOX_DATABASE_URL": API_URL})

    assert (ADMIN_URL, CONSUMERS_URL) == (
        resolve_admin_database_url(own),
        resolve_consumers_database_url(own),
    )
    assert (API_URL, API_URL) == (
        resolve_admin_database_url(shared),
        resolve_consumers_database_url(shared),
    )
