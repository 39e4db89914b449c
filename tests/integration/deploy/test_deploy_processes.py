"""The systemd examples, started as written: every unit's ExecStart with the environment its
EnvironmentFile= and Environment= lines give, on a login per job, drains a code, a tenant
event and a shipped consumer's delivery end to end.

What the examples leave to the operator is filled in here, and only that: the database
logins they name (created, each a member of its job's role alone, as docs/operations.md
says), their URLs, the SMTP server and its password, the seal keys (the units'
LoadCredential=), free ports instead of the fixed ones, and the NATS broker an operator adds
to relay tenant events. If an example cannot start as written, this test fails naming the
process and its log; fix the example.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import ssl
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import attrs
import httpx
import psycopg
import pytest
import trustme
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from outbox.inbox import InboxEvent, run_inbox
from tests.events_rows import SETUP
from tests.integration.deploy.artifacts import DEPLOY, parse_env_file, parse_unit, unit_values
from tests.integration.nats.conftest import make_stream, nats_server  # noqa: F401 - a fixture
from tests.integration.production import (
    PASSWORD,
    append_demo_event,
    job_logins,
    mailed_code,
    may_grant_job_roles,
    production_environment,
    seal_keys_file,
)
from tests.integration.providers.smtp_stand_in import PASSWORD as SMTP_PASSWORD
from tests.integration.providers.smtp_stand_in import USERNAME, Behaviour, SmtpStandIn
from tests.nats_server import NatsServer
from tests.outboxctl import LISTENER_PORTS, OUTBOXCTL, outboxctl_environment
from tests.security.served import free_port, wait_until_ready

pytestmark = pytest.mark.integration

SYSTEMD = DEPLOY / "systemd"
INSTALLED_OUTBOXCTL = "/opt/outbox/bin/outboxctl"  # where deploy/README.md installs it
# The long-running services, and the one-shot ones (migrations first, the sweeps on timers).
SERVICES = ("outbox-api", "outbox-admin", "outbox-worker")
ONE_SHOTS = ("outbox-sweep-expiry", "outbox-sweep-retention")
# The login each example names, and the one role it holds (docs/operations.md, "Which role
# each deployment piece gets"; deploy/README.md).
ROLES = {
    "outbox_api": "identity_service",
    "outbox_admin": "staff_service",
    "outbox_worker_login": "outbox_worker",
    "outbox_consumers": "identity_service",
    "outbox_migrator": "outbox_owner",
}
# Not in the examples: another service that appends tenant events, and one whose inbox
# consumes them from NATS.
OTHERS = {"producer": "outbox_producer", "inbox": "inbox_consumer"}
# A value an example leaves to the operator: none may reach a process.
PLACEHOLDERS = ("CHANGE-ME", ".example.internal", "smtp.example.com")
ADA = "ada@example.com"
WITHIN = 60.0  # seconds any one wait may take

_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class Unit:
    """A service unit as systemd would start it: its command and its whole environment."""

    name: str
    argv: tuple[str, ...]  # ExecStart, with this environment's outboxctl
    environ: dict[str, str]

    def logins(self) -> set[str]:
        """The database logins its environment names."""
        return {
            str(conninfo_to_dict(value)["user"])
            for name, value in self.environ.items()
            if name.endswith("DATABASE_URL")
        }


def _unit(name: str, credentials: Path) -> Unit:
    """``deploy/systemd/<name>.service`` as systemd reads it: each EnvironmentFile= in order
    (/etc/outbox/X.env is the example's X.env), then each Environment= line, ``%d`` being the
    unit's credentials directory."""
    unit = parse_unit(SYSTEMD / f"{name}.service")
    environ: dict[str, str] = {}
    for path in unit_values(unit, "Service", "EnvironmentFile"):
        environ.update(parse_env_file(SYSTEMD / Path(path).name))
    for assignment in unit_values(unit, "Service", "Environment"):
        variable, _, value = assignment.partition("=")
        environ[variable] = value.replace("%d", str(credentials))
    [exec_start] = unit_values(unit, "Service", "ExecStart")
    program, *arguments = shlex.split(exec_start)
    assert INSTALLED_OUTBOXCTL == program, f"{name}: ExecStart runs {program}"
    return Unit(name=name, argv=(OUTBOXCTL, *arguments), environ=environ)


@attrs.frozen(kw_only=True)
class Filled:
    """What the operator provides: a URL per login, the SMTP server, the broker."""

    urls: dict[str, str]  # by the login name the examples give
    smtp_port: int
    ca_file: Path
    broker: dict[str, str]  # OUTBOX_NATS_*, for the worker: the relay is the operator's choice

    def fill(self, unit: Unit) -> Unit:
        """``unit`` with every value the examples leave to the operator filled in."""
        environ = dict(unit.environ)
        for name, value in unit.environ.items():
            if name.endswith("DATABASE_URL"):
                environ[name] = self.urls[str(conninfo_to_dict(value)["user"])]
            elif name in LISTENER_PORTS:
                environ[name] = str(free_port())  # the machine is shared: no fixed ports
        if environ.get("OUTBOX_CHANNEL_EMAIL") == "smtp" and "OUTBOX_SMTP_HOST" in environ:
            environ.update(
                OUTBOX_SMTP_HOST="127.0.0.1",
                OUTBOX_SMTP_PORT=str(self.smtp_port),
                OUTBOX_SMTP_USERNAME=USERNAME,
                OUTBOX_SMTP_PASSWORD=SMTP_PASSWORD,
                OUTBOX_SMTP_CA_FILE=str(self.ca_file),
            )
        if unit.argv[1:2] == ("worker",):
            environ.update(self.broker)
        left = sorted(n for n, v in environ.items() if any(p in v for p in PLACEHOLDERS))
        assert [] == left, f"{unit.name}: left to the operator and not filled in: {left}"
        return attrs.evolve(unit, environ=environ)


@attrs.define
class Running:
    """A started unit's process and its log."""

    unit: Unit
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        """The end of its log, for a failure's message."""
        return f"{self.unit.name}:\n" + self.log.read_text(errors="replace")[-3000:]

    def stop(self) -> int:
        """SIGTERM, as systemd's KillSignal=; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=45)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


@contextlib.contextmanager
def started(units: list[Unit], logs: Path) -> Iterator[list[Running]]:
    """Each unit's process, started; killed if still running at the end."""
    running: list[Running] = []
    try:
        for unit in units:
            log = logs / f"{unit.name}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    unit.argv, env=outboxctl_environment(unit.environ), stdout=out, stderr=out
                )
            running.append(Running(unit=unit, process=process, log=log))
        yield running
    finally:
        for each in running:
            if each.process.poll() is None:
                each.process.kill()
                each.process.wait()


