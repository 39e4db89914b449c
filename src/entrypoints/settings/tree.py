"""The settings tree: everything a process needs, read once from the environment (SPEC §12).

``load_settings(os.environ)`` is called by each entry point; the composition root then hands
adapters plain arguments taken from the tree, never the tree or the environment itself.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import attrs
import platformdirs

from entrypoints.settings.identity import IdentitySettings, read_identity_settings
from entrypoints.settings.providers import ProviderSettings, read_provider_settings
from entrypoints.settings.reader import EnvironmentReader

# In development, links point at a local front end so invitations and magic links flow out
# of the box; staging and production must configure them (unset, those messages wait).
DEV_INVITATION_LINK_BASE = "http://localhost:3000/join"
DEV_MAGIC_LINK_BASE = "http://localhost:3000/sign-in"
DEFAULT_RETRY_SCHEDULE = (
    timedelta(seconds=5),
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(minutes=30),
)


class Environment(enum.StrEnum):
    """Where the service runs; development relaxes secrets and allows the console provider."""

    DEVELOPMENT = "development"
    STAGING = "staging"
    PRODUCTION = "production"


class LogFormat(enum.StrEnum):
    """How log lines are written: JSON, for people, or JSON unless stderr is a terminal."""

    AUTO = "auto"
    JSON = "json"
    CONSOLE = "console"


@attrs.frozen(kw_only=True)
class DatabaseSettings:
    """Where the database is; None means an embedded PostgreSQL in the data directory."""

    url: str | None = attrs.field(repr=False)
    worker_url: str | None = attrs.field(repr=False)
    worker_role: str | None  # SET ROLE on every worker connection (a group role, not a login)
    api_role: str | None  # SET ROLE on every API connection
    prepared_statements: bool
    pool_min: int
    pool_max: int


@attrs.frozen(kw_only=True)
class WorkerSettings:
    """How the worker claims and sends (SPEC §7)."""

    batch_size: int
    concurrency: int
    lanes: int  # batches in flight at once, so database round trips overlap sending
    lease: timedelta
    poll_interval: timedelta
    provider_timeout: timedelta
    shutdown_grace: timedelta
    metrics_port: int | None
    retry_schedule: tuple[timedelta, ...]
    max_attempts: int
    suspension_probe: timedelta  # how long a suspended provider rests before one probe send


@attrs.frozen(kw_only=True)
class SweepSettings:
    """How often sweeps run and how much they take at once (SPEC §8)."""

    expiry_interval: timedelta
    retention_interval: timedelta
    batch_size: int
    published_retention: timedelta
    dead_lettered_retention: timedelta


@attrs.frozen(kw_only=True)
class HttpSettings:
    """Where the API listens."""

    host: str
    port: int


@attrs.frozen(kw_only=True)
class Settings:
    """Everything the entry points need, read once from the environment.

    ``providers`` is read only when the process sends (``load_settings(..., providers=True)``).
    """

    environment: Environment
    data_dir: Path
    database: DatabaseSettings
    seal_keys: str | None = attrs.field(repr=False)
    seal_keys_file: Path | None
    worker: WorkerSettings
    sweeps: SweepSettings
    http: HttpSettings
    invitation_link_base_url: str | None
    magic_link_base_url: str | None
    template_dir: Path | None
    log_format: LogFormat
    log_level: str
    identity: IdentitySettings
    providers: ProviderSettings | None = None

    @property
    def is_development(self) -> bool:
        """Whether development conveniences (console provider, generated keys) are allowed."""
        return self.environment is Environment.DEVELOPMENT


def load_settings(environ: Mapping[str, str], *, providers: bool = False) -> Settings:
    """Build the settings tree from ``environ``; raises SettingsError naming the bad variable.

    ``providers`` also reads and checks the channel → provider configuration, which only a
    process that sends needs (and which staging and production require in full).
    """
    environment = EnvironmentReader(environ).choice("ENV", Environment.DEVELOPMENT, Environment)
    development = environment is Environment.DEVELOPMENT
    read = EnvironmentReader(environ, strict=not development)
    metrics_port = read.port("WORKER_METRICS_PORT", 0, allow_zero=True)
    return Settings(
        environment=environment,
        data_dir=read.path("DATA_DIR") or Path(platformdirs.user_data_dir("outbox")),
        database=DatabaseSettings(
            url=read.raw("DATABASE_URL"),
            worker_url=read.raw("WORKER_DATABASE_URL"),
            worker_role=read.raw("WORKER_DB_ROLE"),
            api_role=read.raw("API_DB_ROLE"),
            prepared_statements=read.flag("DB_PREPARED_STATEMENTS", default=True),
            pool_min=read.integer("DB_POOL_MIN", 1),
            pool_max=read.integer("DB_POOL_MAX", 10),
        ),
        seal_keys=read.raw("SEAL_KEYS"),
        seal_keys_file=read.path("SEAL_KEYS_FILE"),
        worker=WorkerSettings(
            batch_size=read.integer("WORKER_BATCH_SIZE", 100),
            concurrency=read.integer("WORKER_CONCURRENCY", 32),
            lanes=read.integer("WORKER_LANES", 2),
            lease=read.seconds("WORKER_LEASE_SECONDS", 60, minimum=1),
            poll_interval=read.seconds("WORKER_POLL_SECONDS", 1.0),
            provider_timeout=read.seconds("PROVIDER_TIMEOUT_SECONDS", 10),
            shutdown_grace=read.seconds("WORKER_SHUTDOWN_GRACE_SECONDS", 30, minimum=0),
            metrics_port=metrics_port or None,
            retry_schedule=read.seconds_list("RETRY_SCHEDULE_SECONDS", DEFAULT_RETRY_SCHEDULE),
            max_attempts=read.integer("RETRY_MAX_ATTEMPTS", 5),
            suspension_probe=read.seconds("PROVIDER_PROBE_SECONDS", 60),
        ),
        sweeps=SweepSettings(
            expiry_interval=read.seconds("SWEEP_EXPIRY_SECONDS", 60),
            retention_interval=read.seconds("SWEEP_RETENTION_SECONDS", 3600),
            batch_size=read.integer("SWEEP_BATCH_SIZE", 1000),
            published_retention=read.days("RETENTION_PUBLISHED_DAYS", 30),
            dead_lettered_retention=read.days("RETENTION_DEAD_LETTERED_DAYS", 90),
        ),
        http=HttpSettings(
            host=read.text("HTTP_HOST", "127.0.0.1"),
            port=read.port("HTTP_PORT", 8000, allow_zero=True),
        ),
        invitation_link_base_url=read.url(
            "INVITATION_LINK_BASE_URL", DEV_INVITATION_LINK_BASE if development else None
        ),
        magic_link_base_url=read.url(
            "MAGIC_LINK_BASE_URL", DEV_MAGIC_LINK_BASE if development else None
        ),
        template_dir=read.path("TEMPLATE_DIR"),
        log_format=read.choice("LOG_FORMAT", LogFormat.AUTO, LogFormat),
        log_level=read.text("LOG_LEVEL", "info").lower(),
        identity=read_identity_settings(read),
        providers=read_provider_settings(read, environment.value) if providers else None,
    )
