"""The pre-commit hooks run exactly the checks CI runs, so a commit that passes them passes CI.

CI's checks are the lines of ``.ci/run`` that start a tool from ``.venv/bin/`` (ruff, mypy,
lint-imports; pip only installs, and the tests run through the README's own command).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
INSTALLERS = {".venv/bin/pip"}


def ci_checks() -> list[str]:
    """Every check command in .ci/run, its words joined by single spaces."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line for line in script.splitlines() if line.startswith(".venv/bin/")]
    commands = [shlex.split(line, comments=True) for line in lines]
    return [shlex.join(command) for command in commands if command[0] not in INSTALLERS]


def hooks() -> list[dict[str, Any]]:
    """Every hook in .pre-commit-config.yaml."""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    return [hook for repo in config["repos"] for hook in repo["hooks"]]


def test_ci_runs_the_checks_this_test_knows_how_to_find() -> None:
    """Guards the parser: were it to find nothing, the comparison below would pass vacuously."""
    tools = {shlex.split(command)[0] for command in ci_checks()}

    assert {".venv/bin/ruff", ".venv/bin/mypy", ".venv/bin/lint-imports"} <= tools


def test_every_ci_check_is_a_hook_and_every_hook_a_ci_check() -> None:
    entries = [shlex.join(shlex.split(hook["entry"])) for hook in hooks()]

    assert sorted(ci_checks()) == sorted(entries)


def test_every_hook_is_local_and_runs_its_command_as_written() -> None:
    """Local system hooks with no file names appended: the entry is the whole command line."""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))

    assert ["local"] == [repo["repo"] for repo in config["repos"]]
    for hook in hooks():
        assert ("system", False, True) == (
            hook["language"],
            hook["pass_filenames"],
            hook["always_run"],
        ), hook["id"]
        assert "args" not in hook, hook["id"]
