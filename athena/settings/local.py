"""Local development (make run): debug pages on."""

from athena.settings.base import *  # noqa: F403

DEBUG = True
ATHENA_AUDIT_KEY = ATHENA_AUDIT_KEY or DEV_AUDIT_KEY  # noqa: F405 - development only, documented default
