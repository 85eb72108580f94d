"""Text analysis shared by ingest and query time for exact BM25.

One analyser produces one term list with two lanes:

* the **word lane**: lower-cased words, English stopwords removed, Porter-stemmed; compound tokens
  (``max_wal_size``, ``ip-route``, ``getElementById``) are split into their parts here as well;
* the **identifier lane**: tokens that look like identifiers (``max_wal_size``, ``%LINK-3-UPDOWN``,
  ``192.0.2.0/24``, ``-XX:MaxHeapSize``, ``RFC 4271``) emitted verbatim, lower-cased, with a ``=`` prefix,
  so that an exact identifier in a question matches the exact identifier in a document.

The same function must run on both sides, so every rule here is deterministic and context-free except the
``RFC 4271`` join. Throughput matters (the whole corpus goes through :func:`analyze` at ingest), so each
distinct raw token is analysed once and memoised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "IDENTIFIER_PREFIX",
    "STOPWORDS",
    "analyze",
    "identifiers",
    "query_terms",
    "sentences",
    "stem",
]

IDENTIFIER_PREFIX = "="


# Compact English stopword list. Deliberately NOT stopwords because they change the meaning of technical
# text: no/not (``no shutdown``), on/off/up/down (states), all/any/none, before/after/between, only,
# show/set/get (commands), default.
def _word_set(text: str) -> frozenset[str]:
    # Whitespace-separated word lists read better than 150 quoted literals.
    return frozenset(text.split())


STOPWORDS: frozenset[str] = _word_set(
    """
    a an the and or but if then else than so nor of to in into onto for with within without by from at as
    about via per is are was were be been being am it its itself this that these those there here
    do does did doing have has had having i me my myself we our ours us you your yours yourself he him his
    she her hers they them their theirs themselves what which who whom whose when where why how whether
    can could would should will shall may might must also just very too such same own each other both few
    more most some again further once while during until
    s t d ll m re ve eg ie etc vs cf
    dont doesnt didnt isnt arent wasnt werent cant couldnt wouldnt shouldnt wont hasnt havent hadnt
    """
)

# Interrogatives dropped from questions. They are stopwords already; kept as a named set so query_terms
# states its intent and stays correct if the stopword list is ever trimmed.
_QUESTION_WORDS: frozenset[str] = _word_set("what which who whom whose when where why how whether whats hows")

# Raw tokens: runs of word characters plus the punctuation that occurs *inside* identifiers.
_TOKEN_RE = re.compile(r"[\w.\-/:%@'\u2019]+")
# Alphanumeric runs inside a compound token.
_ALNUM_RUN_RE = re.compile(r"[^\W_]+")
# Split an ASCII alphanumeric run at letter/digit boundaries and at lower->upper (camelCase) boundaries.
# No "acronym boundary" rule: it would cut IPv4 as I|Pv4 and VLANs as VLA|Ns.
_PIECE_RE = re.compile(r"[A-Z]+[a-z]*|[a-z]+|[0-9]+")
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
# Dotted single letters: e.g, i.e, u.s -> treated as a plain word with the dots removed.
_DOTTED_ABBREV_RE = re.compile(r"(?:[a-z]\.)+[a-z]")
_ORDINAL_RE = re.compile(r"[0-9]+(?:st|nd|rd|th)")
_RFC_RE = re.compile(r"rfc-?([0-9]+)")
# Identifiers whose parts carry no word meaning: IPv4/CIDR, versions, dates, times, ranges, hex literals,
# IPv6, MAC addresses, UUIDs. They live in the identifier lane only (their parts would be noise).
_NUMERIC_IDENTIFIER_RE = re.compile(
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
_MAX_IDENTIFIER_LEN = 128
_MAX_WORD_LEN = 64
_TRAILING_JUNK = ".,:;@'/%-"
_LEADING_JUNK = ",:;@'"

_CACHE: dict[str, tuple[str, ...]] = {}
_CACHE_LIMIT = 400_000
_STEM_CACHE: dict[str, str] = {}
_RFC_TERMS = ("rfc",)


# --------------------------------------------------------------------------------------------- stemmer
# Porter (1980) stemmer with the two later revisions (bli->ble, logi->log), written from the published
# algorithm description. It only runs on ASCII alphabetic words longer than two letters.


def _consonants(word: str) -> list[bool]:
    """Per letter: True for a consonant (y counts as a consonant at the start or after a vowel)."""
    flags: list[bool] = []
    prev = False
    for i, ch in enumerate(word):
        if ch in "aeiou":
            cons = False
        elif ch == "y":
            cons = i == 0 or not prev
        else:
            cons = True
        flags.append(cons)
        prev = cons
    return flags


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel->consonant transitions in the stem."""
    flags = _consonants(stem_)
    return sum(1 for i in range(1, len(flags)) if flags[i] and not flags[i - 1])


