"""Loading of pluggable backends named by dotted path in settings (cached; cleared on setting_changed)."""

from __future__ import annotations

import importlib
import threading
from typing import Any

from django.core.signals import setting_changed

_cache: dict[str, Any] = {}
_lock = threading.Lock()


def load_backend(setting_name: str) -> Any:
    """Instantiate settings.<setting_name>["BACKEND"](**OPTIONS) once per process."""
    from django.conf import settings

    with _lock:
        if setting_name not in _cache:
            config = getattr(settings, setting_name)
            module_name, _, class_name = config["BACKEND"].rpartition(".")
            try:
                cls = getattr(importlib.import_module(module_name), class_name)
            except (ImportError, AttributeError) as exc:
                raise ImportError(
                    f"{setting_name} BACKEND {config['BACKEND']!r} cannot be imported: {exc}"
                ) from exc
            options = {k: v for k, v in config.get("OPTIONS", {}).items() if v not in ("", None, False)}
            extra = {k.lower(): v for k, v in config.items() if k in {"DIMENSION", "MAX_TOKENS"}}
            _cache[setting_name] = cls(**options, **extra)
        return _cache[setting_name]


def _clear(*, setting: str, **_: Any) -> None:
    _cache.pop(setting, None)


setting_changed.connect(_clear)
