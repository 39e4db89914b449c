"""The settings tree: everything a process needs, read once from the environment.

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
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from outbox.domain.channels import Channel
from outbox.entrypoints.settings.identity import IdentitySettings, read_identity_settings
from outbox.entrypoints.settings.lanes import (
    RESERVED_SLOT_VARIABLE,
    SECURITY,
    LaneSettings,
    ReservedSlot,
    read_lanes,
)
from outbox.entrypoints.settings.nats import NatsSettings, read_nats_settings
from outbox.entrypoints.settings.providers import (
    ProviderSettings,
    read_channel_routes,
    read_provider_settings,
)
from outbox.entrypoints.settings.reader import EnvironmentReader
from outbox.entrypoints.settings.webhooks import WebhookSettings, read_webhook_settings

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
_HIGHEST_PORT = 65535

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
    inbox_url: str | None = attrs.field(repr=False)  # a consuming service's inbox
    worker_role: str | None  # SET ROLE on every worker connection (a group role, not a login)
    api_role: str | None  # SET ROLE on every API connection
    # The admin listener's own login (staff routes, console): staff_service, which the
    # public API's login must not hold. None: the API's URL.
    admin_url: str | None = attrs.field(default=None, repr=False)
    admin_role: str | None = None  # SET ROLE on every admin listener connection
    # The shipped consumers' own login (identity_service's job): the worker's consumers lane
    # and outboxctl consume. None: the API's URL.
    consumers_url: str | None = attrs.field(default=None, repr=False)
    prepared_statements: bool
    pool_min: int
    pool_max: int
    # How long a pool keeps trying to open its first connections before the command gives
    # up (exit 4, or the worker's readiness says why).
    connect_timeout: timedelta = timedelta(seconds=5)


@attrs.frozen(kw_only=True)
class WorkerSettings:
    """How the worker claims and sends, lane by lane."""

    lanes: tuple[str, ...]  # the lanes this worker runs (settings/lanes.py)
    lane_sizing: Mapping[str, LaneSettings]  # every lane's, selected or not
    lease: timedelta
    poll_interval: timedelta
    provider_timeout: timedelta
    shutdown_grace: timedelta
    metrics_port: int | None
    metrics_host: str  # where /metrics, /healthz and /readyz listen (loopback by default)
    retry_schedule: tuple[timedelta, ...]
    max_attempts: int
    suspension_probe: timedelta  # how long a suspended provider rests before one probe send
    # Where the security lane's reserved slot runs (``--lane-processes`` gives it a process).
    reserved_slot: ReservedSlot = ReservedSlot.BESIDE
    # With the slot ``elsewhere``, how long the batches leave a fresh code to it.
    slot_grace: timedelta = timedelta(seconds=0.1)

    @property
    def security(self) -> LaneSettings:
        """The security lane's sizing: one-time codes, links and notifications."""
        return self.lane_sizing[SECURITY]

    def resized(self, lane: str, sizing: LaneSettings) -> WorkerSettings:
        """These settings with ``lane`` sized as ``sizing`` (a command-line override)."""
        return attrs.evolve(self, lane_sizing={**self.lane_sizing, lane: sizing})


@attrs.frozen(kw_only=True)
class SweepSettings:
    """How often sweeps run and how much they take at once."""

    expiry_interval: timedelta
    retention_interval: timedelta
    batch_size: int
    published_retention: timedelta
    dead_lettered_retention: timedelta


@attrs.frozen(kw_only=True)
class ConsoleSettings:
    """The operator console on the admin listener."""

    enabled: bool  # OUTBOX_CONSOLE (on by default)
    origin: str | None  # its https origin when reached beyond loopback: Secure cookies
    idle: timedelta  # a session ends after this long without a request
    lifetime: timedelta  # ... and after this long in all


