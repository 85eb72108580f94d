"""SQL on a table lives in the app that owns it, behind a selector (CONVENTIONS.md §15; docs/architecture.md):
no package's string literals name another app's table, and no package queries another app's models through
`<Model>.objects`. The check genuinely fails on planted violations (written into a temporary folder, never into
the working tree)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("athena", "audit", "screening", "knowledge", "retrieval", "agents")


def table_owners() -> dict[str, str]:
    """Every table of the project's models (many-to-many tables included) -> the package that owns it."""
    from django.apps import apps

    owners = {}
    for model in apps.get_models(include_auto_created=True):
        package = model.__module__.split(".")[0]
        if package in PACKAGES:
            owners[model._meta.db_table] = package
    return owners


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes: prose that names a table is not SQL."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _foreign_models(tree: ast.AST, own: str) -> dict[str, str]:
    """Names bound in the module to another package's models: name -> dotted model path."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            package = node.module.split(".")[0]
            if package in PACKAGES and package != own and node.module.split(".")[-1] == "models":
                for alias in node.names:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def foreign_table_uses(path: Path, root: Path, owners: dict[str, str]) -> list[str]:
    """`file:line` of each string literal in `path` naming a table another package owns, and of each
    `<Model>.objects` on another package's model (migrations live in the owning app and are not scanned)."""
    relative = path.relative_to(root)
    own = relative.parts[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    names = re.compile(
        r"\b(" + "|".join(re.escape(t) for t in sorted(owners, key=len, reverse=True)) + r")\b"
    )
    skip = _docstrings(tree)
    models = _foreign_models(tree, own)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for match in names.finditer(node.value):
                table = match.group(1)
                if owners[table] != own:
                    found.append(f"{relative}:{node.lineno} names {table} ({owners[table]}'s table)")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("objects", "_default_manager")
            and isinstance(node.value, ast.Name)
            and node.value.id in models
        ):
            found.append(f"{relative}:{node.lineno} queries {models[node.value.id]}.{node.attr}")
    return found


def scan(root: Path, owners: dict[str, str]) -> list[str]:
    """Every foreign table use in the packages under `root`, each `file:line` and name once."""
    hits = (
        hit
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if "migrations" not in path.relative_to(root).parts
        for hit in foreign_table_uses(path, root, owners)
    )
    return list(dict.fromkeys(hits))


def test_the_owners_are_known() -> None:
    owners = table_owners()
    # the walk found the models of each app with tables
    assert owners["knowledge_chunk"] == "knowledge"
    assert owners["knowledge_document_allowed_groups"] == "knowledge"
    assert owners["audit_auditevent"] == "audit"
    assert {"knowledge", "audit", "agents"} <= set(owners.values())


def test_no_package_runs_sql_on_another_apps_tables() -> None:
    assert scan(ROOT, table_owners()) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (
            "retrieval/planted.py",
            'SQL = "SELECT id FROM knowledge_chunk WHERE active"\n',
            "retrieval/planted.py:1 names knowledge_chunk (knowledge's table)",
        ),
        (
            "agents/steps/planted.py",
            'def f(where):\n    return f"SELECT 1 FROM knowledge_termstat t WHERE {where}"\n',
            "agents/steps/planted.py:2 names knowledge_termstat (knowledge's table)",
        ),
        (
            "athena/planted.py",
            'REVOKE = "REVOKE UPDATE ON audit_auditevent FROM app"\n',
            "athena/planted.py:1 names audit_auditevent (audit's table)",
        ),
        (
            "agents/planted.py",
            "def f(pk):\n    from knowledge.models import Chunk\n\n    return Chunk.objects.filter(pk=pk)\n",
            "agents/planted.py:4 queries knowledge.models.Chunk.objects",
        ),
    ],
)
def test_a_planted_foreign_query_fails(tmp_path: Path, module: str, source: str, expected: str) -> None:
    (tmp_path / module).parent.mkdir(parents=True)
    (tmp_path / module).write_text(source)
    found = scan(tmp_path, table_owners())
    assert len(found) == 1 and found[0].startswith(expected), found


def test_what_is_not_a_foreign_query_passes(tmp_path: Path) -> None:
    # the owner's own SQL, a docstring, a comment, a name that only starts like a table, an index name,
    # and a foreign model imported for its type
    (tmp_path / "knowledge").mkdir()
    (tmp_path / "knowledge" / "own.py").write_text('SQL = "SELECT id FROM knowledge_chunk"\n')
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "fine.py").write_text(
        '"""Reads knowledge_chunk through knowledge.index_selectors."""\n'
        "from knowledge.models import Chunk  # knowledge_chunk\n\n"
        'KEY = "audit_event_id"\nINDEX = "knowledge_mention_strength"\n\n'
        "def f(chunk: Chunk) -> int:\n    return chunk.pk\n"
    )
    assert scan(tmp_path, table_owners()) == []
