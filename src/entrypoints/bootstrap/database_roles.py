"""A process checks its database role before it serves (OX-W9).

In staging and production a process refuses to start when its role or login is a superuser,
bypasses row security, or may do another job's work (another role's functions, or act as the
owner); each refusal names the fix. Development allows them (the embedded server is reached
as a superuser) and logs a warning instead. A role that lacks its own job's functions is
refused everywhere: every request would fail with 42501 (an API login still granted only the
old ``outbox_runtime`` is the usual case).
"""

from __future__ import annotations

import attrs
import structlog

from outbox.adapters.postgres.role_check import RoleReport

# How many function names a message lists before it says how many more there are.
NAMED = 3


class DatabaseRoleRefused(Exception):
    """The process's database role may not run its job; ``problems`` say why and the fix."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@attrs.frozen(kw_only=True)
class RoleVerdict:
    """What is wrong with a role: ``refusals`` stop the process, ``warnings`` are logged."""

    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _names(functions: tuple[str, ...]) -> str:
    more = len(functions) - NAMED
    listed = ", ".join(functions[:NAMED])
    return listed + (f" and {more} more" if more > 0 else "")


def judge_role(
    report: RoleReport, *, process: str, job: str, deprecated: str, strict: bool
) -> RoleVerdict:
    """The verdict on ``report`` for ``process`` (``the API``, ``the worker``) doing ``job``.

    ``strict`` (staging, production) turns what development only warns about into refusals.
    ``deprecated`` is the role older deployments granted in place of ``job``.
    """
    login, role = report.login, report.role
    grant = f"GRANT {job} TO {login}"
    strictly: list[str] = []
    if report.superuser:
        who = login if role == login else f"{login} (acting as {role})"
        strictly.append(
            f"{process}'s database login {who} is a superuser; connect as a login role that"
            f" is not, granted {job} only (CREATE ROLE <name> LOGIN PASSWORD '…' IN ROLE {job})"
        )
    elif report.bypass_rls:
        strictly.append(
            f"{process}'s database login {login} bypasses row security (BYPASSRLS);"
            f" ALTER ROLE {login} NOBYPASSRLS"
        )
    if not report.superuser and report.wider_roles:
        wider = ", ".join(report.wider_roles)
        strictly.append(
            f"{process}'s database role {role} is a member of {wider}, which may do another"
            f" job's work; REVOKE {wider} FROM {login}"
        )
    elif not report.superuser and report.foreign:
        strictly.append(
            f"{process}'s database role {role} may execute functions of another job"
            f" ({_names(report.foreign)}); REVOKE EXECUTE on them FROM {role}, and grant it"
            f" {job} only"
        )
    refusals: list[str] = []
    if report.missing:
        refusals.append(
            f"{process}'s database role {role} lacks {job}'s functions"
            f" ({_names(report.missing)}); {grant}"
            + (f" ({deprecated} no longer carries them: docs/sql-api.md)" if deprecated else "")
        )
    warnings: list[str] = []
    if not report.job_role_exists:
        warnings.append(f"role {job} does not exist yet: run outboxctl db migrate, then {grant}")
    if strict:
        refusals = strictly + refusals
    else:
        warnings = [f"{w} (refused outside development)" for w in strictly] + warnings
    return RoleVerdict(refusals=tuple(refusals), warnings=tuple(warnings))


def enforce(verdict: RoleVerdict) -> None:
    """Log the warnings; raise DatabaseRoleRefused when there is any refusal."""
    log = structlog.get_logger()
    for warning in verdict.warnings:
        log.warning("database.role_warning", logger="outbox", detail=warning)
    if verdict.refusals:
        raise DatabaseRoleRefused(verdict.refusals)