def run_once(unit: Unit) -> subprocess.CompletedProcess[str]:
    """A one-shot unit (Type=oneshot), run to its end."""
    return subprocess.run(
        list(unit.argv),
        env=outboxctl_environment(unit.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def eventually(
    what: str, probe: Callable[[], Awaitable[_T | None]], why: Callable[[], str]
) -> _T:
    """``await probe()`` until it gives something; fail after WITHIN seconds with ``why()``."""
    deadline = time.monotonic() + WITHIN
    while time.monotonic() < deadline:
        found = await probe()
        if found:
            return found
        await asyncio.sleep(0.2)
    pytest.fail(f"{what}: nothing after {WITHIN} s\n{why()}")


@pytest.fixture
def smtp_tls(tmp_path: Path) -> Iterator[tuple[SmtpStandIn, Path]]:
    """An SMTP server with STARTTLS and required AUTH, as the example's starttls expects; the
    CA file that trusts its certificate."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    ca_file = tmp_path / "smtp-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    server = SmtpStandIn(Behaviour(), starttls=context)
    server.start()
    yield server, ca_file
    server.stop()


@pytest.fixture
def credentials(tmp_path: Path) -> Path:
    """The units' credentials directory (LoadCredential=seal-keys:…)."""
    directory = tmp_path / "credentials"
    directory.mkdir()
    seal_keys_file(directory)
    return directory


@pytest.fixture
async def broker(nats_server: NatsServer) -> dict[str, str]:  # noqa: F811
    """The relay's settings, on a stream of this test's own."""
    stream = f"T{uuid.uuid4().hex[:12]}"
    await make_stream(nats_server.url, stream)
    return {
        "OUTBOX_NATS_URL": nats_server.url,
        "OUTBOX_NATS_STREAM": stream,
        "OUTBOX_NATS_SUBJECT_PREFIX": stream.lower(),
    }


def test_the_examples_name_one_login_per_job(credentials: Path) -> None:
    """Every login the units name is one this test knows the job of (a new one needs a row
    in ROLES), and no two jobs share one."""
    units = {name: _unit(name, credentials) for name in ("outbox-migrate", *SERVICES)}

    assert set(ROLES) == set().union(*(unit.logins() for unit in units.values()))
    assert {"outbox_migrator"} == units["outbox-migrate"].logins()
    assert {"outbox_api"} == units["outbox-api"].logins()
    assert {"outbox_admin"} == units["outbox-admin"].logins()
    assert {"outbox_worker_login", "outbox_consumers"} == units["outbox-worker"].logins()


async def test_each_unit_starts_as_written_and_drains_codes_events_and_consumers(
    empty_database_url: str,
    smtp_tls: tuple[SmtpStandIn, Path],
    credentials: Path,
    broker: dict[str, str],
    tmp_path: Path,
) -> None:
    """A first install: outbox-migrate creates the schema, then the services run."""
    smtp, ca_file = smtp_tls
    database_url = empty_database_url
    filled = Filled(urls={}, smtp_port=smtp.port, ca_file=ca_file, broker=broker)
    # On a cluster that has never seen the outbox the migrator is a plain login with
    # CREATEROLE, which the first migration makes a member of outbox_owner (docs/sql-api.md);
    # on one where another database made outbox_owner already, it is created a member and,
    # from PostgreSQL 16, given the ADMIN option on the job roles (_may_migrate).
    with psycopg.connect(database_url, autocommit=True) as conn:
        owner_exists = conn.execute(
            "SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLES["outbox_migrator"],)
        ).fetchone()
    migrator = {"outbox_migrator": ROLES["outbox_migrator"] if owner_exists else None}
    with job_logins(database_url, migrator, names={n: n for n in migrator}) as urls:
        _may_migrate(database_url, urls["outbox_migrator"], roles_exist=bool(owner_exists))
        migrated = run_once(
            attrs.evolve(filled, urls=urls).fill(_unit("outbox-migrate", credentials))
        )
        assert 0 == migrated.returncode, migrated.stderr[-3000:]
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(SETUP)  # module demo and its event type, mapped to outbox_producer
        services = {name: role for name, role in ROLES.items() if name not in migrator}
        with job_logins(
            database_url, {**services, **OTHERS}, names={n: n for n in services}
        ) as more:
            filled = attrs.evolve(filled, urls={**urls, **more})
            units = [filled.fill(_unit(name, credentials)) for name in SERVICES]
            with started(units, tmp_path) as running:
                api, admin, worker = running
                public = f"http://127.0.0.1:{api.unit.environ['OUTBOX_HTTP_PORT']}"
                await _ready(api, public)
                await _ready(admin, f"http://127.0.0.1:{admin.unit.environ['OUTBOX_ADMIN_PORT']}")
                metrics = worker.unit.environ["OUTBOX_WORKER_METRICS_PORT"]
                await _ready(worker, f"http://127.0.0.1:{metrics}")
                why = lambda: "\n".join(r.output() for r in running)  # noqa: E731
                event, handled = await _drain(
                    public, smtp, filled.urls, broker, why, tmp_path=tmp_path
                )
                sweeps = [run_once(filled.fill(_unit(name, credentials))) for name in ONE_SHOTS]
                codes = [each.stop() for each in running]
                logs = [each.output() for each in running]

    assert [0] * len(ONE_SHOTS) == [s.returncode for s in sweeps], [s.stderr for s in sweeps]
    assert [0, 0, 0] == codes, "\n".join(logs)
    subjects = [str(mail.message["Subject"]) for mail in smtp.accepted]
    assert "Your sign-up code" == subjects[0]
    assert "Welcome: your account is ready" in subjects[1:]  # the consumers lane's
    assert {ADA} == {rcpt for mail in smtp.accepted for rcpt in mail.rcpt_tos}
    assert event in {e.event_id for e in handled}
    assert not [log for log in logs if "role_warning" in log]


def _may_migrate(database_url: str, migrator_url: str, *, roles_exist: bool) -> None:
    """The migrator's login as docs/sql-api.md describes it: it creates the job roles
    (CREATEROLE) and the schemas, in a database it may create schemas in; where another login
    created the roles, from PostgreSQL 16, it holds their ADMIN option."""
    login = str(conninfo_to_dict(migrator_url)["user"])
    name = sql.Identifier(login)
    database = sql.Identifier(str(conninfo_to_dict(database_url)["dbname"]))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} CREATEROLE").format(name))
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(database, name))
        if roles_exist and conn.info.server_version >= 160000:
            may_grant_job_roles(conn, login)


