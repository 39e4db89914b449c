"""The domain imports nothing but the standard library and attrs."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

DOMAIN = Path(__file__).parents[3] / "src" / "domain"
ALLOWED = set(sys.stdlib_module_names) | {"attrs", "__future__"}
FORBIDDEN_CALLS = {"now", "utcnow", "today", "uuid1", "uuid4", "uuid7", "time", "random", "urandom"}


def _modules() -> list[Path]:
    """Every module of the domain: the shared kernel and each context's sub-package."""
    return sorted(DOMAIN.rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(DOMAIN))


def _allowed(module: str) -> bool:
    """The standard library, attrs, and the domain itself (never another layer of ours)."""
    return module.partition(".")[0] in ALLOWED or (module + ".").startswith("outbox.domain.")


def test_domain_imports_only_stdlib_and_attrs() -> None:
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{_name(path)}: {n}" for n in names if not _allowed(n)]
    assert [] == offenders


def test_domain_reads_no_clock_and_draws_no_randomness() -> None:
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_CALLS:
                offenders.append(f"{_name(path)}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.Name) and node.id in {"print", "open", "input"}:
                offenders.append(f"{_name(path)}:{node.lineno} {node.id}")
    assert [] == offenders


def test_domain_has_modules_to_check() -> None:
    assert len(_modules()) >= 8
    contexts = {path.parent.name for path in _modules() if path.parent != DOMAIN}
    assert {"delivery", "events", "identity", "notifications", "operator"} <= contexts
