"""Every operator table read at 80 columns: no line is longer, and no column is lost (each
header and each row's id, purpose, state and failure show whole)."""

from __future__ import annotations

import pytest

from tests.integration.operator.staff_world import STAFF, StaffWorld

pytestmark = pytest.mark.integration

WIDTH = 80


def _assert_fits(text: str, *whole: str) -> None:
    lines = text.splitlines()
    assert lines, "nothing was printed"
    assert [] == [line for line in lines if len(line) > WIDTH]
    for value in whole:
        assert any(value in line for line in lines), f"{value!r} is cut or missing:\n{text}"


async def test_every_operator_table_fits_80_columns_and_keeps_every_column(world: StaffWorld):
    await world.staff()
    dead = await world.dead_code("someone.with.a.long.name@a-rather-long-domain.example.com")
    await world.cli("dead-letters", "reissue", str(dead.message_id), "--staff", STAFF)
    world.env["COLUMNS"] = str(WIDTH)
    dead_id = str(dead.message_id)

    dead_letters = await world.cli("dead-letters", "list")
    messages = await world.cli("messages", "list", "--state", "dead_lettered")
    shown = await world.cli("messages", "show", dead_id)
    backlog = await world.cli("backlog")
    status = await world.cli("db", "status")

    _assert_fits(
        dead_letters.stdout,
        *("ID", "Dead at (UTC)", "Repaired", "Purpose", "Failure", "Destination"),
        *("Channel, tries", dead_id, "sign_up", "REJECTED", "reissued", "email, 1"),
    )
    _assert_fits(
        messages.stdout,
        *("Created (UTC)", "State", "Reason", "Provider", dead_id, "dead_lettered"),
        *("REJECTED", "reissued", world.api.provider.name),
    )
    _assert_fits(
        shown.stdout,
        *("destination", "deadLetterReason", "reissuedAs", "Outcome", "Failure", "Detail"),
        *("Recorded (UTC)", "Retry at (UTC)", "Provider", "Code", "dead_letter", "550"),
    )
    _assert_fits(backlog.stdout, "State", "Messages", "dead_lettered", "pending")
    _assert_fits(
        status.stdout,
        *("Version", "Name", "State", "Applied at (UTC)", "0001", "roles_and_schemas", "applied"),
    )
