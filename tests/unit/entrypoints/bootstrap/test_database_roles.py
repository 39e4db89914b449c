"""The verdict on a database role: what refuses a start, what only warns (OX-W9)."""

from __future__ import annotations

import pytest

from outbox.adapters.postgres.role_check import RoleReport
from outbox.entrypoints.bootstrap.database_roles import judge_role

CLEAN = RoleReport(
    role="outbox_api", login="outbox_api", superuser=False, bypass_rls=False, job_role_exists=True
)


def _judge(report: RoleReport, *, strict: bool):  # type: ignore[no-untyped-def]
    return judge_role(
        report,
        process="the API",
        job="identity_service",
        deprecated="outbox_runtime",
        strict=strict,
    )


@pytest.mark.parametrize("strict", [True, False])
def test_a_role_with_its_job_only_has_nothing_to_say(strict):
    verdict = _judge(CLEAN, strict=strict)

    assert ((), ()) == (verdict.refusals, verdict.warnings)


@pytest.mark.parametrize(
    "report",
    [
        RoleReport(
            role="root", login="root", superuser=True, bypass_rls=True, job_role_exists=True
        ),
        RoleReport(
            role="outbox_api",
            login="outbox_api",
            superuser=False,
            bypass_rls=True,
            job_role_exists=True,
        ),
        RoleReport(
            role="outbox_api",
            login="outbox_api",
            superuser=False,
            bypass_rls=False,
            job_role_exists=True,
            foreign=("outbox.claim_messages(...)",),
            wider_roles=("outbox_worker",),
        ),
        RoleReport(
            role="outbox_api",
            login="outbox_api",
            superuser=False,
            bypass_rls=False,
            job_role_exists=True,
            foreign=("outbox.claim_messages(...)",),
        ),
    ],
    ids=["superuser", "bypassrls", "another-jobs-role", "another-jobs-function"],
)
def test_what_staging_refuses_development_only_warns_about(report):
    strict, lenient = _judge(report, strict=True), _judge(report, strict=False)

    assert 1 == len(strict.refusals)
    assert () == strict.warnings
    assert () == lenient.refusals
    assert [f"{strict.refusals[0]} (refused outside development)"] == list(lenient.warnings)


@pytest.mark.parametrize("strict", [True, False])
def test_a_role_without_its_jobs_functions_is_refused_everywhere(strict):
    report = RoleReport(
        role="outbox_api",
        login="outbox_api",
        superuser=False,
        bypass_rls=False,
        job_role_exists=True,
        missing=("a()", "b()", "c()", "d()", "e()"),
    )

    [refusal] = _judge(report, strict=strict).refusals

    assert "(a(), b(), c() and 2 more); GRANT identity_service TO outbox_api" in refusal


def test_before_the_migrations_made_the_job_role_the_start_only_warns():
    report = RoleReport(
        role="outbox_api",
        login="outbox_api",
        superuser=False,
        bypass_rls=False,
        job_role_exists=False,
    )

    verdict = _judge(report, strict=True)

    assert () == verdict.refusals
    expected = (
        "role identity_service does not exist yet: run outboxctl db migrate, then"
        " GRANT identity_service TO outbox_api"
    )
    assert [expected] == list(verdict.warnings)
