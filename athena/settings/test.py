"""Test settings: the same real PostgreSQL and Redis; only what must differ for speed and isolation."""

from urllib.parse import urlsplit

from athena.settings import base as _base
from athena.settings.base import *  # noqa: F403
from athena.settings.base import var_dir

# the Redis database the tests use (see the end of this file); the browser tests' brokers without a worker use
# 12 and 13
TEST_REDIS_DATABASE = 15

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",  # fast logins in tests
    # not used by default: the browser tests store their users' passwords as the server they drive expects
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
MEDIA_ROOT = var_dir() / "test-media"
ATHENA_REALTIME_VIA_CELERY = False  # tests call the service in-process unless they start a worker
# Django's test client renders pages without a collectstatic run: plain names, no manifest. The browser tests
# start gunicorn with the local settings and a collected manifest, so the served path is still the real one.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# The test database is created, migrated and flushed by the owner role (the application role may not create
# databases or truncate); tests/athena/test_db_roles.py connects as the application role to check its limits.
DATABASES = {"default": {**DATABASES["owner"]}}  # noqa: F405
ATHENA_AUDIT_KEY = ATHENA_AUDIT_KEY or DEV_AUDIT_KEY  # noqa: F405
ATHENA_AUDIT_CHECKPOINT_FILE = str(var_dir() / "test-audit" / "checkpoints.jsonl")

# A Redis database of the tests' own, on the same server: a developer's stack (`make run`) uses database 0, and
# its worker must never take a test's task (it would run it against the development database), nor the tests'
# worker a question of the stack's. A socket URL ("unix://...?db=N") is left as it is.
if urlsplit(_base.REDIS_URL).scheme in ("redis", "rediss"):
    REDIS_URL = urlsplit(_base.REDIS_URL)._replace(path=f"/{TEST_REDIS_DATABASE}").geturl()
CELERY_BROKER_URL = CELERY_RESULT_BACKEND = REDIS_URL
