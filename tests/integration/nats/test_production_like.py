"""Production as deployed: every process with its own login holding only its job's role.

``OUTBOX_ENV=production``; no superuser anywhere but the test's own set-up. The public API
(``identity_service``) and the admin listener (``staff_service``) are served with their
own logins and pass the strict startup role check; a sign-up's code is delivered by the
worker (``outbox_worker``) over SMTP; a service's login (``outbox_producer``, mapped to its
module) appends a tenant event; the worker relays it to JetStream while its consumers lane
(``identity_service``, its own login) sends the welcome mail; and another service's inbox
(``inbox_consumer``, its own login) handles the event once.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from outbox.inbox import InboxEvent, run_inbox
from tests.events_rows import SETUP
from tests.integration.nats.conftest import make_stream
from tests.integration.production import (
    PASSWORD,
    append_demo_event,
    job_logins,
    mailed_code,
    production_environment,
)
from tests.integration.providers.smtp_stand_in import SmtpStandIn
from tests.nats_server import NatsServer
from tests.outboxctl import outboxctl_environment, run_outboxctl
from tests.security.served import OUTBOXCTL, free_port, wait_until_ready

pytestmark = pytest.mark.integration

ADA = "ada@example.com"
JOBS = {
    "api": "identity_service",
    "admin": "staff_service",
    "worker": "outbox_worker",
    "consumers": "identity_service",
    "producer": "outbox_producer",
    "inbox": "inbox_consumer",
}

Logins = dict[str, str]


@pytest.fixture
def logins(database_url: str) -> Iterator[Logins]:
    """One throw-away login per job, granted that job's role only; their URLs by job."""
    with job_logins(database_url, JOBS) as urls:
        yield urls


def _serve(environment: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(OUTBOXCTL), "serve"],
            env=outboxctl_environment(environment),
            stdout=out,
            stderr=out,
        )


def _worker(environment: dict[str, str], lanes: str) -> None:
    done = run_outboxctl("worker", "--drain", "--lanes", lanes, variables=environment, timeout=120)
    assert 0 == done.returncode, done.stdout[-2000:] + done.stderr[-3000:]


def _code(smtp: SmtpStandIn) -> str:
    [mail] = smtp.accepted
    return mailed_code(mail)


async def test_every_process_runs_with_only_its_jobs_login(
    database_url: str,
    logins: Logins,
    smtp: SmtpStandIn,
    nats_server: NatsServer,
    tmp_path: Path,
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(SETUP)  # module demo, its event type, mapped to outbox_producer
    stream = f"T{uuid.uuid4().hex[:12]}"
    await make_stream(nats_server.url, stream)
    broker = {
        "OUTBOX_NATS_URL": nats_server.url,
        "OUTBOX_NATS_STREAM": stream,
        "OUTBOX_NATS_SUBJECT_PREFIX": stream.lower(),
    }
    api = production_environment(
        tmp_path,
        OUTBOX_DATABASE_URL=logins["api"],
        OUTBOX_ADMIN_DATABASE_URL=logins["admin"],
        OUTBOX_HTTP_PORT=str(free_port()),
        OUTBOX_ADMIN_PORT=str(free_port()),
        OUTBOX_WEBHOOK_PORT=str(free_port()),
    )
    worker = production_environment(
        tmp_path,
        OUTBOX_WORKER_DATABASE_URL=logins["worker"],
        OUTBOX_CONSUMERS_DATABASE_URL=logins["consumers"],
        OUTBOX_CHANNEL_EMAIL="smtp",
        OUTBOX_CHANNEL_SMS="none",
        OUTBOX_CHANNEL_WHATSAPP="none",
        OUTBOX_SMTP_HOST="127.0.0.1",
        OUTBOX_SMTP_PORT=str(smtp.port),
        OUTBOX_SMTP_SECURITY="plain",
        OUTBOX_SMTP_FROM="Outbox <no-reply@outbox.test>",
        **broker,
    )
    public = f"http://127.0.0.1:{api['OUTBOX_HTTP_PORT']}"
    admin = f"http://127.0.0.1:{api['OUTBOX_ADMIN_PORT']}"
    log = tmp_path / "serve.log"
    served = _serve(api, log)
    handled: list[InboxEvent] = []

    async def handle(event: InboxEvent, transaction: Any) -> None:
        handled.append(event)

    try:
        await wait_until_ready(public)
        await wait_until_ready(admin)
        async with httpx.AsyncClient(base_url=public, timeout=10) as client:
            signed_up = await client.post("/sign-ups", json={"identifier": ADA})
            await asyncio.to_thread(_worker, worker, "security")
            code = _code(smtp)
            confirmed = await client.post(
                "/sign-ups/confirmations",
                json={"identifier": ADA, "code": code, "password": PASSWORD},
            )
            session = await client.post("/sessions", json={"identifier": ADA, "password": PASSWORD})
        event = await asyncio.to_thread(append_demo_event, logins["producer"], uuid.uuid4())
        # One lane after the other, each drained: the consumers' deliveries exist once the
        # events are published, the welcome once the consumers ran.
        for lane in ("events", "consumers", "security"):
            await asyncio.to_thread(_worker, worker, lane)
        inbox = await run_inbox(
            handle,
            consumer="shop",
            database_url=logins["inbox"],
            environ=production_environment(tmp_path, **broker),
            drain=True,
        )
    finally:
        served.terminate()
        served.wait(timeout=30)

    assert (201, 204, 201) == (
        signed_up.status_code,
        confirmed.status_code,
        session.status_code,
    ), log.read_text(errors="replace")[-3000:]
    subjects = [str(mail.message["Subject"]) for mail in smtp.accepted]
    assert "Your sign-up code" == subjects[0]
    assert "Welcome: your account is ready" in subjects[1:]  # from the consumers lane
    assert {ADA} == {rcpt for mail in smtp.accepted for rcpt in mail.rcpt_tos}
    assert event in {e.event_id for e in handled}
    assert inbox.handled == len(handled)
    assert 0 == served.returncode
    assert "role_warning" not in log.read_text(errors="replace")
