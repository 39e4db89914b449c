"""Configuration: one frozen tree read once from the environment and validated (SPEC §12)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

import attrs
import platformdirs

PREFIX = "OUTBOX_"
# In development, links point at a local front end so invitations and magic links flow out
# of the box; staging and production must configure them (unset, those messages wait).
DEV_INVITATION_LINK_BASE = "http://localhost:3000/join"
DEV_MAGIC_LINK_BASE = "http://localhost:3000/sign-in"
_T = TypeVar("_T")
_E = TypeVar("_E", bound=enum.Enum)


class SettingsError(Exception):
    """A variable is missing or invalid; the message names it and says what is wrong."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable
        self.problem = problem


class Environment(enum.StrEnum):
    """Where the service runs; development relaxes secrets and allows the console provider."""

    DEVELOPMENT = "development"
    STAGING = "staging"
    PRODUCTION = "production"


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
    """Everything the entry points need, read once from the environment."""

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
    log_format: str
    log_level: str
    environ: Mapping[str, str] = attrs.field(repr=False, eq=False)

    @property
    def is_development(self) -> bool:
        """Whether development conveniences (console provider, generated keys) are allowed."""
        return self.environment is Environment.DEVELOPMENT


class _Reader:
    """Reads one prefixed variable at a time and names it in every error."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def raw(self, name: str) -> str | None:
        value = self._environ.get(PREFIX + name)
        if value is None or not value.strip():
            return None
        return value.strip()

    def text(self, name: str, default: str) -> str:
        return self.raw(name) or default

    def parse(self, name: str, default: _T, parse: Callable[[str], _T], expected: str) -> _T:
        value = self.raw(name)
        if value is None:
            return default
        try:
            return parse(value)
        except ValueError:
            raise SettingsError(PREFIX + name, f"expected {expected}, got {value!r}") from None

    def integer(self, name: str, default: int, *, minimum: int = 1) -> int:
        number = self.parse(name, default, int, "an integer")
        if number < minimum:
            raise SettingsError(PREFIX + name, f"must be at least {minimum}, got {number}")
        return number

    def seconds(self, name: str, default: float, *, minimum: float = 0.001) -> timedelta:
        number = self.parse(name, default, float, "a number of seconds")
        if number < minimum:
            raise SettingsError(PREFIX + name, f"must be at least {minimum} seconds, got {number}")
        return timedelta(seconds=number)

    def flag(self, name: str, *, default: bool) -> bool:
        return self.parse(name, default, _parse_bool, "true or false")

    def choice(self, name: str, default: _E, kind: type[_E]) -> _E:
        allowed = ", ".join(str(member.value) for member in kind)
        return self.parse(name, default, kind, f"one of {allowed}")

    def url(self, name: str) -> str | None:
        value = self.raw(name)
        if value is not None and not value.startswith(("https://", "http://")):
            raise SettingsError(PREFIX + name, "expected an http(s):// URL")
        return value.rstrip("/") if value else None


def _parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(value)


def _parse_schedule(value: str) -> tuple[timedelta, ...]:
    steps = tuple(timedelta(seconds=float(part)) for part in value.split(","))
    if not steps or any(step <= timedelta(0) for step in steps):
        raise ValueError(value)
    return steps


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Build the settings tree from ``environ``; raises SettingsError naming the bad variable."""
    read = _Reader(environ)
    environment = read.choice("ENV", Environment.DEVELOPMENT, Environment)
    data_dir = Path(read.text("DATA_DIR", platformdirs.user_data_dir("outbox")))
    seal_keys_file = read.raw("SEAL_KEYS_FILE")
    log_format = read.text("LOG_FORMAT", "auto")
    if log_format not in {"auto", "json", "console"}:
        raise SettingsError(PREFIX + "LOG_FORMAT", "expected auto, json or console")
    metrics_port = read.integer("WORKER_METRICS_PORT", 0, minimum=0)
    return Settings(
        environment=environment,
        data_dir=data_dir,
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
        seal_keys_file=Path(seal_keys_file) if seal_keys_file else None,
        worker=WorkerSettings(
            batch_size=read.integer("WORKER_BATCH_SIZE", 100),
            concurrency=read.integer("WORKER_CONCURRENCY", 32),
            lanes=read.integer("WORKER_LANES", 2),
            lease=read.seconds("WORKER_LEASE_SECONDS", 60, minimum=1),
            poll_interval=read.seconds("WORKER_POLL_SECONDS", 1.0),
            provider_timeout=read.seconds("PROVIDER_TIMEOUT_SECONDS", 10),
            shutdown_grace=read.seconds("WORKER_SHUTDOWN_GRACE_SECONDS", 30, minimum=0),
            metrics_port=metrics_port or None,
            retry_schedule=read.parse(
                "RETRY_SCHEDULE_SECONDS",
                (
                    timedelta(seconds=5),
                    timedelta(seconds=30),
                    timedelta(minutes=2),
                    timedelta(minutes=10),
                    timedelta(minutes=30),
                ),
                _parse_schedule,
                "comma-separated positive seconds, e.g. 5,30,120,600,1800",
            ),
            max_attempts=read.integer("RETRY_MAX_ATTEMPTS", 5),
            suspension_probe=read.seconds("PROVIDER_PROBE_SECONDS", 60),
        ),
        sweeps=SweepSettings(
            expiry_interval=read.seconds("SWEEP_EXPIRY_SECONDS", 60),
            retention_interval=read.seconds("SWEEP_RETENTION_SECONDS", 3600),
            batch_size=read.integer("SWEEP_BATCH_SIZE", 1000),
            published_retention=timedelta(days=read.integer("RETENTION_PUBLISHED_DAYS", 30)),
            dead_lettered_retention=timedelta(
                days=read.integer("RETENTION_DEAD_LETTERED_DAYS", 90)
            ),
        ),
        http=HttpSettings(
            host=read.text("HTTP_HOST", "127.0.0.1"),
            port=read.integer("HTTP_PORT", 8000, minimum=0),
        ),
        invitation_link_base_url=read.url("INVITATION_LINK_BASE_URL")
        or (DEV_INVITATION_LINK_BASE if environment is Environment.DEVELOPMENT else None),
        magic_link_base_url=read.url("MAGIC_LINK_BASE_URL")
        or (DEV_MAGIC_LINK_BASE if environment is Environment.DEVELOPMENT else None),
        template_dir=Path(t) if (t := read.raw("TEMPLATE_DIR")) else None,
        log_format=log_format,
        log_level=read.text("LOG_LEVEL", "info").lower(),
        environ=dict(environ),
    )
