"""Health, readiness, the per-client limit, and the OpenAPI schema the app serves."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.adapters.postgres.migrator import Migration, load_migrations
from outbox.adapters.postgres.readiness import PostgresReadinessProbe
from outbox.application.check_readiness import CheckReadiness
from outbox.domain.identity.rate_limits import RateLimit
from tests.integration.identity.api import Api, problem_type

pytestmark = pytest.mark.integration


async def test_healthz_and_readyz_answer_when_migrated(api: Api) -> None:
    assert {"status": "ok", "pendingMigrations": [], "missingRole": None, "hint": None} == (
        (await api.client.get("/healthz")).json()
    )
    ready = await api.client.get("/readyz")
    assert 200 == ready.status_code
    assert "ready" == ready.json()["status"]


async def test_readyz_names_a_pending_migration(api: Api) -> None:
    pool = api.services.check_readiness.probe._pool  # type: ignore[attr-defined]
    extra = Migration(version=9999, name="not_applied", sql="SELECT 1")
    probe = PostgresReadinessProbe(pool, [*load_migrations(), extra])
    object.__setattr__(
        api.services, "check_readiness", CheckReadiness(probe=probe, telemetry=api.telemetry)
    )

    response = await api.client.get("/readyz")

    assert 503 == response.status_code
    assert ["9999_not_applied"] == response.json()["pendingMigrations"]


async def test_readyz_reports_an_unreachable_database(api: Api) -> None:
    pool = api.services.check_readiness.probe._pool  # type: ignore[attr-defined]
    await pool.close()

    response = await api.client.get("/readyz")

    assert 503 == response.status_code
    assert "database_unreachable" == response.json()["status"]
    assert "check the database URL and that PostgreSQL is up" == response.json()["hint"]


async def test_the_client_address_limit_is_a_429_with_retry_after(api: Api) -> None:
    api.tighten(per_client=RateLimit(limit=2, window=timedelta(minutes=1)))
    body = {"identifier": "alice@example.com"}
    for _ in range(2):
        assert 201 == (await api.post("/sign-ups", body)).status_code

    refused = await api.post("/sign-ups", body)

    assert "urn:outbox:problem:rate-limited" == problem_type(refused)
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    [(keys,)] = await api.rows("SELECT count(DISTINCT key) FROM identity.rate_limit_counters")
    assert 1 == keys  # one per client address and route
    [(paces,)] = await api.rows("SELECT count(*) FROM identity.destination_paces")
    assert 1 == paces  # one per destination
    [(stored,)] = await api.rows(
        "SELECT (SELECT count(*) FROM identity.rate_limit_counters WHERE key LIKE '%%example%%')"
        " + (SELECT count(*) FROM identity.destination_paces WHERE key LIKE '%%example%%')"
    )
    assert 0 == stored


async def test_every_error_status_is_documented_in_the_served_schema(api: Api) -> None:
    schema = (await api.client.get("/schema/openapi.json")).json()

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            documented = set(operation["responses"])
            if path not in {"/healthz", "/readyz", "/metrics"}:
                assert {"500"} <= documented, (method, path)
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")) and path != "/readyz":
                    content = response["content"]
                    assert ["application/problem+json"] == list(content), (method, path, status)