def _has_vowel(stem_: str) -> bool:
    return not all(_consonants(stem_))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _consonants(word)[-1]


def _ends_cvc(word: str) -> bool:
    if len(word) < 3:
        return False
    flags = _consonants(word)
    return flags[-3] and not flags[-2] and flags[-1] and word[-1] not in "wxy"


_STEP2 = sorted(
    {
        "ational": "ate",
        "tional": "tion",
        "enci": "ence",
        "anci": "ance",
        "izer": "ize",
        "bli": "ble",
        "alli": "al",
        "entli": "ent",
        "eli": "e",
        "ousli": "ous",
        "ization": "ize",
        "ation": "ate",
        "ator": "ate",
        "alism": "al",
        "iveness": "ive",
        "fulness": "ful",
        "ousness": "ous",
        "aliti": "al",
        "iviti": "ive",
        "biliti": "ble",
        "logi": "log",
    }.items(),
    key=lambda kv: -len(kv[0]),
)
_STEP3 = sorted(
    {
        "icate": "ic",
        "ative": "",
        "alize": "al",
        "iciti": "ic",
        "ical": "ic",
        "ful": "",
        "ness": "",
    }.items(),
    key=lambda kv: -len(kv[0]),
)
_STEP4 = sorted(
    _word_set("al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize"),
    key=lambda s: (-len(s), s),
)


def _step1ab(w: str) -> str:
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
        return w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            if not _has_vowel(base):
                return w
            if base.endswith(("at", "bl", "iz")):
                return base + "e"
            if _ends_double_consonant(base) and base[-1] not in "lsz":
                return base[:-1]
            if _measure(base) == 1 and _ends_cvc(base):
                return base + "e"
            return base
    return w


def _replace_suffix(w: str, table: list[tuple[str, str]], min_measure: int) -> str:
    # Porter: only the longest matching suffix is considered; if its condition fails, nothing happens.
    for suffix, replacement in table:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            return base + replacement if _measure(base) > min_measure else w
    return w


def _porter(w: str) -> str:
    w = _step1ab(w)
    if w.endswith("y") and _has_vowel(w[:-1]):  # step 1c
        w = w[:-1] + "i"
    w = _replace_suffix(w, _STEP2, 0)
    w = _replace_suffix(w, _STEP3, 0)
    for suffix in _STEP4:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    if w.endswith("e"):  # step 5a
        base = w[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _ends_cvc(base)):
            w = base
    if w.endswith("ll") and _measure(w) > 1:  # step 5b
        w = w[:-1]
    return w


# The version of how a file becomes chunks and postings: what analyze() produces, and the parsing and chunking
# rules. Bump it whenever that output changes for some text: a document indexed by an older version is
# re-indexed by the next ingest of its folder even when its file is unchanged, so that its chunks, postings and
# the questions' terms agree again. 2: British spellings mapped to American ones. 3: a configuration example's
# comment block stays in one chunk with the setting below it.
ANALYZER_VERSION = 3

