"""The documentation says what the code does: README.md, docs/architecture.md and deploy/README.md name only
environment variables, commands, options, make targets and endpoints that exist, every variable the settings
read is documented, and the texts an operator reads from the code itself (`--help`, the OpenAPI schema, what
`make run` prints) tell the truth."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class
from django.test import override_settings

pytestmark = [pytest.mark.unit]

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = {name: (ROOT / name).read_text() for name in ("README.md", "docs/architecture.md", "deploy/README.md")}
PACKAGES = ("athena", "audit", "screening", "knowledge", "retrieval", "agents")

# what the code reads from the environment: the typed reader (athena/env.py) and the two launcher-level reads
ENV_READ = re.compile(r"""(?:\benv\.[a-z]+|os\.environ\.get|os\.getenv)\(\s*["']([A-Z][A-Z0-9_]+)["']""")


def _variables_read() -> set[str]:
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            names.update(ENV_READ.findall(path.read_text()))
    return names


def test_every_environment_variable_the_code_reads_is_documented_in_the_readme() -> None:
    read = _variables_read()
    assert "ATHENA_QUESTIONS_PER_HOUR" in read and "ATHENA_VAR_DIR" in read  # the scan itself works
    # DJANGO_SETTINGS_MODULE is Django's own, set by manage.py, wsgi and celery (deploy/env.example names it)
    undocumented = sorted(
        name for name in read - {"DJANGO_SETTINGS_MODULE"} if not re.search(rf"`{name}`", README)
    )
    assert not undocumented, f"read by the code but not in README's configuration: {undocumented}"


def test_the_docs_name_no_athena_variable_the_code_does_not_read() -> None:
    read = _variables_read()
    for name, text in DOCS.items():
        dead = sorted(set(re.findall(r"\bATHENA_[A-Z0-9_]*[A-Z0-9]\b", text)) - read)
        assert not dead, f"{name} documents variables nothing reads: {dead}"


NUMERIC_DEFAULT = re.compile(r"""\benv\.(?:int|float)\(\s*["']([A-Z][A-Z0-9_]+)["'],\s*([0-9_.]+)""")


def test_the_readme_gives_the_numeric_defaults_the_code_has() -> None:
    """A row of README's configuration table such as `| `ATHENA_X` / `ATHENA_Y` | 15 / 600 | ... |`: each number
    is the default the settings read the variable with."""
    defaults: dict[str, float] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for name, value in NUMERIC_DEFAULT.findall(path.read_text()):
                defaults[name] = float(value.replace("_", ""))
    compared = 0
    for line in README.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        values = [value.strip() for value in cells[1].split(" / ")]
        if len(names) != len(values):
            continue
        for name, value in zip(names, values, strict=True):
            if name in defaults and re.fullmatch(r"[0-9][0-9_.]*", value):
                assert float(value.replace("_", "")) == defaults[name], f"README: {name} default {value}"
                compared += 1
    assert compared >= 25, compared
    # and in prose: "for `ATHENA_NO_WORKER_GRACE_SECONDS` (8)"
    for name_of_doc, text in DOCS.items():
        for name, value in re.findall(r"`([A-Z][A-Z0-9_]+)` \(([0-9][0-9_.]*)\)", text):
            assert float(value) == defaults[name], f"{name_of_doc}: {name} ({value})"


def test_only_athena_env_reads_the_environment() -> None:
    """README: the settings read "the environment only through `athena/env.py`" (typed, a malformed value named
    at start-up). Setting a default for a library (`os.environ.setdefault`) or copying the environment for a
    child process is not a read."""
    import ast

    reads = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "athena" / "env.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    target = ast.unparse(node.func)
                    if target in ("os.environ.get", "os.getenv"):
                        reads.append(f"{path.relative_to(ROOT)}:{node.lineno}: {target}")
                elif (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Load)
                    and ast.unparse(node.value) == "os.environ"
                ):
                    reads.append(f"{path.relative_to(ROOT)}:{node.lineno}: os.environ[...]")
    assert not reads, reads


# --- management commands --------------------------------------------------------------------------------------
BASE_OPTIONS = {
    "--help",
    "--version",
    "--verbosity",
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
}


def _project_commands() -> dict[str, str]:
    return {name: app for name, app in get_commands().items() if app.split(".")[0] in PACKAGES}


def _options(name: str) -> set[str]:
    command = load_command_class(_project_commands()[name], name)
    help_text = command.create_parser("manage.py", name).format_help()
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", help_text)) - BASE_OPTIONS


def _readme_command_rows() -> dict[str, str]:
    """The Commands table of README.md: command name -> its whole row."""
    rows = {}
    for line in README.splitlines():
        match = re.match(r"\| `manage\.py (\w+)", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_the_readme_commands_table_lists_every_project_command_with_options_that_exist() -> None:
    rows = _readme_command_rows()
    # migrate is Django's own, run as the owner role (deploy/README.md)
    missing = sorted(set(_project_commands()) - {"migrate"} - set(rows))
    assert not missing, f"project commands missing from README's Commands table: {missing}"
    for name, row in rows.items():
        command_cell = row.split(" | ")[0]
        named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", command_cell.replace("\\|", " ")))
        real = _options(name)
        assert named <= real, f"README names options `manage.py {name}` does not have: {sorted(named - real)}"
        unnamed = sorted(option for option in real if not re.search(rf"{option}(?![a-z-])", row))
        assert not unnamed, f"`manage.py {name}` options README's row does not mention: {unnamed}"


def test_every_argument_of_a_project_command_says_what_it_is_in_its_help() -> None:
    """`manage.py <command> --help` is what an operator reads first: an argument listed without a word (a bare
    `--data DATA` or `--user USER`) leaves them to read the code."""
    bare = []
    for name in sorted(set(_project_commands()) - {"migrate"}):
        parser = load_command_class(_project_commands()[name], name).create_parser("manage.py", name)
        # argparse lists its arguments only in `_actions` (Django's call_command reads it the same way)
        for action in parser._actions:  # noqa: SLF001
            flags = set(action.option_strings)
            if flags & BASE_OPTIONS or action.dest in ("help", "verbosity"):
                continue
            if not (action.help or "").strip():
                bare.append(f"manage.py {name} {'/'.join(action.option_strings) or action.dest}")
    assert not bare, f"arguments without a help text: {bare}"


def test_migrate_help_names_the_database_it_really_defaults_to() -> None:
    """`manage.py migrate` runs as the owner role by default; its --help said the "default" database (Django's
    text), which is the application's role, and an operator would pass --database default to be safe."""
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--help"],
        cwd=ROOT,
        env=dict(os.environ, DJANGO_SETTINGS_MODULE="athena.settings.local", COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    database_help = re.search(r"--database \{[^}]*\}\s+(.*)", result.stdout).group(1)
    assert 'Defaults to the "owner" database' in database_help, database_help
    assert '"default" database' not in database_help


def test_ingest_help_says_a_tier_given_again_only_tightens_access() -> None:
    command = load_command_class("knowledge", "ingest")
    help_text = " ".join(command.create_parser("manage.py", "ingest").format_help().split())
    assert "keeps its tier unless this one is stricter" in help_text


@override_settings(DEBUG=False, ATHENA_DEMO_USERS=True)
def test_make_run_prints_the_demo_logins_it_creates() -> None:
    """README: "Sign in ... as one of the demo users that `make run` prints". `make run` keeps DEBUG off and
    creates the demo accounts (ATHENA_DEMO_USERS); the logins were printed only under DEBUG, so never."""
    from knowledge.management.commands.bootstrap import DEMO_USERS, ready_banner

    banner = "\n".join(ready_banner(port=8000))
    assert "http://127.0.0.1:8000/" in banner
    for name, password, *_ in DEMO_USERS:
        assert re.search(rf"{re.escape(name)}\s+/ {re.escape(password)}", banner), name
    # the names README promises are the ones created
    promised = re.search(r"demo users that `make run` prints \((.*?)\)\.", README.replace("\n", " ")).group(1)
    assert set(re.findall(r"`([\w-]+)`", promised)) == {user[0] for user in DEMO_USERS}


@override_settings(DEBUG=False, ATHENA_DEMO_USERS=False)
def test_no_demo_login_is_printed_outside_development() -> None:
    from knowledge.management.commands.bootstrap import DEMO_USERS, ready_banner

    banner = "\n".join(ready_banner(port=8000))
    assert not any(password in banner for _, password, *_ in DEMO_USERS)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("ATHENA_AUDIT_SYSLOG", "syslog.example:514", "ATHENA_AUDIT_SYSLOG must be a URL with scheme udp"),
        ("ATHENA_AUDIT_SYSLOG", "udp://syslog.example", "must look like udp://host:port"),
        ("ATHENA_AUDIT_OLD_KEYS", "1:old-secret,2", "ATHENA_AUDIT_OLD_KEYS: entry 2 is not id:secret"),
    ],
)
def test_a_malformed_audit_variable_stops_start_up_with_the_variable_named(
    variable: str, value: str, message: str
) -> None:
    """README: "A malformed value stops start-up with a message naming the variable". These two were read
    when used: a syslog target without a port lost every event's copy (logged one by one), and an old key
    without its id was dropped, so the events it signed failed verification long after the rotation."""
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="athena.settings.test", **{variable: value})
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert "old-secret" not in result.stderr  # a key is never echoed


