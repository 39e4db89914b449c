"""Where the database is: the configured URLs, or the embedded server; which role to act as."""

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


def worker_role(settings: Settings) -> str | None:
    """The role the worker's connections take: configured, or outbox_worker when embedded.

    On the embedded server the URL is a superuser's, so development runs the worker with
    exactly the privileges production gives it.
    """
    if settings.database.worker_role is not None:
        return settings.database.worker_role
    return "outbox_worker" if settings.database.url is None else None


def api_role(settings: Settings) -> str | None:
    """The role the API's connections take: configured, or outbox_runtime when embedded."""
    if settings.database.api_role is not None:
        return settings.database.api_role
    return "outbox_runtime" if settings.database.url is None else None


def session_role(settings: Settings, group_role: str) -> str | None:
    """The group role pools must ``SET ROLE`` to, or None when a login role already has it.

    The embedded server is reached as its superuser, so its pools act as ``outbox_runtime`` or
    ``outbox_worker`` explicitly; a configured URL names a login role granted the group role.
    """
    return group_role if settings.database.url is None else None