@attrs.frozen(kw_only=True)
class HttpSettings:
    """Where the API's two listeners are, and whom they believe."""

    host: str  # the public listener: identity routes, /healthz, /readyz
    port: int
    admin_host: str  # the admin listener: /metrics and the staff routes
    admin_port: int
    trusted_proxies: tuple[str, ...]  # peers whose X-Forwarded-For names the client
    request_timeout: timedelta  # a whole request must arrive within this
    console: ConsoleSettings
    max_connections: int = 1000  # open connections per listener (lowered to the file limit)


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
    webhooks: WebhookSettings  # the listener providers post receipts to
    providers: ProviderSettings | None = None
    # Which provider sends each channel (None: none), read by every process from
    # OUTBOX_CHANNEL_*; a channel absent is one this process was not told about.
    channels: Mapping[Channel, str | None] = attrs.field(factory=dict)
    nats: NatsSettings | None = None  # the broker relay, on when OUTBOX_NATS_URL is set
    # Things that work but an operator should hear about at start-up (logged, not fatal).
    warnings: tuple[str, ...] = ()

    @property
    def is_development(self) -> bool:
        """Whether development conveniences (console provider, generated keys) are allowed."""
        return self.environment is Environment.DEVELOPMENT


def load_settings(environ: Mapping[str, str], *, providers: bool = False) -> Settings:
    """Build the settings tree from ``environ``; raises SettingsError naming the bad variables.

    Every bad variable is reported at once (a SettingsProblems, one line each). ``providers``
    also reads and checks the channel → provider configuration, which only a process that
    sends needs (and which staging and production require in full).
    """
    read = EnvironmentReader(environ, collect=True)
    environment = read.choice("ENV", Environment.DEVELOPMENT, Environment)
    development = environment is Environment.DEVELOPMENT
    read.strict = not development
    metrics_port = read.port("WORKER_METRICS_PORT", 0, allow_zero=True)
    lanes = read_lanes(read)
    settings = Settings(
        environment=environment,
        data_dir=read.path("DATA_DIR") or Path(platformdirs.user_data_dir("outbox")),
        database=_database(read),
        seal_keys=read.raw("SEAL_KEYS"),
        seal_keys_file=read.path("SEAL_KEYS_FILE"),
        worker=WorkerSettings(
            lanes=lanes.lanes,
            lane_sizing=lanes.sizing,
            lease=read.seconds("WORKER_LEASE_SECONDS", 60, minimum=1),
            poll_interval=read.seconds("WORKER_POLL_SECONDS", 1.0),
            provider_timeout=read.seconds("PROVIDER_TIMEOUT_SECONDS", 10),
            shutdown_grace=read.seconds("WORKER_SHUTDOWN_GRACE_SECONDS", 30, minimum=0),
            metrics_port=metrics_port or None,
            metrics_host=read.text("WORKER_METRICS_HOST", "127.0.0.1"),
            retry_schedule=read.seconds_list("RETRY_SCHEDULE_SECONDS", DEFAULT_RETRY_SCHEDULE),
            max_attempts=read.integer("RETRY_MAX_ATTEMPTS", 5),
            suspension_probe=read.seconds("PROVIDER_PROBE_SECONDS", 60),
            reserved_slot=read.choice(RESERVED_SLOT_VARIABLE, ReservedSlot.BESIDE, ReservedSlot),
            slot_grace=read.seconds("WORKER_SLOT_GRACE_SECONDS", 0.1, minimum=0, maximum=60),
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
            admin_host=read.text("ADMIN_HOST", "127.0.0.1"),
            admin_port=read.port("ADMIN_PORT", 8001, allow_zero=True),
            trusted_proxies=read.networks("TRUSTED_PROXIES"),
            request_timeout=read.seconds("HTTP_REQUEST_TIMEOUT_SECONDS", 10),
            max_connections=read.integer("HTTP_MAX_CONNECTIONS", 1000, minimum=16),
            console=ConsoleSettings(
                enabled=read.flag("CONSOLE", default=True),
                origin=read.url("CONSOLE_ORIGIN"),
                idle=read.seconds("CONSOLE_IDLE_SECONDS", 15 * 60, minimum=60),
                lifetime=read.seconds("CONSOLE_LIFETIME_SECONDS", 8 * 3600, minimum=60),
            ),
        ),
        invitation_link_base_url=read.url(
            "INVITATION_LINK_BASE_URL", DEV_INVITATION_LINK_BASE if development else None
        ),
        magic_link_base_url=read.url(
            "MAGIC_LINK_BASE_URL", DEV_MAGIC_LINK_BASE if development else None
        ),
        template_dir=read.directory("TEMPLATE_DIR"),
        log_format=read.choice("LOG_FORMAT", LogFormat.AUTO, LogFormat),
        log_level=_log_level(read),
        identity=read.section(
            lambda: read_identity_settings(read, development=development), _DEFAULT_IDENTITY
        ),
        webhooks=read_webhook_settings(read),
        providers=(
            read.section(
                lambda: read_provider_settings(read, environment.value),
                ProviderSettings(channels={}),
            )
            if providers
            else None
        ),
        nats=read_nats_settings(read),
    )
    settings = attrs.evolve(settings, channels=_channels(read, settings))
    _check_together(read, settings)
    read.raise_problems()
    return attrs.evolve(settings, warnings=lanes.warnings + _warnings(settings))


