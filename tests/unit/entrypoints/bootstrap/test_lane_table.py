"""Adding a lane is one entry in each table: its variables, and what it runs."""

from __future__ import annotations

from outbox.entrypoints.bootstrap.lanes import LANE_BUILDERS
from outbox.entrypoints.settings.lanes import LANES


def test_every_lane_the_settings_know_has_a_builder_and_no_other() -> None:
    assert list(LANES) == list(LANE_BUILDERS)
