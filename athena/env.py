"""Typed access to the environment: the only place settings read os.environ.

Every value that differs between machines comes through here.  A malformed value fails at start-up with a
message naming the variable, the value and what was expected, instead of surfacing later as a confusing
error deep inside a library.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import unquote, urlparse

N = TypeVar("N", int, float)


class EnvError(ValueError):
    """A malformed environment variable."""


@dataclass(frozen=True)
class Env:
    environ: Mapping[str, str]

    def _raw(self, name: builtins.str) -> builtins.str | None:
        value = self.environ.get(name)
        if value is None or value.strip() == "":
            return None
        return value.strip()

    def str(self, name: builtins.str, default: builtins.str = "") -> builtins.str:
        value = self._raw(name)
        return default if value is None else value

    def _number(
        self,
        name: builtins.str,
        default: N,
        parse: Callable[[builtins.str], N],
        kind: builtins.str,
        minimum: N | None,
        maximum: N | None,
    ) -> N:
        value = self._raw(name)
        if value is None:
            return default
        try:
            parsed = parse(value)
        except ValueError:
            raise EnvError(f"{name}={value!r} is not {kind}") from None
        if minimum is not None and parsed < minimum:
            raise EnvError(f"{name}={parsed} is below the minimum {minimum}")
        if maximum is not None and parsed > maximum:
            raise EnvError(f"{name}={parsed} is above the maximum {maximum}")
        return parsed

    def int(
        self,
        name: builtins.str,
        default: builtins.int,
        *,
        minimum: builtins.int | None = None,
        maximum: builtins.int | None = None,
    ) -> builtins.int:
        return self._number(name, default, builtins.int, "an integer", minimum, maximum)

    def float(
        self, name: builtins.str, default: builtins.float, *, minimum: builtins.float | None = None
    ) -> builtins.float:
        return self._number(name, default, builtins.float, "a number", minimum, None)

    def bool(self, name: builtins.str, default: builtins.bool) -> builtins.bool:
        value = self._raw(name)
        if value is None:
            return default
        lowered = value.lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise EnvError(f"{name}={value!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")

    def list(self, name: builtins.str, default: tuple[builtins.str, ...] = ()) -> builtins.list[builtins.str]:
        value = self._raw(name)
        if value is None:
            return list(default)
        return [item.strip() for item in value.split(",") if item.strip()]

    def choice(
        self, name: builtins.str, default: builtins.str, choices: tuple[builtins.str, ...]
    ) -> builtins.str:
        value = self._raw(name)
        if value is None:
            return default
        if value not in choices:
            raise EnvError(f"{name}={value!r} is not one of: {', '.join(choices)}")
        return value

    def url(self, name: builtins.str, *, schemes: tuple[builtins.str, ...]) -> builtins.str | None:
        value = self._raw(name)
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in schemes:
            raise EnvError(f"{name} must be a URL with scheme {' or '.join(schemes)}, got {value!r}")
        if parsed.scheme.startswith("postgres") and not (parsed.path.strip("/") or parsed.hostname):
            raise EnvError(f"{name}={value!r} names no database")
        return value


def database_from_url(url: str) -> dict[str, object]:
    """Translate postgres://user:pass@host:port/name?host=/socket/dir into Django's DATABASES entry."""
    parsed = urlparse(url)
    options = dict(part.split("=", 1) for part in parsed.query.split("&") if "=" in part)
    host = unquote(parsed.hostname or "") or options.pop("host", "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "athena",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }


env = Env(os.environ)