# British spellings, mapped to the American ones before stemming so that either finds both (vendor manuals mix
# them: the dev corpus has "synchronisation" 71 times and "synchronization" 24). -ise/-isation/-yse endings
# change only after a stem of four letters or more ("rise", "noise", "raise" stay); -our/-re words are listed,
# because "hour", "tour", "genre" or "acre" must not change. The same mapping runs at ingestion and at query
# time, so a word it changes needlessly ("otherwise" -> "otherwize") still matches itself.
_BRITISH_ENDING_RE = re.compile(r"^([a-z]{4,})(is|ys)(e|ed|es|ing|er|ers|ation|ations)$")
_BRITISH_OUR = frozenset(
    {
        "arbour",
        "armour",
        "behaviour",
        "clamour",
        "colour",
        "endeavour",
        "favour",
        "flavour",
        "harbour",
        "honour",
        "humour",
        "labour",
        "neighbour",
        "odour",
        "parlour",
        "rumour",
        "savour",
        "splendour",
        "vapour",
        "vigour",
    }
)
_BRITISH_WORDS = {
    **{
        f"{w}{end}": f"{w[:-2]}er{us}"
        for w in (
            "centre",
            "fibre",
            "metre",
            "litre",
            "theatre",
            "calibre",
            "lustre",
            "spectre",
            "sombre",
            "meagre",
        )
        for end, us in (("", ""), ("s", "s"), ("d", "ed"))
    },
    **{
        f"{w}{end}": f"{w[:-2]}se{end}"
        for w in ("licence", "defence", "offence", "pretence")
        for end in ("", "s")
    },
    **{f"{w}{end}": f"{w[:-2]}{end}" for w in ("catalogue", "dialogue", "analogue") for end in ("", "s")},
    "grey": "gray",
    "programme": "program",
    "programmes": "programs",
}


def american(word: str) -> str:
    """The American spelling of a lower-case British one ("synchronised" -> "synchronized", "neighbours" ->
    "neighbors"); other words unchanged."""
    mapped = _BRITISH_WORDS.get(word)
    if mapped is not None:
        return mapped
    ending = _BRITISH_ENDING_RE.match(word)
    if ending is not None:
        return f"{ending.group(1)}{ending.group(2)[0]}z{ending.group(3)}"
    if "our" in word:
        for root in _BRITISH_OUR:
            if word.startswith(root):
                return f"{root[:-2]}r{word[len(root) :]}"
    return word


def stem(word: str) -> str:
    """Porter-stem one lower-case word (British spellings are first mapped to American ones).

    Args:
        word: a lower-case token. Words that are not ASCII letters, or have at most two letters, are
            returned unchanged.

    Returns:
        The stem (``"configuration"`` -> ``"configur"``, ``"routers"`` -> ``"router"``).
    """
    cached = _STEM_CACHE.get(word)
    if cached is not None:
        return cached
    result = _porter(american(word)) if len(word) > 2 and word.isascii() and word.isalpha() else word
    if len(_STEM_CACHE) >= _CACHE_LIMIT:
        _STEM_CACHE.clear()
    _STEM_CACHE[word] = result
    return result


# ------------------------------------------------------------------------------------------- tokeniser


def _strip(tok: str) -> str:
    """Remove punctuation around a raw token while keeping meaningful leaders (``--opt``, ``%SYS``, ``/etc``)."""
    tok = tok.rstrip(_TRAILING_JUNK)
    while tok:
        tok = tok.lstrip(_LEADING_JUNK)
        if not tok:
            break
        first = tok[0]
        nxt = tok[1] if len(tok) > 1 else ""
        if first == "-":
            run = len(tok) - len(tok.lstrip("-"))
            after = tok[run : run + 1]
            if run <= 2 and after.isalpha():  # -v, --check, -XX:MaxHeap
                break
            tok = tok[run:]
        elif first == "%":
            if nxt.isalpha():  # %LINK-3-UPDOWN
                break
            tok = tok[1:]
        elif first == ".":
            if nxt.isalpha() or nxt == "_":  # .bashrc
                break
            tok = tok[1:]
        elif first == "/":
            if nxt.isalnum() or nxt in "_.":  # /etc/passwd, /.ssh
                break
            tok = tok[1:]
        else:
            break
    return tok