# --- make targets and endpoints ---------------------------------------------------------------------------------
def test_every_make_target_the_docs_name_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.MULTILINE))
    assert {"run", "test", "stop"} <= targets  # the scan itself works
    for name, text in DOCS.items():
        named = set(re.findall(r"`make ([a-z][a-z-]*)", text))
        assert named <= targets, f"{name} names make targets that do not exist: {sorted(named - targets)}"


def _schema_operations() -> set[tuple[str, str]]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method.upper(), re.sub(r"\{[^}]+\}", "{}", path))
        for path, operations in schema["paths"].items()
        for method in operations
    }


# `GET /api/v1/passages/<id>`, `/api/v1/health?workers=false`: the method when the docs give one, and the path
ENDPOINT = re.compile(r"(?:\b(GET|POST|PUT|DELETE|PATCH) )?`?(/api/v1/[\w/<>.{}-]*[\w>}])")


def test_every_endpoint_the_docs_name_is_in_the_api_schema_with_its_method() -> None:
    operations = _schema_operations()
    paths = {path for _, path in operations}
    checked = 0
    for name, text in DOCS.items():
        for method, path in ENDPOINT.findall(text):
            if path.split("/")[-1] in ("schema", "docs", "redoc"):
                continue  # the schema and its two viewers are not operations of the schema
            # placeholders as the docs write them: <id>, ID, {id}
            normalised = re.sub(r"/(<[^>]+>|ID|\{[^}]+\})(?=/|$)", "/{}", path)
            if method:
                assert (method, normalised) in operations, f"{name}: {method} {path} is not in the API schema"
            else:
                assert normalised in paths, f"{name}: {path} is not in the API schema"
            checked += 1
    assert checked >= 5


