"""The worker's lanes: which ones run, each one's sizing, and the old meaning of WORKER_LANES."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.entrypoints.settings.lanes import (
    CONSUMERS,
    EVENTS,
    LANES,
    SECURITY,
    LaneSettings,
    ReservedSlot,
    parse_lanes,
)
from outbox.entrypoints.settings.reader import SettingsError
from outbox.entrypoints.settings.tree import load_settings


def test_a_worker_runs_every_lane_by_default() -> None:
    assert tuple(LANES) == load_settings({}).worker.lanes


def test_the_security_lane_keeps_the_workers_historical_defaults() -> None:
    sizing = load_settings({}).worker.security

    assert LaneSettings(batch_size=100, concurrency=32, parallel_batches=2) == sizing


def test_the_security_lane_reads_the_worker_variables() -> None:
    settings = load_settings(
        {
            "OUTBOX_WORKER_BATCH_SIZE": "50",
            "OUTBOX_WORKER_CONCURRENCY": "8",
            "OUTBOX_WORKER_PARALLEL_BATCHES": "3",
        }
    )

    assert (
        LaneSettings(batch_size=50, concurrency=8, parallel_batches=3) == settings.worker.security
    )


def test_the_lane_list_is_read_in_any_case_and_order_with_duplicates_dropped() -> None:
    assert (SECURITY,) == load_settings(
        {"OUTBOX_WORKER_LANES": " Security, security "}
    ).worker.lanes
    assert tuple(LANES) == parse_lanes(",".join(reversed(LANES)))


@pytest.mark.parametrize("value", ["bogus", "security,bogus", ","])
def test_an_unknown_or_empty_lane_list_is_refused_naming_the_lanes(value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_WORKER_LANES": value})

    assert "OUTBOX_WORKER_LANES" == caught.value.variable
    assert f"expected a comma-separated list of {', '.join(LANES)}" in caught.value.problem


def test_an_unknown_lane_is_quoted_back() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_WORKER_LANES": "security,bogus"})

    assert caught.value.problem.startswith("unknown lane 'bogus'")


def test_a_number_in_worker_lanes_is_the_deprecated_parallel_batches_with_a_warning() -> None:
    """WORKER_LANES=3 once meant three batches in flight; it still does, said at start-up."""
    settings = load_settings({"OUTBOX_WORKER_LANES": "3"})

    assert tuple(LANES) == settings.worker.lanes
    assert 3 == settings.worker.security.parallel_batches
    [warning] = [w for w in settings.warnings if "OUTBOX_WORKER_LANES" in w]
    assert "OUTBOX_WORKER_PARALLEL_BATCHES=3" in warning
    assert "deprecated" in warning


def test_the_deprecated_number_is_refused_beside_the_new_variable() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_WORKER_LANES": "3", "OUTBOX_WORKER_PARALLEL_BATCHES": "2"})

    assert "OUTBOX_WORKER_LANES" == caught.value.variable
    assert "OUTBOX_WORKER_PARALLEL_BATCHES" in caught.value.problem


def test_a_deprecated_zero_is_refused_like_any_parallel_batches_below_one() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_WORKER_LANES": "0"})

    assert "OUTBOX_WORKER_LANES" == caught.value.variable


def test_the_events_lane_has_its_own_variables_and_defaults() -> None:
    assert (
        LaneSettings(batch_size=100, concurrency=4, parallel_batches=4)
        == (load_settings({}).worker.lane_sizing[EVENTS])
    )
    settings = load_settings(
        {
            "OUTBOX_EVENTS_BATCH_SIZE": "500",
            "OUTBOX_EVENTS_CONCURRENCY": "2",
            "OUTBOX_EVENTS_PARALLEL_BATCHES": "3",
            "OUTBOX_WORKER_BATCH_SIZE": "7",
        }
    )

    assert (
        LaneSettings(batch_size=500, concurrency=2, parallel_batches=3)
        == (settings.worker.lane_sizing[EVENTS])
    )
    assert 7 == settings.worker.security.batch_size


def test_either_lane_may_run_alone() -> None:
    assert (EVENTS,) == load_settings({"OUTBOX_WORKER_LANES": "events"}).worker.lanes
    assert (SECURITY, EVENTS, CONSUMERS) == load_settings({}).worker.lanes


def test_a_bad_events_variable_is_named() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_EVENTS_CONCURRENCY": "0"})

    assert "OUTBOX_EVENTS_CONCURRENCY" == caught.value.variable


def test_the_reserved_slot_runs_beside_the_batches_unless_told_otherwise() -> None:
    assert ReservedSlot.BESIDE == load_settings({}).worker.reserved_slot
    assert ReservedSlot.ONLY == (
        load_settings({"OUTBOX_WORKER_RESERVED_SLOT": "Only"}).worker.reserved_slot
    )


def test_an_unknown_place_for_the_reserved_slot_is_refused_naming_the_choices() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_WORKER_RESERVED_SLOT": "somewhere"})

    assert "OUTBOX_WORKER_RESERVED_SLOT" == caught.value.variable
    assert "one of beside, elsewhere, only" in caught.value.problem


def test_batches_leave_a_code_to_a_slot_elsewhere_for_a_tenth_of_a_second_unless_told() -> None:
    assert timedelta(seconds=0.1) == load_settings({}).worker.slot_grace
    assert timedelta(seconds=0.5) == (
        load_settings({"OUTBOX_WORKER_SLOT_GRACE_SECONDS": "0.5"}).worker.slot_grace
    )
    # None: the batches take codes at once, as they do with the slot beside them.
    assert timedelta(0) == (
        load_settings({"OUTBOX_WORKER_SLOT_GRACE_SECONDS": "0"}).worker.slot_grace
    )


@pytest.mark.parametrize("value", ["-1", "61", "soon"])
def test_a_slot_grace_out_of_range_or_not_a_number_is_refused_naming_it(value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"OUTBOX_WORKER_SLOT_GRACE_SECONDS": value})

    assert "OUTBOX_WORKER_SLOT_GRACE_SECONDS" == caught.value.variable
