"""The built wheel, installed into a fresh virtualenv beside an application that has its own
``domain`` and ``application`` packages: the application enqueues and appends through
``outbox.producer`` in its own transaction and handles the relayed event through
``outbox.inbox``, against a real PostgreSQL and a real nats-server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import uuid
import zipfile
from pathlib import Path

import psycopg
import pytest

from outbox.adapters.crypto.keyring import generate_key, key_line
from tests.events_rows import SETUP
from tests.integration.nats.conftest import make_stream
from tests.nats_server import NatsServer
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
KEYS = key_line(generate_key("app-key"))
TABLES = """
CREATE TABLE public.app_orders (id uuid PRIMARY KEY, email text NOT NULL);
GRANT INSERT ON public.app_orders TO outbox_producer;
CREATE TABLE public.app_shipments (event_id uuid PRIMARY KEY, order_id text NOT NULL);
GRANT INSERT ON public.app_shipments TO inbox_consumer;
"""

# The application: its own domain and application packages, then a script using only the
# public surface.
DOMAIN = '''
"""The application's own domain: nothing to do with the outbox's."""
ORDER_PLACED = "demo.thing_happened"
'''
APPLICATION = '''
"""The application's own use case: an order, its mail and its event in one transaction."""
import uuid
from datetime import UTC, datetime

from domain import ORDER_PLACED
from outbox.producer import Channel, Producer, Purpose


def place_order(conn, producer: Producer, organization: uuid.UUID, email: str) -> dict:
    order = uuid.uuid4()
    with conn.transaction():
        conn.execute("SET LOCAL ROLE outbox_producer")
        conn.execute("INSERT INTO public.app_orders (id, email) VALUES (%s, %s)", (order, email))
        message = producer.enqueue(
            conn, purpose=Purpose.NOTIFICATION, channel=Channel.EMAIL, destination=email,
            template="order_placed", params={"order": str(order)},
        )
        event = producer.append_event(
            conn, organization_id=organization, event_type=ORDER_PLACED, contract_version=1,
            aggregate_type="thing", aggregate_id=str(order), idempotency_key=f"order-{order}",
            payload={"order": str(order)}, occurred_at=datetime.now(UTC),
        )
    return {"order": str(order), "message": str(message), "event": str(event)}
'''
MAIN = """
import asyncio
import json
import sys
import uuid

import psycopg

import application
import domain
import outbox
from outbox.inbox import run_inbox
from outbox.producer import Producer

command, url = sys.argv[1], sys.argv[2]
if command == "where":
    print(json.dumps({"outbox": outbox.__file__, "domain": domain.__file__}))
elif command == "produce":
    producer = Producer.from_seal_keys(sys.argv[3])
    with psycopg.connect(url) as conn:
        print(json.dumps(application.place_order(conn, producer, uuid.uuid4(), "ada@example.com")))
else:
    async def ship(event, transaction):
        await transaction.execute(
            "INSERT INTO public.app_shipments (event_id, order_id) VALUES (%s, %s)",
            (event.event_id, event.payload["order"]),
        )

    nats_url, stream = sys.argv[3], sys.argv[4]
    environ = {"OUTBOX_NATS_URL": nats_url, "OUTBOX_NATS_STREAM": stream,
               "OUTBOX_NATS_SUBJECT_PREFIX": stream.lower()}
    result = asyncio.run(run_inbox(ship, consumer="app-shipping", database_url=url,
                                   environ=environ, drain=True))
    print(json.dumps({"handled": result.handled}))
"""


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert 0 == done.returncode, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built as a release would build it."""
    out = tmp_path_factory.mktemp("wheel")
    # From a copy of what the wheel is made of: setuptools builds in the tree it is given, and
    # another test process may be building from the working tree at the same time.
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, source)
    (built,) = out.glob("pg_outbox-*.whl")
    return built


@pytest.fixture(scope="module")
def app_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel; its dependencies are the ones this environment
    installed (a path entry to them, which runs none of their .pth files, so the working
    tree's editable install stays out)."""
    venv = tmp_path_factory.mktemp("app-venv")
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel)
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip()
    )
    (Path(site) / "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """The application's folder."""
    for package, text in (("domain", DOMAIN), ("application", APPLICATION)):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(textwrap.dedent(text))
    (tmp_path / "main.py").write_text(textwrap.dedent(MAIN))
    return tmp_path


def test_the_wheel_holds_one_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {"outbox", "-".join(wheel.name.split("-")[:2]) + ".dist-info"} == tops


async def test_an_application_produces_and_consumes_through_the_public_api(
    app_python: Path, app: Path, database_url: str, nats_server: NatsServer, tmp_path: Path
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(SETUP)
        conn.execute(TABLES)
    stream = f"T{uuid.uuid4().hex[:12]}"
    await make_stream(nats_server.url, stream)

    where = json.loads(_run(app_python, "main.py", "where", database_url, cwd=app))
    produced = json.loads(_run(app_python, "main.py", "produce", database_url, KEYS, cwd=app))
    relayed = run_outboxctl(
        "worker",
        "--drain",
        "--lanes",
        "events",
        variables={
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_DATA_DIR": str(tmp_path),
            "OUTBOX_NATS_URL": nats_server.url,
            "OUTBOX_NATS_STREAM": stream,
            "OUTBOX_NATS_SUBJECT_PREFIX": stream.lower(),
        },
    )
    consumed = json.loads(  # the last line: the inbox logs before it (structlog's default)
        _run(
            app_python, "main.py", "consume", database_url, nats_server.url, stream, cwd=app
        ).splitlines()[-1]
    )

    assert where["outbox"].startswith(str(app_python.parents[1]))  # the wheel's copy
    assert where["domain"] == str(app / "domain" / "__init__.py")  # the application's own
    assert 0 == relayed.returncode, relayed.stderr[-2000:]
    assert {"handled": 1} == consumed
    with psycopg.connect(database_url) as conn:
        message = conn.execute(
            "SELECT state, destination, template FROM outbox.messages WHERE id = %s",
            (produced["message"],),
        ).fetchone()
        shipped = conn.execute("SELECT event_id, order_id FROM public.app_shipments").fetchall()
    assert ("pending", "ada@example.com", "order_placed") == message
    assert [(uuid.UUID(produced["event"]), produced["order"])] == shipped
