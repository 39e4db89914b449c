"""Where the database is: the configured URLs, or the embedded server; which role to act as."""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import AsyncIterator
from pathlib import Path

import structlog
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.embedded import EmbeddedPostgres
from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.readiness import diagnose
from outbox.adapters.postgres.role_check import inspect_role
from outbox.application.errors import RoleMissing, StoreUnavailable
from outbox.entrypoints.bootstrap.database_roles import enforce, judge_role
from outbox.entrypoints.bootstrap.preflight import missing_url
from outbox.entrypoints.settings.tree import Settings

# The NOLOGIN group roles, one per job (0009_roles_by_job.sql; docs/sql-api.md, "Roles").
OWNER_ROLE = "outbox_owner"  # owns every object; the database operator's login is a member
PRODUCER_ROLE = "outbox_producer"  # enqueue and cancel only: what another service is granted
IDENTITY_ROLE = "identity_service"  # the API: the Identity module and the staff functions
WORKER_ROLE = "outbox_worker"  # the worker and its sweeps: claim, record, expire, purge
STAFF_ROLE = "staff_service"  # the admin listener: staff sessions, the staff functions
DEPRECATED_PRODUCER_ROLE = "outbox_runtime"  # the old name of the producer's role


_ANNOUNCED: set[Path] = set()  # embedded servers this process has said it uses


def embedded_data_dir(settings: Settings) -> Path:
    """Where the embedded PostgreSQL keeps its data when no database URL is configured."""
    return settings.data_dir / "postgres"


def resolve_database_url(settings: Settings, *, variable: str = "DATABASE_URL") -> str:
    """OUTBOX_DATABASE_URL, or a superuser URL of the embedded server (started if needed).

    The embedded server is for development only: elsewhere a missing URL raises
    SettingsError naming ``variable`` (the one the caller reads first; OUTBOX_DATABASE_URL
    is its fallback), so production never runs on a stray local database. The embedded
    server keeps running until this process (and any other using it) exits.
    """
    if settings.database.url is not None:
        return settings.database.url
    if not settings.is_development:
        raise missing_url(settings, variable)
    data_dir = embedded_data_dir(settings)
    url = EmbeddedPostgres.start(data_dir).ensure_database()
    if data_dir not in _ANNOUNCED:
        # Debug: a development command stays quiet (outboxctl up's banner says where it is).
        _ANNOUNCED.add(data_dir)
        structlog.get_logger().debug(
            "embedded_postgres.ready", logger="outbox", data_dir=str(data_dir)
        )
    return url


def resolve_worker_database_url(settings: Settings) -> str:
    """OUTBOX_WORKER_DATABASE_URL when the worker has its own login role, else the API's URL."""
    if settings.database.worker_url is not None:
        return settings.database.worker_url
    return resolve_database_url(settings, variable="WORKER_DATABASE_URL")


def resolve_consumers_database_url(settings: Settings) -> str:
    """OUTBOX_CONSUMERS_DATABASE_URL when the shipped consumers (the worker's consumers lane,
    ``outboxctl consume``) have their own login, else the API's URL."""
    if settings.database.consumers_url is not None:
        return settings.database.consumers_url
    return resolve_database_url(settings, variable="CONSUMERS_DATABASE_URL")


def worker_role(settings: Settings) -> str | None:
    """The role the worker's connections take: configured, or outbox_worker when embedded.

    On the embedded server the URL is a superuser's, so development runs the worker with
    exactly the privileges production gives it.
    """
    if settings.database.worker_role is not None:
        return settings.database.worker_role
    return WORKER_ROLE if settings.database.url is None else None


def api_role(settings: Settings) -> str | None:
    """The role the API's connections take: configured, or identity_service when embedded."""
    if settings.database.api_role is not None:
        return settings.database.api_role
    return IDENTITY_ROLE if settings.database.url is None else None


def admin_role(settings: Settings) -> str | None:
    """The role the admin listener's connections take: configured, or staff_service when
    embedded."""
    if settings.database.admin_role is not None:
        return settings.database.admin_role
    return STAFF_ROLE if settings.database.url is None else None


def resolve_admin_database_url(settings: Settings) -> str:
    """OUTBOX_ADMIN_DATABASE_URL when the admin listener has its own login, else the API's."""
    if settings.database.admin_url is not None:
        return settings.database.admin_url
    return resolve_database_url(settings, variable="ADMIN_DATABASE_URL")


def readiness_role(settings: Settings, access: DatabaseAccess) -> str:
    """The group role a process's connections must act as: set by ``SET ROLE``, or inherited
    by the login role (readiness checks the login is a member)."""
    if access is DatabaseAccess.WORKER:
        return worker_role(settings) or WORKER_ROLE
    if access is DatabaseAccess.ADMIN:
        return admin_role(settings) or STAFF_ROLE
    return api_role(settings) or IDENTITY_ROLE


