"""The domain imports nothing but the standard library and attrs (SPEC §2)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

DOMAIN = Path(__file__).parents[3] / "src" / "domain"
ALLOWED = set(sys.stdlib_module_names) | {"attrs", "domain", "__future__"}
FORBIDDEN_CALLS = {"now", "utcnow", "today", "uuid1", "uuid4", "uuid7", "time", "random", "urandom"}


def _modules() -> list[Path]:
    return sorted(DOMAIN.glob("*.py"))


def test_domain_imports_only_stdlib_and_attrs() -> None:
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] not in ALLOWED]
    assert [] == offenders


def test_domain_reads_no_clock_and_draws_no_randomness() -> None:
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_CALLS:
                offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.Name) and node.id in {"print", "open", "input"}:
                offenders.append(f"{path.name}:{node.lineno} {node.id}")
    assert [] == offenders


def test_domain_has_modules_to_check() -> None:
    assert len(_modules()) >= 8
