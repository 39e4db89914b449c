"""The events' held-horizon walks benchmark runs end to end at a tiny size, on the tests' own
server, and shows what it is for: under the hold the claim and the record visit the dead
versions a clean database has let go. The consumer's claim and record are printed beside
them.

Timings are never asserted: ``python -m bench.events_hold_walks`` on a quiet machine measures.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import postgres_server as servers

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]


def test_a_tiny_walks_run_prints_each_statements_entries_and_buffers(
    postgres_server: servers.TestServer,
) -> None:
    env = {**os.environ, "OUTBOX_DATABASE_URL": postgres_server.admin_url, "COLUMNS": "200"}

    completed = subprocess.run(
        [
            sys.executable, "-m", "bench.events_hold_walks",
            "--dead", "2000", "--organizations", "2", "--aggregates", "8",
        ],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=280, check=False,
    )  # fmt: skip

    assert 0 == completed.returncode, completed.stdout + completed.stderr
    rows = {
        (cells[0], cells[1]): cells[2:]
        for line in completed.stdout.splitlines()
        if len(cells := [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]) == 6
    }
    assert {"claim", "record", "consumer claim", "consumer record"} <= {
        statement for statement, _ in rows
    }
    assert ("consumer record", "(milliseconds)") in rows
    for statement in ("claim", "record"):
        heap = rows[(statement, "events.outbox_records")]
        buffers_clean, buffers_held = (int(n.replace(",", "")) for n in heap[2:])
        # Every version the publishing left stays while the hold lasts, and is visited.
        assert buffers_held > 2 * buffers_clean, statement
