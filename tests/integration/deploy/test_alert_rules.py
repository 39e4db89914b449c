"""The alert rules of deploy/prometheus are valid Prometheus rules and fire on the series that
mean trouble, quiet on a healthy outbox (``promtool test rules``), and every metric they
name is one the outbox exports."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from outbox.adapters.telemetry.metrics import CATALOGUE
from tests.os_programs import require_program

RULES = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"


def test_the_rules_check_and_their_unit_tests_pass() -> None:
    promtool = require_program("promtool", "prometheus")

    checked = subprocess.run(
        [promtool, "check", "rules", "alerts.yml"],
        cwd=RULES,
        capture_output=True,
        text=True,
        check=False,
    )
    tested = subprocess.run(
        [promtool, "test", "rules", "alerts_test.yml"],
        cwd=RULES,
        capture_output=True,
        text=True,
        check=False,
    )

    assert 0 == checked.returncode, checked.stdout + checked.stderr
    assert 0 == tested.returncode, tested.stdout + tested.stderr


def test_every_metric_an_alert_names_is_exported() -> None:
    rules = yaml.safe_load((RULES / "alerts.yml").read_text())
    expressions = " ".join(r["expr"] for group in rules["groups"] for r in group["rules"])
    # A histogram is exported under its name; its series add _bucket, _sum and _count.
    named = {
        re.sub(r"_(bucket|sum|count)$", "", name)
        for name in re.findall(r"\b(outbox_[a-z_]+)\b", expressions)
    }
    exported = {spec.name for spec in CATALOGUE}

    assert named
    assert named <= exported, named - exported
