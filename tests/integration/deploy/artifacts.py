"""Reading the deployment examples under deploy/ the way their tools would, for the tests.

Each example names ``outboxctl`` commands and ``OUTBOX_*`` variables; the tests check both
against the real command line and the real settings reader, so an example cannot drift
from the code: a renamed command or variable fails here, not on someone's server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs
import typer
import typer.core

from outbox.entrypoints.cli.app import app
from outbox.entrypoints.settings.reader import PREFIX, SettingsError
from outbox.entrypoints.settings.tree import Settings, load_settings

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
# Each command's settings: only processes that send read the provider variables.
READS_PROVIDERS = {"serve": False, "worker": True, "sweep": False, "db migrate": False}
# A value no variable accepts unchanged: a text setting takes it as is (a different tree),
# every other kind refuses it naming the variable.
_JUNK = "\N{SNOWMAN} not a value"


def outboxctl_command(argv: Sequence[str]) -> str:
    """The ``outboxctl`` command ``argv`` names (``"sweep"``, ``"db migrate"``), after parsing
    every argument and option with the real command line; raises if any is wrong."""
    command = typer.main.get_command(app)
    words = list(argv)
    path: list[str] = []
    while isinstance(command, typer.core.TyperGroup):
        sub = command.get_command(typer.Context(command), words[0]) if words else None
        if sub is None:
            raise LookupError(f"outboxctl has no command {' '.join([*path, *words[:1]])!r}")
        path.append(words.pop(0))
        command = sub
    # Parses the rest as the command would be invoked (types, choices, unknown options).
    command.make_context(" ".join(["outboxctl", *path]), words)
    return " ".join(path)


@attrs.frozen(kw_only=True)
class Process:
    """One process an example starts: where it is declared, its command and its environment."""

    name: str
    command: str  # as outboxctl_command names it
    environ: Mapping[str, str]

    @property
    def reads_providers(self) -> bool:
        """Whether this command reads the provider variables."""
        return READS_PROVIDERS[self.command]

    def settings(self) -> Settings:
        """The settings this process would start with; raises SettingsError."""
        return load_settings(self.environ, providers=self.reads_providers)


def reads(process: Process, variable: str) -> bool:
    """Whether the settings reader reads ``variable`` for ``process``.

    Read means it matters: removing the variable, or giving it a value nothing accepts,
    changes what the process starts with (another tree, or an error naming it).
    """
    baseline = _outcome(process, process.environ)
    without = {k: v for k, v in process.environ.items() if k != variable}
    junk = {**process.environ, variable: _JUNK}
    return any(_outcome(process, env) != baseline for env in (without, junk))


def _outcome(process: Process, environ: Mapping[str, str]) -> object:
    try:
        return load_settings(environ, providers=process.reads_providers)
    except SettingsError as error:
        return str(error)


def unread_variables(names: Iterable[str], processes: Sequence[Process]) -> set[str]:
    """The ``OUTBOX_*`` names among ``names`` that none of ``processes`` reads."""
    return {
        name
        for name in names
        if name.startswith(PREFIX) and not any(reads(process, name) for process in processes)
    }


def parse_env_file(path: Path) -> dict[str, str]:
    """A systemd EnvironmentFile: ``NAME=value`` lines, ``#`` comments, optional quotes."""
    environ: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, separator, value = line.partition("=")
        if not separator:
            raise ValueError(f"{path}: not NAME=value: {line!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        environ[name.strip()] = value
    return environ


def parse_unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A systemd unit file: section → its ``Key=value`` lines in order (keys may repeat)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        if current is None:
            raise ValueError(f"{path}: a line before any section: {line!r}")
        key, _, value = line.partition("=")
        current.append((key.strip(), value.strip()))
    return sections


def unit_values(unit: Mapping[str, list[tuple[str, str]]], section: str, key: str) -> list[str]:
    """Every value of ``key`` in ``section``, in order."""
    return [value for name, value in unit.get(section, []) if name == key]
