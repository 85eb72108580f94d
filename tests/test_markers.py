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


PROJECT = ("athena", "audit", "screening", "knowledge", "retrieval", "agents")
ROOT = TESTS.parent


def _is_project_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return dotted.split(".")[0] in PROJECT and (
        path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()
    )


def private_uses(source: str, filename: str = "<test>") -> list[str]:
    """`line: name` of each private (`_name`) name a test takes from the project's code: imported
    (`from knowledge.tasks import _key`) or read off an imported module (`classify_module._rules`)."""
    tree = ast.parse(source, filename=filename)
    modules: set[str] = set()  # local names bound to project modules
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROJECT:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in PROJECT:
                continue
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"{node.lineno}: {node.module}.{alias.name}")
                elif _is_project_module(f"{node.module}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name | ast.Attribute)
            and ast.unparse(node.value) in modules
        ):
            found.append(f"{node.lineno}: {ast.unparse(node.value)}.{node.attr}")
    return found


def test_tests_use_public_names_only() -> None:
    """Tests hold the code to its public functions (CONVENTIONS.md §16): a private helper worth testing on
    its own is given a public name, or is tested through the public function that uses it."""
    offenders = [
        f"{path.relative_to(TESTS)}:{hit}"
        for path in sorted(TESTS.rglob("*.py"))
        # the benchmark scripts are tools, not tests: they swap the cached embedder to measure a variant
        if "benchmarks" not in path.relative_to(TESTS).parts
        for hit in private_uses(path.read_text(), str(path))
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from knowledge.tasks import CRASH_LIMIT, _crash_key\n", ["1: knowledge.tasks._crash_key"]),
        ("def f():\n    from agents.evidence import _is_entry\n", ["2: agents.evidence._is_entry"]),
        ("from agents import classify as c\n\nc._classify_with(None, 'q')\n", ["3: c._classify_with"]),
        ("import retrieval.search\n\nretrieval.search._executor()\n", ["3: retrieval.search._executor"]),
        ("import athena.stack as stack\n\nstack._psql(1)\n", ["3: stack._psql"]),
        # not the project's: a standard library helper, a dunder, a public name
        ("from urllib.parse import urlsplit\n\nurlsplit('x')._replace(path='/')\n", []),
        ("from agents import classify\n\nclassify.__name__\n", []),
        ("from agents.classify import classify_with\n", []),
    ],
)
def test_a_private_name_is_caught(source: str, expected: list[str]) -> None:
    assert private_uses(source) == expected
