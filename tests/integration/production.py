"""A production deployment inside a test: a login per job, the environment every process
shares, and what the tests read back from it (a mailed code, a tenant event appended by
another service's login).

The end-to-end tests of ``tests/integration/nats/test_production_like.py`` and
``tests/integration/deploy/test_deploy_processes.py`` share these.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql

from outbox.adapters.crypto.keyring import key_line
from outbox.producer import Producer
from tests.integration.providers.smtp_stand_in import Accepted
from tests.integration.worker.conftest import SEAL_KEY

PASSWORD = "correct horse battery staple"  # the account's, in the sign-up flows


@contextlib.contextmanager
def job_logins(
    database_url: str,
    roles: Mapping[str, str | None],
    *,
    names: Mapping[str, str] | None = None,
) -> Iterator[dict[str, str]]:
    """One throw-away login per job, a member of that job's role (``roles``; ``None``: of no
    role) and nothing else; their URLs by job. ``names`` gives a job's login name a prefix (a
    random suffix follows, so two runs never share a login); dropped afterwards, with their
    privileges."""
    logins = {
        job: f"{(names or {}).get(job, f'e2e_{job}')}_{uuid.uuid4().hex[:8]}" for job in roles
    }
    with psycopg.connect(database_url, autocommit=True) as conn:
        for job, name in logins.items():
            member_of = roles[job]
            if member_of is None:  # a login of no role yet
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
                continue
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(
                    sql.Identifier(name), sql.Identifier(member_of)
                )
            )
    try:
        yield {
            job: psycopg.conninfo.make_conninfo(database_url, user=name)
            for job, name in logins.items()
        }
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for name in logins.values():
                # What a login created (a migrator's ledger schema) stays, with the database.
                conn.execute(
                    sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(sql.Identifier(name))
                )
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


# The roles the migrations create when absent, but outbox_owner (the migrator is its member).
JOB_ROLES = (
    "outbox_runtime",
    "outbox_worker",
    "outbox_producer",
    "identity_service",
    "events_consumer",
    "inbox_consumer",
    "notifications_producer",
    "staff_service",
)


def may_grant_job_roles(conn: psycopg.Connection[tuple[object, ...]], login: str) -> None:
    """What docs/sql-api.md#roles says a superuser runs, from PostgreSQL 16, for a migrator
    login that did not create the outbox roles: the ADMIN option on each, no membership."""
    conn.execute(
        sql.SQL("GRANT {} TO {} WITH ADMIN TRUE, INHERIT FALSE, SET FALSE").format(
            sql.SQL(", ").join(map(sql.Identifier, JOB_ROLES)), sql.Identifier(login)
        )
    )


def seal_keys_file(directory: Path) -> Path:
    """The test seal key as a file only its owner reads, as a deployment hands it over."""
    keys = directory / "seal-keys"
    keys.write_text(key_line(SEAL_KEY) + "\n", encoding="utf-8")
    keys.chmod(0o600)
    return keys


def production_environment(tmp_path: Path, **variables: str) -> dict[str, str]:
    """``OUTBOX_ENV=production`` with what every process shares, then ``variables``."""
    return {
        "OUTBOX_ENV": "production",
        "OUTBOX_DATA_DIR": str(tmp_path / "data"),
        "OUTBOX_LOG_FORMAT": "json",
        "OUTBOX_LOG_LEVEL": "warning",
        "OUTBOX_SEAL_KEYS_FILE": str(seal_keys_file(tmp_path)),
        "OUTBOX_INVITATION_LINK_BASE_URL": "https://app.example.com/join",
        "OUTBOX_MAGIC_LINK_BASE_URL": "https://app.example.com/sign-in",
        **variables,
    }


def append_demo_event(producer_url: str, organization: uuid.UUID) -> uuid.UUID:
    """A tenant event of module ``demo`` (tests.events_rows.SETUP), appended on another
    service's login through the public producer; its id."""
    producer = Producer.from_seal_keys(key_line(SEAL_KEY))
    with psycopg.connect(producer_url) as conn, conn.transaction():
        conn.execute("SET LOCAL ROLE outbox_producer")  # the role mapped to module demo
        return producer.append_event(
            conn,
            organization_id=organization,
            event_type="demo.thing_happened",
            contract_version=1,
            aggregate_type="thing",
            aggregate_id="thing-1",
            idempotency_key="thing-1-happened",
            payload={"thing": "1"},
            occurred_at=datetime.now(UTC),
        )


def mailed_code(mail: Accepted) -> str:
    """The one-time code in a mail's plain-text body."""
    body = mail.message.get_body(preferencelist=("plain",))
    assert body is not None
    match = re.search(r"\b\d{6,8}\b", str(body.get_content()))
    assert match is not None
    return match.group(0)
