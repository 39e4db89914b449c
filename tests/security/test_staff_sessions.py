"""Only the admin listener's sessions act for staff (issue 28, finding 1), over HTTP.

A staff member signed in and stepped up on the public listener holds an ordinary session: the
staff routes refuse its elevation. The same member signed in and stepped up on the admin
listener is served.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.security.http_app import serving

pytestmark = pytest.mark.integration

STAFF = "staff.member@example.com"
BACKLOG = "/platform-admin/security-outbox/backlog"


async def test_a_public_session_and_its_step_up_never_act_for_staff(database_url: str) -> None:
    async with serving(database_url) as app:
        token = await app.signed_up(STAFF)
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await conn.execute("SELECT outbox.grant_staff(%s)", (STAFF,))
        public_elevation = await app.elevated(token, STAFF)

        forged = await app.admin.get(
            BACKLOG,
            headers={"Authorization": f"Bearer {token}", "Elevation-Token": public_elevation},
        )
        staff_token, staff_elevation = await app.staff_elevated(STAFF)
        served = await app.admin.get(
            BACKLOG,
            headers={"Authorization": f"Bearer {staff_token}", "Elevation-Token": staff_elevation},
        )

    assert 403 == forged.status_code
    assert forged.json()["type"].endswith(":step-up-required")
    assert 200 == served.status_code, served.text
