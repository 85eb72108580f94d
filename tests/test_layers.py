"""The layers point one way (docs/architecture.md): import-linter's contracts in pyproject.toml hold on the code,
and they genuinely fail when an upward import is planted (in a copy of the code, never in the working tree);
no module imports another package's private names."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("athena", "audit", "screening", "knowledge", "retrieval", "agents")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    # lint-imports reads [tool.importlinter] from the pyproject.toml in `cwd` and finds the packages there
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _python_only(directory: str, names: list[str]) -> set[str]:
    """shutil.copytree ignore: keep packages and .py files (no templates, static files or sample corpus)."""
    return {
        n for n in names if n == "__pycache__" or (not n.endswith(".py") and not Path(directory, n).is_dir())
    }


@pytest.fixture
def code_copy(tmp_path: Path) -> Path:
    """The project's packages and import contracts, copied into a temporary folder to plant imports in."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=_python_only)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_contracts_kept() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_copy_keeps_contracts(code_copy: Path) -> None:
    # the control for the planted cases below: the copy alone passes, so their failures come from the plant
    result = _lint_imports(code_copy)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        # ingestion reaching up into answering: the reversed import the layers forbid
        ("knowledge/planted.py", "def f():\n    from agents.pipeline import answer\n", "layers:"),
        ("retrieval/planted.py", "import agents.guardrails\n", "layers:"),
        ("audit/planted.py", "from knowledge.models import Document\n", "layers:"),
        ("athena/planted.py", "from audit.services import audit_record\n", "layers:"),
        # the pure libraries: screening and the text core stay free of Django, even through another module
        ("screening/planted.py", "from django.conf import settings\n", "screening is a pure library"),
        ("knowledge/text/planted.py", "from knowledge.models import Chunk\n", "the text-analysis core"),
        ("knowledge/parsing/planted.py", "from django.conf import settings\n", "parsing is Django-free"),
    ],
)
def test_planted_upward_import_fails(code_copy: Path, module: str, source: str, broken: str) -> None:
    (code_copy / module).write_text(source)
    result = _lint_imports(code_copy)
    assert result.returncode != 0, result.stdout[-4000:]
    assert "1 broken" in result.stdout
    report = result.stdout.split("Broken contracts", 1)[1]
    assert broken in report  # the contract that names the rule
    assert module.removesuffix(".py").replace("/", ".") in report  # and the culprit


def _private_imports(path: Path) -> list[str]:
    """`from <other package> import _name` statements in one module."""
    own = path.relative_to(ROOT).parts[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            package = node.module.split(".")[0]
            if package in PACKAGES and package != own:
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno} {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                ]
    return found


def test_no_private_names_imported_across_packages() -> None:
    offenders = [
        hit
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        for hit in _private_imports(path)
    ]
    assert offenders == []
