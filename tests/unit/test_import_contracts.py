"""Every import-linter contract bites: a copy of src/ with one deliberate violation fails it.

Each case copies ``src/`` (as the package ``outbox``) and ``importlinter.ini`` to a temporary
directory, appends one forbidden import to one module of the copy, and runs ``lint-imports``
there with ``PYTHONPATH`` pointing at the copy, so grimp analyses the copy rather than the
editable install of the working tree (the violation being reported proves it).
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).parents[2]
CONFIG = "importlinter.ini"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
# "<name> KEPT", possibly followed by a note such as "(4 ignored imports)".
STATUS_LINE = re.compile(r"^(?P<name>.+?) (?P<status>KEPT|BROKEN)(?: \(.*\))?$")


@attrs.frozen
class Violation:
    """One forbidden import and the contract that must report it."""

    contract: str
    importer: str
    imported: str


VIOLATIONS = {
    "domain imports a driver": Violation("domain-pure", "outbox.domain", "psycopg"),
    "domain imports a higher layer": Violation("layers", "outbox.domain", "outbox.application"),
    "application imports a logging library": Violation(
        "application-ports-only", "outbox.application", "structlog"
    ),
    "an adapter imports an entry point": Violation(
        "layers", "outbox.adapters", "outbox.entrypoints"
    ),
    "an entry point imports the public API": Violation(
        "layers", "outbox.entrypoints.cli.app", "outbox.producer"
    ),
    "one adapter imports another": Violation(
        "adapters-independent", "outbox.adapters.postgres", "outbox.adapters.crypto"
    ),
    "one provider imports another": Violation(
        "providers-independent", "outbox.adapters.providers.smtp", "outbox.adapters.providers.ses"
    ),
    "one entry point imports another": Violation(
        "entrypoints-independent", "outbox.entrypoints.cli", "outbox.entrypoints.worker"
    ),
    "settings import the composition root": Violation(
        "entrypoints-layers", "outbox.entrypoints.settings", "outbox.entrypoints.bootstrap"
    ),
    "outbox uses identity": Violation(
        "contexts", "outbox.application.delivery.links", "outbox.application.identity.ports"
    ),
    "outbox uses events": Violation(
        "contexts", "outbox.domain.delivery.retention", "outbox.domain.events.domain_events"
    ),
    "events' use cases use the identity domain": Violation(
        "events-below-identity", "outbox.application.events.ports", "outbox.domain.identity.tokens"
    ),
    "identity uses operator": Violation(
        "contexts", "outbox.domain.identity.tokens", "outbox.domain.operator.dead_letters"
    ),
    "outbox's use cases use the identity domain": Violation(
        "delivery-alone", "outbox.application.delivery.links", "outbox.domain.identity.tokens"
    ),
    "identity's use cases use the operator domain": Violation(
        "identity-below-operator",
        "outbox.application.identity.sign_in",
        "outbox.domain.operator.dead_letters",
    ),
    "notifications use identity": Violation(
        "contexts", "outbox.domain.notifications.catalogue", "outbox.domain.identity.tokens"
    ),
    "notifications' use cases use the identity domain": Violation(
        "notifications-below-identity",
        "outbox.application.notifications.ports",
        "outbox.domain.identity.tokens",
    ),
    "events use notifications": Violation(
        "contexts", "outbox.domain.events.domain_events", "outbox.domain.notifications.catalogue"
    ),
    "events' use cases use the notifications domain": Violation(
        "events-below-identity",
        "outbox.application.events.ports",
        "outbox.domain.notifications.snapshots",
    ),
    "outbox's use cases use the notifications domain": Violation(
        "delivery-alone",
        "outbox.application.delivery.links",
        "outbox.domain.notifications.snapshots",
    ),
    "the kernel uses notifications": Violation(
        "kernel", "outbox.domain.channels", "outbox.domain.notifications.catalogue"
    ),
    "the kernel uses a context": Violation(
        "kernel", "outbox.application.ports", "outbox.application.delivery.ports"
    ),
}
KERNEL_CONTRACT = "kernel"
CONTEXT_LAYERS = ("domain", "application")


@attrs.frozen
class Report:
    """What one lint-imports run said."""

    returncode: int
    output: str

    @property
    def statuses(self) -> dict[str, str]:
        """Contract name → KEPT or BROKEN."""
        found = (STATUS_LINE.match(line.strip()) for line in self.output.splitlines())
        return {m["name"]: m["status"] for m in found if m}


def contract_names() -> dict[str, str]:
    """Contract id → contract name, as importlinter.ini declares them."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / CONFIG)
    prefix = "importlinter:contract:"
    return {
        section.removeprefix(prefix): parser[section]["name"]
        for section in parser.sections()
        if section.startswith(prefix)
    }


def module_file(src: Path, module: str) -> Path:
    """The file that defines ``module`` in a copy of the package (a module or a package)."""
    base = src.joinpath(*module.split(".")[1:])
    candidates = [base.with_suffix(".py"), base / "__init__.py"]
    return next(path for path in candidates if path.is_file())


def lint_copy(workdir: Path, violation: Violation | None) -> Report:
    """Copy src/ into ``workdir``, inject ``violation`` and run lint-imports on the copy."""
    package = workdir / "outbox"
    shutil.copytree(ROOT / "src", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / CONFIG, workdir / CONFIG)
    if violation is not None:
        target = module_file(package, violation.importer)
        with target.open("a") as file:
            file.write(f"\nimport {violation.imported}  # deliberate violation\n")
    env = {**os.environ, "PYTHONPATH": str(workdir), "COLUMNS": "1000"}
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", CONFIG],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Report(returncode=result.returncode, output=result.stdout + result.stderr)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Report]]:
    """One lint-imports run per case plus one on the unmodified copy, all in parallel."""
    cases: dict[str, Violation | None] = {"unmodified": None, **VIOLATIONS}
    with ThreadPoolExecutor(max_workers=min(len(cases), os.cpu_count() or 2)) as pool:
        futures = {
            name: pool.submit(lint_copy, tmp_path_factory.mktemp("lint"), violation)
            for name, violation in cases.items()
        }
        yield {name: future.result() for name, future in futures.items()}


def kernel_modules_on_disk() -> set[str]:
    """Every module at the top of domain/ and application/: the shared kernel."""
    return {
        f"outbox.{layer}.{path.stem}"
        for layer in CONTEXT_LAYERS
        for path in (ROOT / "src" / layer).glob("*.py")
        if path.name != "__init__.py"
    }


def test_the_kernel_contract_lists_every_kernel_module() -> None:
    parser = configparser.ConfigParser()
    parser.read(ROOT / CONFIG)
    listed = set(parser[f"importlinter:contract:{KERNEL_CONTRACT}"]["source_modules"].split())

    assert kernel_modules_on_disk() == listed


def test_every_contract_has_a_deliberate_violation() -> None:
    assert set(contract_names()) == {v.contract for v in VIOLATIONS.values()}


def test_the_unmodified_copy_keeps_every_contract(reports: dict[str, Report]) -> None:
    report = reports["unmodified"]

    assert 0 == report.returncode, report.output
    assert dict.fromkeys(contract_names().values(), "KEPT") == report.statuses


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_a_deliberate_violation_breaks_its_contract(case: str, reports: dict[str, Report]) -> None:
    violation = VIOLATIONS[case]
    report = reports[case]
    name = contract_names()[violation.contract]

    assert 0 != report.returncode, report.output
    assert "BROKEN" == report.statuses.get(name), report.output
    assert f"{violation.importer} -> {violation.imported}" in report.output
