"""What a pool's connections may do in the database, compared with the job they are for.

A process runs one job (the API: ``identity_service``; the worker: ``outbox_worker``). The
catalog tells whether its role (after ``SET ROLE``, else the login) or its login is a superuser
or bypasses row security, whether it may act as the owner, and which of the outbox's
functions it may execute that its job role may not (another job's) or the reverse (a missing
grant); ``has_function_privilege`` counts inherited and PUBLIC rights alike.
"""

from __future__ import annotations

import attrs
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.error_translation import translated_errors

# Every schema of the outbox: a job role of any of them counts (notifications, consumers, inboxes).
SCHEMAS = ["outbox", "identity", "outbox_meta", "events", "notifications", "inbox"]

WHO = """
SELECT current_user::text, session_user::text,
       COALESCE(bool_or(r.rolsuper), false), COALESCE(bool_or(r.rolbypassrls), false),
       EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %(job)s)
FROM pg_catalog.pg_roles AS r
WHERE r.rolname IN (current_user, session_user)
"""
# Only asked once the job role is known to exist (has_function_privilege raises otherwise).
FUNCTIONS = """
SELECT p.oid::regprocedure::text,
       pg_catalog.has_function_privilege(current_user, p.oid, 'EXECUTE'),
       pg_catalog.has_function_privilege(%(job)s, p.oid, 'EXECUTE')
FROM pg_catalog.pg_proc AS p
JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = ANY(%(schemas)s)
ORDER BY 1
"""
# The roles this role is a member of that grant more than its job does: the owner, another
# job's role, a module's producer role, whatever its name.
WIDER_ROLES = """
SELECT r.rolname::text
FROM pg_catalog.pg_roles AS r
WHERE r.rolname <> %(job)s AND r.rolname <> current_user
  AND pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER')
  AND EXISTS (
      SELECT 1
      FROM pg_catalog.pg_proc AS p
      JOIN pg_catalog.pg_namespace AS n ON n.oid = p.pronamespace
      WHERE n.nspname = ANY(%(schemas)s)
        AND pg_catalog.has_function_privilege(r.oid, p.oid, 'EXECUTE')
        AND NOT pg_catalog.has_function_privilege(%(job)s, p.oid, 'EXECUTE')
  )
ORDER BY 1
"""


@attrs.frozen(kw_only=True)
class RoleReport:
    """What the connections of a pool may do, beside what their job needs.

    ``role`` is the current role (``SET ROLE``'s, else the login's), ``login`` the session
    user. ``job_role_exists`` is false before the migrations created the job's role; the
    function lists are empty then. ``foreign`` are functions the role may execute and the job
    may not, ``missing`` the reverse; ``wider_roles`` the outbox roles it is a member of that
    grant more than the job (``outbox_owner`` among them when it may act as the owner).
    """

    role: str
    login: str
    superuser: bool
    bypass_rls: bool
    job_role_exists: bool
    foreign: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    wider_roles: tuple[str, ...] = ()


async def inspect_role(pool: AsyncConnectionPool[AsyncConnection], *, job: str) -> RoleReport:
    """Read the report for ``job`` on one connection of ``pool``.

    Raises StoreUnavailable when the database cannot be reached.
    """
    with translated_errors():
        async with pool.connection() as conn:
            cursor = await conn.execute(WHO, {"job": job})
            row = await cursor.fetchone()
            if row is None:  # an aggregate always answers one row
                raise RuntimeError("the role query answered no row")
            role, login, superuser, bypass_rls, exists = row
            if not exists:
                return RoleReport(
                    role=role,
                    login=login,
                    superuser=superuser,
                    bypass_rls=bypass_rls,
                    job_role_exists=False,
                )
            params = {"job": job, "schemas": SCHEMAS}
            cursor = await conn.execute(FUNCTIONS, params)
            rights = await cursor.fetchall()
            cursor = await conn.execute(WIDER_ROLES, params)
            wider = tuple(name for (name,) in await cursor.fetchall())
    return RoleReport(
        role=role,
        login=login,
        superuser=superuser,
        bypass_rls=bypass_rls,
        job_role_exists=True,
        foreign=tuple(name for name, mine, jobs in rights if mine and not jobs),
        missing=tuple(name for name, mine, jobs in rights if jobs and not mine),
        wider_roles=wider,
    )
