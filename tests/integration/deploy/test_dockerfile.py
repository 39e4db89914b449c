"""deploy/docker: the Dockerfile parses with Docker's own parser, copies files that exist, builds
a wheel that holds what the service needs, and starts a real outboxctl command.

No Docker engine runs here, so the image is never built; its build stage is replayed instead:
the files it copies, and only those, build the wheel it installs.
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import dockerfile
import yaml
from packaging.specifiers import SpecifierSet

from tests.integration.deploy.artifacts import (
    DEPLOY,
    ROOT,
    Process,
    outboxctl_command,
    unread_variables,
)

DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
IGNORE = DEPLOY / "docker" / "Dockerfile.dockerignore"
COMMANDS = dockerfile.parse_file(str(DOCKERFILE))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _stages() -> list[list[dockerfile.Command]]:
    stages: list[list[dockerfile.Command]] = []
    for command in COMMANDS:
        if command.cmd == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(command)
    return stages


def _build_args() -> dict[str, str]:
    pairs = (c.value[0].partition("=") for c in COMMANDS if c.cmd == "ARG")
    return {name: value for name, _, value in pairs}


def _context_copies() -> list[str]:
    """Every source a COPY takes from the build context (not from another stage)."""
    return [
        source
        for command in COMMANDS
        if command.cmd == "COPY" and not any(f.startswith("--from") for f in command.flags)
        for source in command.value[:-1]
    ]


def _ignored(relative: str) -> bool:
    """Whether Dockerfile.dockerignore keeps ``relative`` out of the context (last match wins)."""
    ignored = False
    for raw in IGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.removeprefix("!").rstrip("/")
        parts = Path(relative).parts
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        if any(fnmatch.fnmatchcase(prefix, pattern.removeprefix("**/")) for prefix in prefixes) or (
            pattern.startswith("**/") and fnmatch.fnmatchcase(parts[-1], pattern[3:])
        ):
            ignored = not negated
    return ignored


def test_the_image_runs_outboxctl_serve_by_default() -> None:
    (entrypoint,) = [c for c in COMMANDS if c.cmd == "ENTRYPOINT"]
    (cmd,) = [c for c in COMMANDS if c.cmd == "CMD"]
    # The exec form: outboxctl is PID 1 and gets the SIGTERM a stop sends.
    assert entrypoint.json
    assert cmd.json
    assert ("outboxctl",) == entrypoint.value
    assert "outboxctl" in PROJECT["scripts"]
    assert "serve" == outboxctl_command(cmd.value)


def test_the_base_image_python_satisfies_the_project() -> None:
    python = _build_args()["PYTHON_VERSION"]
    assert python in SpecifierSet(PROJECT["requires-python"])
    for stage in _stages():
        assert "python:${PYTHON_VERSION}-slim-bookworm" == stage[0].value[0]


def test_every_copied_file_exists_and_is_in_the_build_context() -> None:
    sources = _context_copies()
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not _ignored(source), source
    for kept_out in (".venv", ".git", "tests", "bench"):
        assert _ignored(kept_out), kept_out
    assert _ignored("src/adapters/__pycache__/x.pyc")


def test_the_copied_files_build_a_wheel_with_the_migrations_and_templates(
    tmp_path: Path,
) -> None:
    """The build stage, replayed: what the Dockerfile copies (no more) is a buildable project
    whose wheel carries every migration, every built-in template and the outboxctl script."""
    context = tmp_path / "src-stage"
    context.mkdir()
    for source in _context_copies():
        origin = ROOT / source
        if origin.is_dir():
            shutil.copytree(origin, context / source, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, context / source)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), context],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("pg_outbox-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    src = ROOT / "src"
    folders = (  # what the package reads at run time (the migrations folder's note is not)
        ("adapters/postgres/migrations", "*.sql"),
        ("adapters/templates/builtin", "*"),
        ("entrypoints/http/console/templates", "*"),
        ("entrypoints/http/console/static", "*"),
    )
    for folder, pattern in folders:
        expected = {
            "outbox/" + p.relative_to(src).as_posix()
            for p in (src / folder).rglob(pattern)
            if p.is_file()
        }
        assert expected <= names, folder
    assert {"outbox/py.typed", "outbox/adapters/postgres/schema.sql"} <= names
    name_and_version = "-".join(wheel.name.split("-")[:2])  # pg_outbox-0.1.0
    # One package at the top of site-packages: nothing else of ours beside the application's.
    assert {"outbox", f"{name_and_version}.dist-info"} == {name.split("/")[0] for name in names}
    assert f"outboxctl = {PROJECT['scripts']['outboxctl']}" in scripts


def test_the_image_user_is_the_one_the_pods_run_as() -> None:
    (user,) = [c for c in COMMANDS if c.cmd == "USER"]
    uid, _, gid = user.value[0].partition(":")
    for path in (DEPLOY / "kubernetes").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc["kind"] in {"Deployment", "Job"}:
                context = doc["spec"]["template"]["spec"]["securityContext"]
                assert (int(uid), int(gid)) == (context["runAsUser"], context["runAsGroup"])


def test_exposed_ports_are_the_ones_the_pods_open() -> None:
    (expose,) = [c for c in COMMANDS if c.cmd == "EXPOSE"]
    opened = set()
    for path in (DEPLOY / "kubernetes").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc["kind"] == "Deployment":
                for container in doc["spec"]["template"]["spec"]["containers"]:
                    opened |= {p["containerPort"] for p in container.get("ports", [])}
    assert opened == {int(port) for port in expose.value}


def test_the_image_variables_are_read_by_the_settings() -> None:
    environ: dict[str, str] = {}
    for command in (c for c in _stages()[-1] if c.cmd == "ENV"):
        environ |= dict(zip(command.value[::2], command.value[1::2], strict=True))
    outbox = {name for name in environ if name.startswith("OUTBOX_")}
    assert outbox
    processes = [Process(name=c, command=c, environ=environ) for c in ("serve", "worker")]
    assert set() == unread_variables(outbox, processes)
