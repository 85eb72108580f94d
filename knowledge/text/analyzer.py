"""The analyser: text -> BM25 terms, the same function at ingest and at query time.

It composes the concerns of this package as Lucene/Tantivy compose a tokenizer and filters:
:mod:`~knowledge.text.tokenizer` (raw tokens, punctuation, compound pieces) ->
:mod:`~knowledge.text.stopwords` -> :mod:`~knowledge.text.stemmer` (with :mod:`~knowledge.text.spelling`)
for the **word lane**, and :mod:`~knowledge.text.identifier_lane` for the **identifier lane**. Both lanes are
interleaved in text order.

Every rule is deterministic and context-free except the ``RFC 4271`` join. Throughput matters (the whole
corpus goes through :func:`analyze` at ingest), so each distinct raw token is analysed once and memoised.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from knowledge.text.folding import fold_accents, fold_case
from knowledge.text.identifier_lane import (
    IDENTIFIER_PREFIX,
    identifier_normalise,
    identifier_term,
    is_numeric_identifier,
)
from knowledge.text.stemmer import stem
from knowledge.text.stopwords import QUESTION_WORDS, STOPWORDS
from knowledge.text.tokenizer import CAMEL_RE, compound_pieces, is_word, raw_tokens, strip_token

# The version of how a file becomes chunks and postings: what analyze() produces, and the parsing and chunking
# rules. Bump it whenever that output changes for some text: a document indexed by an older version is
# re-indexed by the next ingest of its folder even when its file is unchanged, so that its chunks, postings and
# the questions' terms agree again. 2: British spellings mapped to American ones. 3: a configuration example's
# comment block stays in one chunk with the setting below it. 4: chunking splits and overlaps at the sentences
# of knowledge.text.locate_sentences (the answering splitter), not at those of a splitter of its own. 5: stems
# from PyStemmer's Snowball "porter" (Porter's 1980 algorithm, without the bli->ble and logi->log revisions of
# the former hand-written stemmer: "possibly" -> "possibli", "topology" -> "topologi"). 6: words a man page
# (also one inside an HTML <pre>) or a wrapped text broke across lines are whole again ("con- tact",
# "--keep- in-foreground"); neighbouring "a | b" table rows and lines in capitals ("SYNOPSIS") are sentences of
# their own (they ran into each other and into the text below); a table's header rows end with a "--- | ---"
# rule line. 7: a placeholder in angle brackets in Markdown ("tunnels TUN-BR-<nnn>") stays text; it was dropped
# as an unknown HTML tag. 8: a chunk records the lines of code its format marks as code (`Chunk.code_lines`).
# 9: a DOCX's paragraphs set as code (a code style, or monospaced runs) are code blocks marked as code; in plain
# text a table aligned with spaces is a table, terms aligned with their descriptions one entry each, "Label:
# value" lines lines of their own, a list item's wrapped lines one line, and a command set off under a lead-in
# ending with ':' keeps its line, as does a Markdown code span on a line of its own under such a lead-in.
# 10: plain text reads a short block of "Label: value" lines without code as a record, not a code block, and a
# list of names in lower case with descriptions ("relay-common: Files used by ...") as one line per name, and
# takes "Doc-Type:", "Department:", "Vendor:", "Review-By:", "Superseded-By:", "Access-Tier:" and
# "Allowed-Groups:" under "Title:" as the document's metadata (they were left in its text as a code block), as
# HTML takes them from its <meta> tags (they were dropped; chunks carry the doc type, department and vendor);
# lines of configuration right under a lead-in ending with ':' at its indentation ("[Service]" /
# "CapabilityBoundingSet=~") are a code block, not words of the sentence above; a description indented under a
# term wrapped over lines starts a line of its own ("ip route add ... segs a,b" / "dev eth0" above "Adds a
# route ..."); a sentence that ends a table cell goes on to the end of its row (no sentence starts with "| ").
# 11: in a manual's list of options or settings, a term alone on its line starts a new sentence even when the
# description above it did not end with a period ("... as they drop" / "-W, --watch"; "Netmask
# (number of bits) deprecated" / "metric metric"; a command with its syntax, "isis hello-interval (1-600)
# [level-1 | level-2]"; a setting with its default, "queue_run_delay (default: 300s)"); a "term - description"
# item written with an en or em dash, or with placeholders after its term ("probe_count COUNT - set ..."),
# starts a new sentence after a finished one, as "term - description" did. 12: a list item whose marker did not
# reach its block's text (a bullet, an HTML <li>) starts with "- " in its chunk, so that items without a
# period are sentences of their own, and end before a capitalised line after them (the next paragraph or
# heading) unless the item is a term of one word; an HTML list whose items are all links into the page is a
# table of contents, dropped as the lists that the page marks as one were. 13: a man page's paragraph of short
# lines set deeper than the one above it is an example (code) and keeps its lines; a table drawn with box
# characters is a table; a caption's or a section heading's number ("Table 7.3.", "2.5.") ends no sentence,
# and a numbered heading's line ("2.5. Relayd spool queue internals") is a sentence of its own; the one
# sentence above a table of contents that only announces it ("Sections of this guide below:") is dropped with
# it. 14: a manual's entries set on one line each, tag and description ("0      if all went well" /
# "1      if the spool is full"), are sentences of their own where a block holds two or more; so is a term in
# capitals alone on its line above its description ("USR1 or SIGFUNC=DUMP" / "Write the state to a file")
# after a description without a period. 15: characters are folded before and while tokens are cut
# (knowledge.text.folding): NFC, soft hyphens and zero-width characters inside words dropped, Latin ligatures
# spelled out ("conﬁguration" is "configuration"), fullwidth ASCII as ASCII, accents of Latin and Greek letters
# and Hebrew and Arabic vowel points dropped, full case folding ("Straße" is "strasse"); a word keeps its combining marks (a
# Devanagari or Thai word was cut into letters at each vowel sign). 16: an option opened by a typographic dash is
# read as with ASCII dashes ("–enable-foo", as Sphinx typesets "--enable-foo", is "--enable-foo"; "−v" is "-v").
# 17: a zero-width space is dropped only inside a word of a script written with spaces (in Thai, Khmer, Chinese
# or Japanese it separates words) and HTML no longer makes it a space ("con\u200bfiguration" was "con figuration").
# 18: a run of Chinese, Japanese or Korean characters is indexed as its overlapping character pairs (it was one
# term from punctuation to punctuation, so no word inside a sentence was found).
# 19: a word wholly in Cyrillic, Greek or Arabic letters is stemmed by Snowball's Russian, Greek or Arabic
# stemmer (it was left as written, so "маршрутизатора" did not find "Маршрутизатор").
ANALYZER_VERSION = 19


# Dotted single letters: e.g, i.e, u.s -> treated as a plain word with the dots removed.
_DOTTED_ABBREV_RE = re.compile(r"(?:[a-z]\.)+[a-z]")
_ORDINAL_RE = re.compile(r"[0-9]+(?:st|nd|rd|th)")
_MAX_WORD_LEN = 64

_CACHE: dict[str, tuple[str, ...]] = {}
_CACHE_LIMIT = 400_000
_RFC_TERMS = ("rfc",)


def _word_lane(tok: str) -> list[str]:
    """Word-lane terms of a compound token: its pieces, stemmed, without digits, single letters and stopwords."""
    pieces = compound_pieces(tok)
    out: list[str] = []
    for piece in pieces:
        # Digits and single letters inside compounds (the 3 of %LINK-3-UPDOWN, the e of e1000) are noise
        # in the word lane; the identifier lane keeps the exact token.
        if piece.isdigit() or len(piece) < 2 or len(piece) > _MAX_WORD_LEN or piece in STOPWORDS:
            continue
        out.append(stem(piece))
    return out


# Chinese, Japanese and Korean: Han ideographs, kana (with the prolonged sound mark, halfwidth katakana) and
# Hangul syllables. Written without spaces between words (Korean: with particles attached), so a run of them is
# indexed as its overlapping pairs of characters, as Lucene's CJK analyser does: "ルーター設定" ->
# "ルー ータ ター ー設 設定", and a question's "設定" finds it.
_CJK_RUN = re.compile(
    "([\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\uac00-\ud7af]+)"
)


def _cjk_bigrams(run: str) -> list[str]:
    """The overlapping character pairs of a CJK run (the run itself when it is one character)."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _analyze_token(raw: str) -> tuple[str, ...]:
    """All terms (both lanes) for one raw token, without context."""
    if not raw.isascii() and _CJK_RUN.search(raw):
        out: list[str] = []
        for index, part in enumerate(_CJK_RUN.split(raw)):
            out.extend(_cjk_bigrams(part) if index % 2 else _analyze_token(part) if part else ())
        return tuple(out)
    tok = strip_token(raw)
    if not tok:
        return ()
    if "'" in tok or "\u2019" in tok:
        tok = tok.replace("\u2019", "'")
        if tok.lower().endswith("'s"):  # possessive
            tok = tok[:-2]
        tok = strip_token(tok.replace("'", ""))
        if not tok:
            return ()
    if not tok.isascii():
        tok = fold_accents(tok)
        if not tok:
            return ()  # a lone tatweel or mark: no identifier "" (which every text holds)
    low = fold_case(tok)
    if is_word(tok) and not CAMEL_RE.search(tok):
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
    low = identifier_normalise(low)
    pieces = [] if is_numeric_identifier(low) else _word_lane(tok)
    term = identifier_term(low)
    if term is not None:
        pieces.append(term)
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
    for raw in raw_tokens(text):
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
    return [t for t in _dedupe(analyze(text)) if t not in QUESTION_WORDS]


