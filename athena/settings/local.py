"""Local stack (`make run`): the product as a person uses it, so debug pages stay off unless ATHENA_DEBUG=true
(with DEBUG on, Django shows tracebacks to every visitor and WhiteNoise serves from the apps' folders instead
of the collected, hashed files that production serves)."""

from athena.settings.base import *  # noqa: F403