def _word_pieces(tok: str) -> list[str]:
    """Word-lane pieces of a compound token: separators, letter/digit and camelCase boundaries."""
    pieces: list[str] = []
    for run in _ALNUM_RUN_RE.findall(tok):
        if not run.isascii():
            pieces.append(run.lower())
            continue
        parts = _PIECE_RE.findall(run)
        if len(parts) > 1 and _CAMEL_RE.search(run) and run.isalpha():
            # A lower-case query ("maxheap", "postgresql") must still find a camelCase run.
            pieces.append(run.lower())
        pieces.extend(p.lower() for p in parts)
    out: list[str] = []
    for piece in pieces:
        # Digits and single letters inside compounds (the 3 of %LINK-3-UPDOWN, the e of e1000) are noise
        # in the word lane; the identifier lane keeps the exact token.
        if piece.isdigit() or len(piece) < 2 or len(piece) > _MAX_WORD_LEN or piece in STOPWORDS:
            continue
        out.append(stem(piece))
    return out


def _analyze_token(raw: str) -> tuple[str, ...]:
    """All terms (both lanes) for one raw token, without context."""
    tok = _strip(raw)
    if not tok:
        return ()
    if "'" in tok or "\u2019" in tok:
        tok = tok.replace("\u2019", "'")
        if tok.lower().endswith("'s"):  # possessive
            tok = tok[:-2]
        tok = _strip(tok.replace("'", ""))
        if not tok:
            return ()
    low = tok.lower()
    if tok.isalpha() and not _CAMEL_RE.search(tok):
        if low in STOPWORDS or len(low) > _MAX_WORD_LEN:
            return ()
        return (stem(low),)
    if tok.isdigit():
        return (low,) if len(low) <= _MAX_WORD_LEN else ()
    if _DOTTED_ABBREV_RE.fullmatch(low):
        word = low.replace(".", "")
        return () if word in STOPWORDS else (stem(word),)
    if _ORDINAL_RE.fullmatch(low):
        return (low,)
    # Everything else is an identifier: contains _ - . / : % @, mixes digits and letters, is camelCase or
    # starts with an option dash.
    rfc = _RFC_RE.fullmatch(low)
    if rfc:
        low = "rfc" + rfc.group(1)
    pieces = [] if _NUMERIC_IDENTIFIER_RE.fullmatch(low) else _word_pieces(tok)
    if len(low) <= _MAX_IDENTIFIER_LEN:
        pieces.append(IDENTIFIER_PREFIX + low)
    return tuple(pieces)


def analyze(text: str) -> list[str]:
    """Turn text into the BM25 term sequence (word lane and identifier lane interleaved in text order).

    Args:
        text: any text: a chunk at ingest time or a question at query time.

    Returns:
        Terms in order of occurrence, repeated as often as they occur (term frequency matters). Word-lane
        terms are stemmed lower-case words; identifier-lane terms are lower-cased identifiers prefixed with
        ``=``. Example: ``"Set max_wal_size (RFC 4271)"`` ->
        ``["set", "max", "wal", "size", "=max_wal_size", "rfc", "4271", "=rfc4271"]``.
    """
    out: list[str] = []
    extend = out.extend
    cache = _CACHE
    after_rfc = False
    for raw in _TOKEN_RE.findall(text):
        terms = cache.get(raw)
        if terms is None:
            terms = _analyze_token(raw)
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            cache[raw] = terms
        extend(terms)
        if after_rfc and len(terms) == 1 and terms[0].isdigit():
            out.append(IDENTIFIER_PREFIX + "rfc" + terms[0])  # "RFC 4271" -> =rfc4271
        after_rfc = terms == _RFC_TERMS
    return out


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def query_terms(text: str) -> list[str]:
    """Analyse a question for BM25: like :func:`analyze`, deduplicated in order, interrogatives dropped.

    Args:
        text: the user's question.

    Returns:
        Distinct terms in first-occurrence order. Content words such as ``default`` are kept; only
        interrogatives and stopwords are dropped.
    """
    return [t for t in _dedupe(analyze(text)) if t not in _QUESTION_WORDS]