def surface_word_of(text: str, terms: Iterable[str]) -> dict[str, str]:
    """Each of ``terms`` -> the word of ``text`` as written that it came from (``=servername`` and ``servernam``
    -> ``"ServerName"``). A term the text does not yield (a spelling correction) maps to itself, without its
    lane prefix."""
    source: dict[str, str] = {}
    for raw in raw_tokens(text):
        for term in _analyze_token(raw):
            source.setdefault(term, strip_token(raw))
    return {term: source.get(term, term.removeprefix(IDENTIFIER_PREFIX)) for term in terms}


def surface_words(text: str, terms: Iterable[str]) -> list[str]:
    """The words of ``text`` as written that ``terms`` came from, distinct, in the order of ``terms`` (for
    telling a person what was searched: ``"ServerName"``, not ``servernam, server, name, =servername``); see
    :func:`surface_word_of`."""
    terms = list(terms)
    word_of = surface_word_of(text, terms)
    return _dedupe(word_of[term] for term in terms)


def identifiers(text: str) -> list[str]:
    """The identifier-lane tokens of ``text`` (lower-cased, without the ``=`` prefix), distinct, in order.

    Used for highlighting and for checking that every identifier of an answer sentence appears verbatim in
    the cited span.
    """
    n = len(IDENTIFIER_PREFIX)
    return _dedupe(t[n:] for t in analyze(text) if t.startswith(IDENTIFIER_PREFIX))
