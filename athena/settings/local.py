"""Local development (make run): debug pages on."""

from athena.settings.base import *  # noqa: F403

DEBUG = True
