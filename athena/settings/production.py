"""Production: secrets and hosts must come from the environment."""

from athena.env import EnvError, env
from athena.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = env.str("ATHENA_SECRET_KEY")
if len(SECRET_KEY) < 40:
    raise EnvError("ATHENA_SECRET_KEY must be set to at least 40 random characters in production")
# each an earlier ATHENA_SECRET_KEY, so as long: a shorter one is a key with a comma in it, split (the list is
# comma-separated), which would open nothing sealed under the whole key
if any(len(old) < 40 for old in SECRET_KEY_FALLBACKS):  # noqa: F405
    raise EnvError(
        "ATHENA_SECRET_KEY_FALLBACKS: each earlier key must be at least 40 characters (the list is "
        "comma-separated: a key holding a comma cannot be one of them)"
    )
ATHENA_AUDIT_KEY = env.str("ATHENA_AUDIT_KEY")
if len(ATHENA_AUDIT_KEY) < 32 or ATHENA_AUDIT_KEY == DEV_AUDIT_KEY:  # noqa: F405
    raise EnvError("ATHENA_AUDIT_KEY must be set to at least 32 random characters in production")
SESSION_COOKIE_SECURE = env.bool("ATHENA_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
EMAIL_BACKEND = env.str("ATHENA_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
# HTTPS only: behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("ATHENA_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = env.int("ATHENA_HSTS_SECONDS", 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = False  # preloading is a decision for the domain's owner, not a default
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
