"""Scenario 9: a publication target that fails, while events workers publish.

The recording target refuses some events for good (REJECTED), some for a while (UNAVAILABLE
twice, then accepts) and some always (UNAVAILABLE until the attempt cap), while producers
append other events for two organizations. A refused event is retried on the schedule; one
refused for good or past the cap is dead-lettered and parks the later events of its
aggregate, which stay unpublished while every other aggregate flows, until an operator
releases it with ``outboxctl events release``; then they are published, in order.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from outbox.entrypoints.cli.exit_codes import ExitCode
from tests.events_rows import EventRows
from tests.outboxctl import run_outboxctl
from tests.reliability.event_producer import AGGREGATE_TYPE, Appended
from tests.reliability.event_scenario import EventScenario
from tests.reliability.profile import PROFILE

pytestmark = pytest.mark.integration

MAX_ATTEMPTS = 3
WORKER_ENV = {
    "OUTBOX_EVENTS_BATCH_SIZE": "10",
    "OUTBOX_EVENTS_CONCURRENCY": "2",
    "OUTBOX_RETRY_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
}
STAFF = "events-operator@example.com"
REJECT = {"fail": "reject"}
DOWN = {"fail": "unavailable"}  # refused every time: dead-lettered at the cap
FLAKY = {"fail": "unavailable", "times": 2}  # refused twice, then accepted
OUTCOMES = """
SELECT a.outcome FROM events.publication_attempts AS a
JOIN events.outbox_records AS r ON r.id = a.outbox_record_id
WHERE r.domain_event_id = %s ORDER BY a.attempt
"""
STATE = "SELECT state FROM events.outbox_records WHERE domain_event_id = %s"


def _cli(world: EventScenario, tmp_path: Path, *args: str) -> Any:
    variables = {
        "OUTBOX_DATABASE_URL": world.url,
        "OUTBOX_DATA_DIR": str(tmp_path / "cli"),
        "OUTBOX_LOG_LEVEL": "warning",
    }
    result = run_outboxctl("events", *args, "--json", variables=variables)
    assert ExitCode.OK == result.returncode, result.stderr
    return json.loads(result.stdout)


async def test_a_failing_target_retries_dead_letters_parks_and_release_resumes(
    event_scenario: EventScenario, tmp_path: Path
) -> None:
    world = event_scenario
    world.ledger.behaviour.latency = 0.01
    await EventRows(world.url).add_staff(STAFF)
    org_a, org_b = uuid.uuid4(), uuid.uuid4()
    rejected: list[list[Appended]] = []
    down: list[list[Appended]] = []
    flaky: list[list[Appended]] = []
    for n in range(PROFILE.event_failing_rounds):
        rejected.append(
            await world.producer.append_to(
                (org_a, AGGREGATE_TYPE, f"rejected-{n}"), [{}, REJECT, {}, {}]
            )
        )
        down.append(
            await world.producer.append_to((org_a, AGGREGATE_TYPE, f"down-{n}"), [{}, DOWN, {}])
        )
        flaky.append(
            await world.producer.append_to((org_b, AGGREGATE_TYPE, f"flaky-{n}"), [FLAKY, {}, {}])
        )
    flowing = [(org, AGGREGATE_TYPE, f"flowing-{i}") for org in (org_a, org_b) for i in range(4)]
    await world.workers.start_ready(**WORKER_ENV)
    await world.producer.append(60 * PROFILE.event_failing_rounds, flowing, pause=0.02)
    await world.settle()

    parked = _cli(world, tmp_path, "parked", "--limit", "500")["items"]
    waiting = {item["aggregateId"]: item["waiting"] for item in parked}
    states = Counter(
        state
        for events in (*rejected, *down)
        for e in events
        for (state,) in world.rows(STATE, e.id)
    )
    for events in rejected:
        assert ["published"] == _outcomes(world, events[0])
        assert ["dead_letter"] == _outcomes(world, events[1])  # refused for good: at once
    for events in down:
        assert ["retry"] * (MAX_ATTEMPTS - 1) + ["dead_letter"] == _outcomes(world, events[1])
    for events in flaky:
        assert ["retry", "retry", "published"] == _outcomes(world, events[0])
    expected_waiting = {f"rejected-{n}": 2 for n in range(PROFILE.event_failing_rounds)} | {
        f"down-{n}": 1 for n in range(PROFILE.event_failing_rounds)
    }
    assert expected_waiting == waiting
    rounds = PROFILE.event_failing_rounds
    assert {"published": 2 * rounds, "dead_lettered": 2 * rounds, "pending": 3 * rounds} == dict(
        states
    )

    for item in parked:
        receipt = _cli(
            world,
            tmp_path,
            "release",
            item["deadLetterId"],
            "--staff",
            STAFF,
            "--reason",
            "reliability: target fixed",
        )
        assert "release" == receipt["action"]
    await world.settle()
    unresolved = world.scalar("SELECT count(*) FROM events.dead_letters WHERE resolution IS NULL")

    verdict = await world.finish(
        "9 events: failing target, dead letters, release",
        rounds=rounds,
        parked_before_release=sum(waiting.values()),
        released=len(parked),
    )

    assert 0 == unresolved
    assert {"REJECTED": rounds, "UNAVAILABLE": rounds} == dict(verdict.dead_lettered)
    assert verdict.appended - 2 * rounds == verdict.published
    assert 0 == verdict.parked


def _outcomes(world: EventScenario, event: Appended) -> list[str]:
    return [outcome for (outcome,) in world.rows(OUTCOMES, event.id)]
