"""``outboxctl events demo`` against the real database: module demo appends for two
organizations, the worker publishes, the backlog drains. The first test runs the installed
executable; the others run the same commands in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.outboxctl import invoke_outboxctl, run_outboxctl

pytestmark = pytest.mark.integration


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_DATA_DIR": str(tmp_path),
        "OUTBOX_LOG_LEVEL": "warning",
        "OUTBOX_ENV": "development",
    }


def _json(result: Any) -> Any:
    assert ExitCode.OK == result.returncode, result.stderr
    return json.loads(result.stdout)


def _pending(env: dict[str, str]) -> dict[str, int]:
    items = _json(invoke_outboxctl("events", "backlog", "--json", variables=env))["items"]
    return {item["organizationId"]: item["pending"] for item in items if item["pending"]}


def _demo_events(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        [(count,)] = conn.execute(
            "SELECT count(*) FROM events.domain_events WHERE producer_module_code = 'demo'"
        ).fetchall()
    return int(count)


def test_the_demo_appends_for_two_organizations_and_the_worker_drains_them(
    env: dict[str, str],
):
    demo = _json(
        run_outboxctl(
            "events", "demo", "--organizations", "2", "--events", "10", "--json", variables=env
        )
    )
    before = _pending(env)
    drained = run_outboxctl("worker", "--drain", "--lanes", "events", variables=env)
    after = _pending(env)

    organizations = {item["organizationId"]: item["appended"] for item in demo["organizations"]}
    assert (10, 2, "demo.order_placed") == (
        demo["appended"],
        len(organizations),
        demo["eventType"],
    )
    assert organizations == before
    assert 10 == sum(before.values())
    assert ExitCode.OK == drained.returncode, drained.stderr
    assert {} == after


def test_the_demo_runs_again_and_says_what_it_did(env: dict[str, str], database_url: str):
    first = invoke_outboxctl("events", "demo", "--events", "4", variables=env)
    second = invoke_outboxctl("events", "demo", "--events", "4", variables=env)

    assert (ExitCode.OK, ExitCode.OK) == (first.returncode, second.returncode), second.stderr
    assert second.stdout.startswith("appended 4 demo.order_placed events")
    assert "outboxctl events backlog" in second.stderr
    assert 8 == _demo_events(database_url)
    assert 8 == sum(_pending(env).values())


def test_outside_development_the_demo_refuses_and_appends_nothing(
    env: dict[str, str], database_url: str
):
    result = invoke_outboxctl("events", "demo", variables={**env, "OUTBOX_ENV": "staging"})

    assert ExitCode.REFUSED == result.returncode, result.stderr
    assert "OUTBOX_ENV=development" in result.stderr
    assert 0 == _demo_events(database_url)
