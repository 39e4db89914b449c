"""``outboxctl --version``: the installed package's version, the one CHANGELOG.md last released."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

from outbox.entrypoints.cli.app import DISTRIBUTION, app

ROOT = Path(__file__).resolve().parents[4]
# A released section: "## [0.1.0] - 2026-12-01" (Keep a Changelog); "## [Unreleased]" is not.
RELEASED_HEADING = re.compile(
    r"^## \[(?P<version>\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", re.MULTILINE
)

runner = CliRunner()


def test_version_prints_the_installed_package_version_and_exits_0() -> None:
    result = runner.invoke(app, ["--version"])

    assert 0 == result.exit_code
    assert f"outboxctl {version(DISTRIBUTION)}\n" == result.stdout


def test_version_runs_before_any_command() -> None:
    """An eager option: the command after it is never run."""
    result = runner.invoke(app, ["--version", "keys", "generate"])

    assert 0 == result.exit_code
    assert f"outboxctl {version(DISTRIBUTION)}\n" == result.stdout


def test_newest_released_changelog_heading_is_the_package_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")

    newest = RELEASED_HEADING.search(changelog)

    assert newest is not None, "CHANGELOG.md has no '## [X.Y.Z] - YYYY-MM-DD' heading"
    assert version(DISTRIBUTION) == newest["version"]
