"""The identifier lane: tokens that look like identifiers (``max_wal_size``, ``%LINK-3-UPDOWN``,
``192.0.2.0/24``, ``-XX:MaxHeapSize``, ``RFC 4271``) are indexed verbatim, lower-cased, with a ``=`` prefix, so
that an exact identifier in a question matches the exact identifier in a document."""

from __future__ import annotations

import re

IDENTIFIER_PREFIX = "="

RFC_RE = re.compile(r"rfc-?([0-9]+)")
# Identifiers whose parts carry no word meaning: IPv4/CIDR, versions, dates, times, ranges, hex literals,
# IPv6, MAC addresses, UUIDs. They live in the identifier lane only (their parts would be noise).
NUMERIC_IDENTIFIER_RE = re.compile(
    r"""
    [0-9][0-9.:/\-]*                                  # 192.0.2.0/24, 2.6.14, 2024-01-05, 10:30
    | v[0-9]+(?:\.[0-9]+)+                            # v1.2.3
    | 0x[0-9a-f]+                                     # 0x1f
    | (?=[0-9a-f.:]*:[0-9a-f.]*:)[0-9a-f.:]+(?:/[0-9]+)?   # IPv6 (two or more colons), ::ffff:192.0.2.1
    | (?:[0-9a-f]{2}-){5}[0-9a-f]{2}                  # MAC with dashes
    | [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}   # UUID
    """,
    re.VERBOSE,
)
# PostgreSQL btree entries are limited to ~2.7 kB and giant tokens (base64, minified code) only bloat the
# vocabulary, so over-long identifiers and word pieces are not indexed.
MAX_IDENTIFIER_LEN = 128

# an option term written with its value attached ("=-n1" from "mydaemon -N1"): manuals document it bare ("-N")
ATTACHED_VALUE = re.compile(r"=(-[a-z])\d+")  # one-letter options only: "--http2" and "-sha256" are names


def identifier_normalise(low: str) -> str:
    """One spelling per RFC: ``rfc-4271`` and ``rfc4271`` -> ``rfc4271``; other lower-cased tokens unchanged."""
    rfc = RFC_RE.fullmatch(low)
    return "rfc" + rfc.group(1) if rfc else low


def is_numeric_identifier(low: str) -> bool:
    """An identifier whose parts carry no word meaning (an address, a version, a date): identifier lane only."""
    return NUMERIC_IDENTIFIER_RE.fullmatch(low) is not None


def identifier_term(low: str) -> str | None:
    """The identifier-lane term of a normalised lower-case token, or None when it is too long to index."""
    return IDENTIFIER_PREFIX + low if len(low) <= MAX_IDENTIFIER_LEN else None
