"""Test settings: the same real PostgreSQL and Redis; only what must differ for speed and isolation."""

from athena.settings.base import *  # noqa: F403
from athena.settings.base import var_dir

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
MEDIA_ROOT = var_dir() / "test-media"
ATHENA_REALTIME_VIA_CELERY = False  # tests call the service in-process unless they start a worker

# The test database is created, migrated and flushed by the owner role (the application role may not create
# databases or truncate); tests/athena/test_db_roles.py connects as the application role to check its limits.
DATABASES = {"default": {**DATABASES["owner"]}}  # noqa: F405
ATHENA_AUDIT_KEY = ATHENA_AUDIT_KEY or DEV_AUDIT_KEY  # noqa: F405
ATHENA_AUDIT_CHECKPOINT_FILE = str(var_dir() / "test-audit" / "checkpoints.jsonl")
