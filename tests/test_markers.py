"""Every test module declares its layer with a module-level `pytestmark`, so `make test-fast` (-m "unit and not
slow") and the other layers select whole modules, and a new module cannot slip out of every layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = [pytest.mark.unit]

TESTS = Path(__file__).resolve().parent
LAYERS = ("unit", "integration", "slow", "browser", "faults")


def _module_marks(path: Path) -> set[str]:
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            return {layer for layer in LAYERS if f"pytest.mark.{layer}" in ast.unparse(node.value)}
    return set()


def test_every_test_module_declares_its_layer() -> None:
    modules = sorted(TESTS.rglob("test_*.py"))
    assert len(modules) > 50  # the walk found the suite
    unmarked = [str(path.relative_to(TESTS)) for path in modules if not _module_marks(path)]
    assert unmarked == []


def test_the_layers_are_registered_markers(pytestconfig: pytest.Config) -> None:
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert set(LAYERS) <= registered