def identifiers(text: str) -> list[str]:
    """The identifier-lane tokens of ``text`` (lower-cased, without the ``=`` prefix), distinct, in order.

    Used for highlighting and for checking that every identifier of an answer sentence appears verbatim in
    the cited span.
    """
    n = len(IDENTIFIER_PREFIX)
    return _dedupe(t[n:] for t in analyze(text) if t.startswith(IDENTIFIER_PREFIX))


# ------------------------------------------------------------------------------------ sentence splitter

_BLOCK_SPLIT_RE = re.compile(r"\n[ \t\r\f\v]*\n")
# Bullets, "1." / "1)", and "(a)" / "a)" / "(iv)" items. A parenthesised word such as "(via)" is not an item.
_LIST_ITEM_RE = re.compile(
    r"\s*(?:[-*+\u2022\u2023\u25e6\u25aa]|\d{1,3}[.)]|\(?(?:[a-zA-Z]|[ivxIVX]{1,4}|\d{1,3})\))\s+"
)
_HEADING_RE = re.compile(r"\s*#{1,6}\s+")
_TERM_ITEM_RE = re.compile(r"[a-z][\w-]* - \S")
_RULE_RE = re.compile(r"\s*(?:[-=*_~]\s*){3,}")
_BOUNDARY_RE = re.compile(r"([.!?]+)[\"'\u201d\u2019)\]]*\s+")
# Words after which a period never ends a sentence (the next word may well be capitalised: "e.g. Cisco").
# "no" is left out: "set it to no. Then ..." is common in configuration text.
_NO_SPLIT_AFTER = _word_set(
    """
    e.g eg i.e ie vs cf viz fig figs eq eqs approx ca resp ref refs sect ch vol pp
    mr mrs ms dr prof jr sr al incl esp
    """
)


def _split_segment(segment: str) -> list[str]:
    text = " ".join(segment.split())
    out: list[str] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(text):
        end = m.end()
        if end >= len(text):
            break
        if text[end].islower():  # "etc. and", "foo.c. then": not a sentence start
            continue
        period_only = "." in m.group(1) and "?" not in m.group(1) and "!" not in m.group(1)
        if period_only and _is_abbreviation(text[start : m.start()].rsplit(" ", 1)[-1]):
            continue
        sentence = text[start:end].strip()
        if sentence:
            out.append(sentence)
        start = end
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


_LINE_END_RE = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


def _is_abbreviation(word: str) -> bool:
    """A word after which a period does not end a sentence: "e.g", "vs", an initial."""
    word = word.lstrip("(\"'`[").lower()
    return word in _NO_SPLIT_AFTER or (len(word) == 1 and word.isalpha())


def _continues_comment(previous: str, text: str) -> bool:
    """Does a '#' line continue the '#' line right above it? It does when it starts in lower case and the line
    above is prose that did not end its sentence (a Markdown heading is neither written in lower case nor
    wrapped; root shell commands such as "# mkdir /dev/net" are short and each stands alone)."""
    above = _HEADING_RE.match(previous)
    if above is None or not _goes_on_with_sentence(text.strip()):
        return False
    prose = previous[above.end() :].strip()
    return len(prose.split()) >= 5 and not _ends_sentence(prose)


def _goes_on_with_sentence(text: str) -> bool:
    """Does a wrapped line go on with the sentence above: a lower-case word, a number that is not a list item
    ("1 second, an immediate time jump ..."), or a bracket or quote before a lower-case word ("(especially
    backwards), so be careful!")?"""
    if _LIST_ITEM_RE.match(text):
        return False
    first = text[:1]
    if first in "([\"'":
        return text[1:2].islower()
    return first.islower() or first.isdigit()


