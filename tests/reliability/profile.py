"""How big each scenario is: short in CI, long from ``python -m tests.reliability``.

``OUTBOX_RELIABILITY=long`` selects the long profile; ``OUTBOX_RELIABILITY_RESULTS`` names a
file that receives one JSON line of counts per scenario (the long runner reads it back).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import attrs

MODE = os.environ.get("OUTBOX_RELIABILITY", "short").strip().lower() or "short"
RESULTS = os.environ.get("OUTBOX_RELIABILITY_RESULTS", "").strip()


@attrs.frozen(kw_only=True)
class Profile:
    """Sizes of every scenario."""

    kill_messages: int
    kill_workers: int
    kills: int
    pauses: int
    pause_messages: int  # per pause
    term_rounds: int
    database_restarts: int
    backend_terminations: int
    proxy_faults: int
    fault_seconds: float
    outage_messages: int  # per kind and phase
    outage_cycles: int  # rounds of the five provider faults
    interleaving_rounds: int
    fuzz_examples: int  # Hypothesis examples per parser property
    http_fuzz_examples: int  # spellings tried against the anti-enumeration routes
    event_appends: int  # tenant events appended while events workers are killed
    event_workers: int
    event_kills: int
    event_failing_rounds: int  # rounds of the failing-target scenario (dead letters, release)
    relay_appends: int  # tenant events relayed to NATS through broker faults
    relay_faults: int  # NATS restarts, resets, drops, late acks and relay kills, in turn
    broker_outage_seconds: float  # how long the broker is down under load (issue 29)
    horizon_hold_seconds: float  # how long a session holds the xmin horizon under load (31)


SHORT = Profile(
    kill_messages=600,
    kill_workers=3,
    kills=5,
    pauses=2,
    pause_messages=16,
    term_rounds=1,
    database_restarts=2,
    backend_terminations=3,
    proxy_faults=3,
    fault_seconds=5.0,
    outage_messages=10,
    outage_cycles=1,
    interleaving_rounds=1,
    fuzz_examples=100,
    http_fuzz_examples=40,
    event_appends=600,
    event_workers=3,
    event_kills=5,
    event_failing_rounds=1,
    relay_appends=300,
    relay_faults=5,
    broker_outage_seconds=12.0,
    horizon_hold_seconds=10.0,
)
LONG = Profile(
    kill_messages=5000,
    kill_workers=4,
    kills=40,
    pauses=12,
    pause_messages=16,
    term_rounds=5,
    database_restarts=3,
    backend_terminations=3,
    proxy_faults=9,
    fault_seconds=60.0,
    outage_messages=10,
    outage_cycles=6,
    interleaving_rounds=25,
    fuzz_examples=2000,
    http_fuzz_examples=400,
    event_appends=5000,
    event_workers=4,
    event_kills=40,
    event_failing_rounds=5,
    relay_appends=3000,
    relay_faults=40,
    broker_outage_seconds=1800.0,
    horizon_hold_seconds=600.0,
)
PROFILE = LONG if MODE == "long" else SHORT


def record_counts(scenario: str, counts: dict[str, Any]) -> None:
    """Append one scenario's counts to the results file, if one is named."""
    if not RESULTS:
        return
    line = {"scenario": scenario, "mode": MODE, "at": time.time(), "counts": counts}
    with Path(RESULTS).open("a", encoding="utf-8") as results:
        results.write(json.dumps(line, sort_keys=True) + "\n")