def test_the_api_reference_pages_the_readme_names_are_served() -> None:
    from django.urls import resolve

    for path in re.findall(r"`(/api/v1/(?:schema|docs|redoc))`", README):
        resolve(path)


def test_the_health_endpoints_degraded_answer_has_its_body_in_the_schema() -> None:
    """A 503 from /api/v1/health carries `{"status": ...}` like a 200 (load balancers and operators read it);
    the schema said "No response body" because the two responses shared one dict of fields, which
    drf-spectacular's inline_serializer consumes."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    responses = schema["paths"]["/api/v1/health"]["get"]["responses"]
    for code in ("200", "503"):
        reference = responses[code]["content"]["application/json"]["schema"]["$ref"]
        component = schema["components"]["schemas"][reference.rsplit("/", 1)[-1]]
        assert component["properties"].keys() == {"status", "components"}, code
        assert component["required"] == ["status"]


def test_the_upload_refusals_the_readme_describes_are_in_the_api_schema() -> None:
    """README: an upload over the size limit or the quota is refused (413 `too_large` / `quota_exceeded`), past
    the hourly limit (429), and with the broker down (503 with Retry-After); the schema, which README names as
    the reference, listed the 201 alone."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    responses = schema["paths"]["/api/v1/documents/upload"]["post"]["responses"]
    for code, names in {
        "400": ["invalid", "unsafe_archive"],
        "413": ["too_large", "quota_exceeded"],
        "429": ["throttled"],
        "503": ["dependency_unavailable"],
        "507": ["insufficient_storage"],
    }.items():
        assert responses[code]["content"]["application/json"]["schema"]["$ref"].endswith("/Error"), code
        assert all(f"`{name}`" in responses[code]["description"] for name in names), code
    assert "Retry-After" in responses["503"]["headers"]