async def _ready(running: Running, base_url: str) -> None:
    try:
        await wait_until_ready(base_url)
    except AssertionError:
        pytest.fail(
            f"{running.unit.name} is not ready: {running.process.poll()=}\n{running.output()}"
        )


async def _drain(
    public: str,
    smtp: SmtpStandIn,
    urls: dict[str, str],
    broker: dict[str, str],
    why: Callable[[], str],
    *,
    tmp_path: Path,
) -> tuple[uuid.UUID, list[InboxEvent]]:
    """A sign-up's code by mail, its confirmation, a tenant event appended by another
    service and consumed from NATS by a third, and the welcome mail of the shipped consumer."""
    async with httpx.AsyncClient(base_url=public, timeout=10) as client:
        signed_up = await client.post("/sign-ups", json={"identifier": ADA})
        assert 201 == signed_up.status_code, signed_up.text
        mail = await eventually("the sign-up code", _first(smtp), why)
        confirmed = await client.post(
            "/sign-ups/confirmations",
            json={"identifier": ADA, "code": mailed_code(mail), "password": PASSWORD},
        )
        assert 204 == confirmed.status_code, confirmed.text
    event = await asyncio.to_thread(append_demo_event, urls["producer"], uuid.uuid4())
    await eventually("the welcome mail", _welcome(smtp), why)
    handled: list[InboxEvent] = []

    async def handle(received: InboxEvent, transaction: Any) -> None:
        handled.append(received)

    async def consumed() -> bool:
        await run_inbox(
            handle,
            consumer="shop",
            database_url=urls["inbox"],
            environ=production_environment(tmp_path, **broker),
            drain=True,
        )
        return event in {e.event_id for e in handled}

    await eventually("the tenant event through NATS", consumed, why)
    return event, handled


def _first(smtp: SmtpStandIn) -> Callable[[], Awaitable[Any]]:
    async def probe() -> Any:
        return smtp.accepted[0] if smtp.accepted else None

    return probe


def _welcome(smtp: SmtpStandIn) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return any("Welcome" in str(m.message["Subject"]) for m in smtp.accepted)

    return probe
