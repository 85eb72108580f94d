"""What the benchmark scripts share: paths, Django set-up, flattening saved results and comparing two runs.
The scripts import it as a sibling module (`python tests/benchmarks/NAME.py` puts this folder on sys.path)."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEVSET = Path(os.environ.get("ATHENA_DEVSET", ROOT.parent / "shared" / "devset"))


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "athena.settings.local")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import django

    django.setup()


def owner_connection() -> Any:
    """The connection for schema work (dropping and rebuilding indexes, VACUUM, REINDEX): the owner role's where
    the settings name one (the application role only reads and writes rows)."""
    from django.conf import settings
    from django.db import connections

    return connections["owner" if "owner" in settings.DATABASES else "default"]


def database_create_migrated() -> None:
    """Create the configured database if it is missing (as the owner role: the application role may not, least
    privilege) and migrate it."""
    import psycopg
    from django.conf import settings
    from django.core.management import call_command

    db = settings.DATABASES.get("owner", settings.DATABASES["default"])
    with psycopg.connect(
        dbname="postgres",
        user=db["USER"],
        password=db["PASSWORD"] or None,
        host=db["HOST"],
        port=db["PORT"],
        autocommit=True,
    ) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')
    call_command("migrate", verbosity=0)


def percentile(values: list[float], q: float) -> float:
    """The value at share `q` (0..1) of the sorted values, nearest rank; NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def flatten(data: Any, prefix: str = "") -> dict[str, float]:
    """Nested results -> {"a.b.c": number}, numbers only."""
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
    elif isinstance(data, int | float) and not isinstance(data, bool):
        out[prefix.rstrip(".")] = float(data)
    return out


def compare(new: dict[str, Any], old_path: Path) -> None:
    """Print every figure present in both runs as old -> new and their ratio."""
    old = flatten(json.loads(old_path.read_text()))
    print(f"\n== compare with {old_path} (old -> new) ==")
    for key, value in flatten(new).items():
        if key in old and old[key]:
            print(f"  {key:55s} {old[key]:>12.2f} -> {value:>12.2f}   x{value / old[key]:.2f}")


def ask_request(url: str, token: str, question: str) -> urllib.request.Request:
    """`POST /api/v1/ask` with token authentication, as the load and hop benchmarks send it."""
    return urllib.request.Request(
        f"{url}/api/v1/ask",
        data=json.dumps({"question": question}).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST",
    )


def results_save(results: dict[str, Any], save: Path | None, baseline: Path | None) -> None:
    """Write the run's figures (--save) and print them against an earlier run's (--compare)."""
    if save:
        save.write_text(json.dumps(results, indent=2))
    if baseline:
        compare(results, baseline)
