"""The composition root: builds the application services from settings, and runs processes."""

from __future__ import annotations

from pathlib import Path

from adapters.postgres.embedded import EmbeddedPostgres
from entrypoints.settings import Settings


def embedded_data_dir(settings: Settings) -> Path:
    """Where the embedded PostgreSQL keeps its data when no database URL is configured."""
    return settings.data_dir / "postgres"


def resolve_database_url(settings: Settings) -> str:
    """OUTBOX_DATABASE_URL, or a superuser URL of the embedded server (started if needed).

    The embedded server keeps running until this process (and any other using it) exits.
    """
    if settings.database.url is not None:
        return settings.database.url
    return EmbeddedPostgres.start(embedded_data_dir(settings)).ensure_database()


def resolve_worker_database_url(settings: Settings) -> str:
    """OUTBOX_WORKER_DATABASE_URL when the worker has its own login role, else the API's URL."""
    if settings.database.worker_url is not None:
        return settings.database.worker_url
    return resolve_database_url(settings)