def _ends_sentence(line: str) -> bool:
    """Does this line end with a sentence (not with "e.g." or an initial)?"""
    if not _LINE_END_RE.search(line):
        return False
    last = line.rsplit(" ", 1)[-1].rstrip(".!?\"'\u201d\u2019)]")
    # "etc." before a lower-case word goes on ("1, 2, 3, etc. and so on"), as inside a line
    return not _is_abbreviation(last) and last.lower().lstrip("(\"'`[") != "etc"


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edit distance of `a` and `b` where swapping two adjacent letters counts as one edit, as it is typed
    ("recieve"), or `limit` + 1 as soon as it must exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb and ca != cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


# an option term written with its value attached ("=-n1" from "mydaemon -N1"): manuals document it bare ("-N")
ATTACHED_VALUE = re.compile(r"=(-[a-z])\d+")  # one-letter options only: "--http2" and "-sha256" are names


def sentences(text: str) -> list[str]:
    """Split technical text into sentences.

    Blank lines, list items (``-``, ``*``, ``1.``, ``a)``), Markdown headings and table rows always start a
    new sentence; wrapped lines inside a paragraph are joined, except a short line starting in lower case
    right after a line that ended a sentence (the next term of a manual's option list: "listen-port port").
    Inside a paragraph a sentence ends at ``.``/``!``/``?`` followed by whitespace and a word that does not
    start in lower case, except after
    abbreviations such as ``e.g.``, ``i.e.``, ``vs.`` or an initial. Periods inside version numbers, IP
    addresses and file names (``2.6.14``, ``ip-route.8.txt``) are never followed by whitespace, so they do
    not split.

    Args:
        text: plain text, possibly with Markdown-style lists and headings.

    Returns:
        Sentences with internal whitespace collapsed to single spaces and list markers removed.
    """
    segments: list[str] = []
    for block in _BLOCK_SPLIT_RE.split(text):
        paragraph: list[str] = []  # lines of the current paragraph or list item, joined when flushed
        previous = ""  # the line before, as written
        for line in block.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            heading = _HEADING_RE.match(line)
            if heading and segments and _continues_comment(previous, line[heading.end() :]):
                # a '#' comment wrapped over several lines of a configuration file ("# Note: the ... syntax
                # for a script" / "# requires that /bin/sh is Bash."): one sentence, not headings
                segments[-1] = f"{segments[-1]} {line[heading.end() :].strip()}"
                previous = line
                continue
            previous = line
            item = _LIST_ITEM_RE.match(line)
            is_rule = _RULE_RE.fullmatch(line) is not None
            starts_segment = (
                is_rule or heading or stripped.startswith("|") or (item and item.end() < len(line))
            )
            if starts_segment and paragraph:
                segments.append(" ".join(paragraph))
                paragraph = []
            if is_rule:
                continue
            if heading:
                segments.append(line[heading.end() :].strip())
            elif stripped.startswith("|"):
                segments.append(stripped)
            elif item and item.end() < len(line):
                paragraph.append(line[item.end() :].strip())
            else:
                ended = _ends_sentence(paragraph[-1]) if paragraph else False
                if (
                    paragraph
                    and stripped[0].islower()
                    and (
                        (len(stripped.split()) <= 5 and ended)
                        or (_TERM_ITEM_RE.match(stripped) and (ended or paragraph[-1].endswith(":")))
                    )
                ):
                    # a line that ended a sentence, then a short one in lower case: not a wrapped sentence but
                    # the next term of a manual's option list ("... the standard NTP port)." / "listen-port port");
                    # likewise a "term - description" item after a finished sentence or a lead-in ("... rules of
                    # the following types:" / "discard - the packet is dropped silently.")
                    segments.append(" ".join(paragraph))
                    paragraph = []
                paragraph.append(stripped)
        if paragraph:
            segments.append(" ".join(paragraph))
    out: list[str] = []
    for segment in segments:
        out.extend(_split_segment(segment))
    return out