_DEFAULT_IDENTITY = read_identity_settings(EnvironmentReader({}), development=True)


def _database(read: EnvironmentReader) -> DatabaseSettings:
    pool_min = read.integer("DB_POOL_MIN", 1)
    pool_max = read.integer("DB_POOL_MAX", 10)
    if pool_min > pool_max:
        read.refuse("DB_POOL_MIN", f"must not exceed OUTBOX_DB_POOL_MAX ({pool_max})", None)
    return DatabaseSettings(
        url=_database_url(read, "DATABASE_URL"),
        worker_url=_database_url(read, "WORKER_DATABASE_URL"),
        inbox_url=_database_url(read, "INBOX_DATABASE_URL"),
        admin_url=_database_url(read, "ADMIN_DATABASE_URL"),
        consumers_url=_database_url(read, "CONSUMERS_DATABASE_URL"),
        worker_role=read.raw("WORKER_DB_ROLE"),
        api_role=read.raw("API_DB_ROLE"),
        admin_role=read.raw("ADMIN_DB_ROLE"),
        prepared_statements=read.flag("DB_PREPARED_STATEMENTS", default=True),
        pool_min=pool_min,
        pool_max=pool_max,
        connect_timeout=read.seconds("DB_CONNECT_TIMEOUT_SECONDS", 5, minimum=1),
    )


def _database_url(read: EnvironmentReader, name: str) -> str | None:
    """A libpq URL or ``key=value`` string; a malformed one is quoted with its password masked."""
    value = read.raw(name)
    if value is None:
        return None
    expected = "expected postgresql://user:password@host:port/database or key=value pairs"
    try:
        # libpq's own parser, so what passes here is what psycopg will accept; its error
        # text quotes the whole string, password included, and is never shown.
        options = conninfo_to_dict(value)
    except ProgrammingError:
        return read.refuse(name, f"{expected}, got {read.shown(name, value)}", None)
    for port in str(options.get("port", "")).split(","):
        if port and not (port.isdigit() and 0 < int(port) <= _HIGHEST_PORT):
            problem = f"the port must be a number (1-{_HIGHEST_PORT}), got {port!r}"
            return read.refuse(name, problem, None)
    return value


def _log_level(read: EnvironmentReader) -> str:
    level = read.text("LOG_LEVEL", "info").lower()
    if level not in LOG_LEVELS:
        problem = f"expected one of {', '.join(LOG_LEVELS)}, got {read.shown('LOG_LEVEL', level)}"
        return read.refuse("LOG_LEVEL", problem, "info")
    return level


def _channels(read: EnvironmentReader, settings: Settings) -> dict[Channel, str | None]:
    """The channel map: the providers' own when they were read (every channel named), else
    OUTBOX_CHANNEL_* read alone."""
    if settings.providers is not None:
        return {channel: settings.providers.channels.get(channel) for channel in Channel}
    return read_channel_routes(read, settings.environment.value)


def _check_together(read: EnvironmentReader, settings: Settings) -> None:
    """Rules between variables, checked once each has been read on its own."""
    lifetime = settings.identity.challenges.lifetime
    if settings.sweeps.expiry_interval > lifetime:
        # An unsent code would then wait in the queue past its lifetime, and be sent dead.
        read.refuse(
            "SWEEP_EXPIRY_SECONDS",
            f"must not exceed the code lifetime (OUTBOX_CHALLENGE_LIFETIME_SECONDS,"
            f" {lifetime.total_seconds():g} s)",
            None,
        )


def _warnings(settings: Settings) -> tuple[str, ...]:
    """Working but doubtful choices, logged at start-up by every process."""
    if settings.is_development:
        return ()
    unset = [
        f"OUTBOX_{name}_LINK_BASE_URL"
        for name, value in (
            ("INVITATION", settings.invitation_link_base_url),
            ("MAGIC", settings.magic_link_base_url),
        )
        if value is None
    ]
    return tuple(
        f"{variable} is unset: messages that carry such a link wait unsent until it is set"
        for variable in unset
    )