def session_role(settings: Settings, group_role: str) -> str | None:
    """The group role pools must ``SET ROLE`` to, or None when a login role already has it.

    The embedded server is reached as its superuser, so its pools act as ``identity_service``
    or ``outbox_worker`` explicitly; a configured URL names a login role granted the group role.
    """
    return group_role if settings.database.url is None else None


# An API request waits this long for a pooled connection, then answers 503 with Retry-After
#: during an outage a client learns it at once instead of hanging.
API_CHECKOUT_TIMEOUT = 2.0
OTHER_CHECKOUT_TIMEOUT = 30.0


class DatabaseAccess(enum.Enum):
    """Who a pool's connections act as: the API, the worker, or the database operator."""

    API = "api"  # role identity_service: the public identity routes
    ADMIN = "admin"  # role staff_service: the staff routes and the console
    WORKER = "worker"  # role outbox_worker: claim, record, sweep
    OPERATOR = "operator"  # outboxctl's own login, no SET ROLE: a member of outbox_owner


@contextlib.asynccontextmanager
async def database_pool(
    settings: Settings, access: DatabaseAccess, *, max_size: int | None = None
) -> AsyncIterator[AsyncConnectionPool[AsyncConnection]]:
    """The one way a process opens a pool: URL, role and size follow from ``access``.

    ``max_size`` replaces the size (a worker lane other than the security lane has its own
    small pool, so it can never take the security lane's connections). The API's and the
    worker's pools check their role first (database_roles.py). The pool is closed on exit.
    Raises StoreUnavailable if the database cannot be reached, DatabaseRoleRefused if the
    role may not run the job.
    """
    database = settings.database
    checkout_timeout = OTHER_CHECKOUT_TIMEOUT
    if access is DatabaseAccess.WORKER:
        url = await asyncio.to_thread(resolve_worker_database_url, settings)
        role, min_size, size = worker_role(settings), 1, max(2, database.pool_max)
    elif access is DatabaseAccess.API:
        url = await asyncio.to_thread(resolve_database_url, settings)
        role, min_size, size = api_role(settings), database.pool_min, database.pool_max
        checkout_timeout = API_CHECKOUT_TIMEOUT
    elif access is DatabaseAccess.ADMIN:
        url = await asyncio.to_thread(resolve_admin_database_url, settings)
        role, min_size, size = admin_role(settings), 1, max(2, database.pool_max // 2)
        checkout_timeout = API_CHECKOUT_TIMEOUT
    else:
        url = await asyncio.to_thread(resolve_database_url, settings)
        role, min_size, size = None, 1, 2
    try:
        pool = await open_pool(
            url,
            min_size=min_size,
            max_size=max_size or size,
            prepared_statements=database.prepared_statements,
            role=role,
            checkout_timeout=checkout_timeout,
            connect_timeout=database.connect_timeout.total_seconds(),
        )
    except StoreUnavailable:
        # The pool only timed out; one direct connection says whether the cause is the role.
        report = await diagnose(url, role)
        if report.missing_role is not None:
            raise RoleMissing(report.missing_role) from None
        if report.error_code:
            raise StoreUnavailable(report.error_code) from None
        raise
    try:
        await _check_role(pool, settings, access)
        yield pool
    finally:
        await pool.close()


async def _check_role(
    pool: AsyncConnectionPool[AsyncConnection], settings: Settings, access: DatabaseAccess
) -> None:
    if access is DatabaseAccess.OPERATOR:
        return  # the database operator is the owner's member by design
    process, job, deprecated = _JOBS[access]
    await check_job_role(
        pool, process=process, job=job, deprecated=deprecated, strict=not settings.is_development
    )


async def check_job_role(
    pool: AsyncConnectionPool[AsyncConnection],
    *,
    process: str,
    job: str,
    strict: bool,
    deprecated: str = "",
) -> None:
    """Refuse (DatabaseRoleRefused) or warn about ``pool``'s role doing ``job`` for
    ``process``: every pool of every process is checked the same way (database_roles.py)."""
    report = await inspect_role(pool, job=job)
    enforce(judge_role(report, process=process, job=job, deprecated=deprecated, strict=strict))


# Per checked access: how refusals name the process, its job's role, and the role older
# deployments granted in its place.
_JOBS = {
    DatabaseAccess.API: ("the API", IDENTITY_ROLE, DEPRECATED_PRODUCER_ROLE),
    DatabaseAccess.ADMIN: ("the admin listener", STAFF_ROLE, ""),
    DatabaseAccess.WORKER: ("the worker", WORKER_ROLE, ""),
}
