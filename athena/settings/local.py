"""Local stack (`make run`): the product as a person uses it, so debug pages stay off unless ATHENA_DEBUG=true
(with DEBUG on, Django shows tracebacks to every visitor and WhiteNoise serves from the apps' folders instead
of the collected, hashed files that production serves)."""

from athena.settings.base import *  # noqa: F403

ATHENA_AUDIT_KEY = ATHENA_AUDIT_KEY or DEV_AUDIT_KEY  # noqa: F405 - development only, documented default
ATHENA_DEMO_USERS = True  # bootstrap creates the documented demo accounts (alice, noc-bob, carol, admin)
