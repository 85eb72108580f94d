"""The retrieval pipeline: understand the query, run dense/BM25/graph concurrently (ACL inside each SQL),
fuse, rerank, diversify. `search()` is the one entry point; each stage is a function of its own."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np
import psycopg
from django.db import close_old_connections, connection

from athena.principals import Principal
from knowledge.index_selectors import chunk_neighbours, chunk_rows, terms_readable, terms_readable_df
from knowledge.text import (
    ATTACHED_VALUE,
    IDENTIFIER_PREFIX,
    STOPWORDS,
    analyze,
    edit_distance,
    query_terms,
    stem,
    surface_word_of,
)
from retrieval.fusion import FusionMode, Scored, fuse, minmax
from retrieval.mmr import mmr
from retrieval.stages import bm25_search, dense_search, graph_search, near_readable_terms
from retrieval.types import Filters, Hit, SearchConfig, SearchResult

T = TypeVar("T")
SYNONYM_WEIGHT = 0.5  # expansions help recall but must not outrank the user's own words
VENDOR_BOOST = 0.10  # added to the fused score of chunks of a vendor named in the question

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="retrieval")
        return _pool


def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call `fn(*args, **kwargs)` from a pool thread (search's stages, the pipeline's sub-question searches)
    and return its result. Each of the (few, long-lived) pool threads keeps its own persistent connection:
    opening three connections per search cost more than the SQL itself. Broken or expired connections are
    dropped first, as Django does between requests."""
    close_old_connections()
    try:
        return fn(*args, **kwargs)
    except (psycopg.OperationalError, psycopg.InterfaceError):
        # raised by a raw psycopg cursor (the binary BM25 block reads), past Django's error wrapper, so
        # close_old_connections() would not know the connection is broken (a PostgreSQL restart): drop it
        # so that this thread's next search reconnects
        connection.close()
        raise


@dataclass(frozen=True)
class QueryAnalysis:
    terms: list[tuple[str, float]]
    vendors: list[str]
    entities: list[tuple[str, str]]


# Operations shorthand every NOC uses; merged with the admin-curated Synonym table.
ABBREVIATIONS: dict[str, list[str]] = {
    "mgmt": ["management"],
    "cfg": ["configuration"],
    "conf": ["configuration"],
    "config": ["configuration"],
    "auth": ["authentication"],
    "authn": ["authentication"],
    "authz": ["authorization"],
    "intf": ["interface"],
    "iface": ["interface"],
    "gw": ["gateway"],
    "fw": ["firewall"],
    "lb": ["load balancer"],
    "vip": ["virtual address"],
    "dc": ["datacenter"],
    "pkt": ["packet"],
    "pkts": ["packets"],
    "msg": ["message"],
    "msgs": ["messages"],
    "svc": ["service"],
    "srv": ["server"],
    "addr": ["address"],
    "dest": ["destination"],
    "dst": ["destination"],
    "src": ["source"],
    "max": ["maximum"],
    "min": ["minimum"],
    "perf": ["performance"],
    "repl": ["replication"],
    "db": ["database"],
    "env": ["environment"],
    "info": ["information"],
    "ts": ["timestamp"],
}
_synonym_cache: dict[str, Any] = {"at": 0.0, "rows": []}
_gazetteer_cache: dict[str, Any] = {"at": 0.0, "map": {}}


def _synonyms() -> list[tuple[str, list[str]]]:
    from knowledge.selectors import synonym_expansions

    if time.monotonic() - _synonym_cache["at"] > 30:
        curated = synonym_expansions()
        known = {term for term, _ in curated}
        _synonym_cache["rows"] = curated + [(k, v) for k, v in ABBREVIATIONS.items() if k not in known]
        _synonym_cache["at"] = time.monotonic()
    return _synonym_cache["rows"]


def _gazetteer() -> dict[str, tuple[str, str]]:
    from knowledge.selectors import vendor_gazetteer

    if time.monotonic() - _gazetteer_cache["at"] > 30:
        _gazetteer_cache["map"] = vendor_gazetteer()
        _gazetteer_cache["at"] = time.monotonic()
    return _gazetteer_cache["map"]


def clear_caches() -> None:
    _synonym_cache["at"] = 0.0
    _gazetteer_cache["at"] = 0.0


def understand(question: str) -> QueryAnalysis:
    """Keywords/identifiers for BM25, synonym expansion (admin-curated), vendors and graph entities."""
    from knowledge.recognisers import recognise

    terms = [(t, 1.0) for t in query_terms(question)]
    own = {t for t, _ in terms}
    for term, _ in list(terms):
        # an option written with its value attached ("mydaemon -N1", "tail -n50") is documented bare ("-N")
        flag = ATTACHED_VALUE.fullmatch(term)
        if flag and f"={flag.group(1)}" not in own:
            terms.append((f"={flag.group(1)}", SYNONYM_WEIGHT))
            own.add(f"={flag.group(1)}")
    lowered = question.lower()
    for term, expansions in _synonyms():
        if re.search(rf"(?<!\w){re.escape(term)}(?!\w)", lowered):
            for expansion in expansions:
                for t in analyze(str(expansion)):
                    if t not in own:
                        terms.append((t, SYNONYM_WEIGHT))
                        own.add(t)
    hits = recognise(question, gazetteer=_gazetteer())
    entities = list(dict.fromkeys((h.kind, h.name) for h in hits))
    vendors = list(
        dict.fromkeys(
            h.surface if h.kind != "vendor" else h.name for h in hits if h.kind in {"vendor", "product"}
        )
    )
    return QueryAnalysis(terms=terms, vendors=vendors, entities=entities)


_DIGITS = re.compile(r"\d+")


def correct_terms(terms: list[str], principal: Principal, question: str = "") -> dict[str, str]:
    """Misspelt terms of the question: option and setting names, and words, that no chunk the principal may
    read contains, each mapped to the closest term of the same lane that such chunks do contain
    ("retransmision_timeout" -> "retransmission_timeout", "reciev" -> "receiv"): one edit (a swap of two adjacent
    letters counts as one) under ten characters, two from ten on, a word's one edit a slip and never a number's
    (`near_misspelt_terms`); a word must have five letters and its correction occur in two chunks. Terms only
    readable elsewhere are never suggested. With the `question` the terms came from, a word whose stem is no
    such neighbour is also looked up as typed (`_typed_word_corrections`)."""
    names = [t for t in terms if t.startswith("=") and len(t) > 6]
    words = [t for t in terms if not t.startswith("=") and len(t) >= 5 and t.isalpha()]
    known = terms_readable([*names, *words], principal)
    corrections: dict[str, str] = {}
    for term in names + words:
        if term in known:
            continue
        name = term.startswith("=")
        limit = 1 if len(term.lstrip("=")) < 10 else 2
        near = [
            t
            for t in near_misspelt_terms(term, principal, limit=limit, min_df=1 if name else 2)
            if t.startswith("=") == name
        ]
        if near:
            corrections[term] = near[0]
    missed = [t for t in words if t not in known and t not in corrections]
    if missed and question:
        corrections.update(_typed_word_corrections(missed, question, principal))
    return corrections


# the fewest chunks the asker may read that must hold a word's correction, as for a stem's; they are counted up
# to _WORD_CORRECTION_COUNTED (past it, two corrections are equally common)
_WORD_CORRECTION_MIN_DF = 2
_WORD_CORRECTION_COUNTED = 50


def slips_undone(word: str) -> dict[str, int]:
    """The spellings that one slip of the keyboard could have made `word` of -> how likely that slip, most likely
    first: two adjacent letters swapped (0), a letter typed twice or a neighbouring key caught with it (1: the
    letter dropped again). Not a letter changed or one missing: those reach far more words, and a name the corpus
    lacks ("recursor") would too often read as a word it has ("recurser", stemmed "recurs")."""
    ranked: dict[str, int] = {}
    for i in range(len(word) - 1):
        ranked.setdefault(word[:i] + word[i + 1] + word[i] + word[i + 2 :], 0)
    for i in range(len(word)):
        if _caught_with(word, i):
            ranked.setdefault(word[:i] + word[i + 1 :], 1)
    ranked.pop(word, None)
    return ranked


_KEY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_KEY_AT = {key: (row, column) for row, keys in enumerate(_KEY_ROWS) for column, key in enumerate(keys)}


def _caught_with(word: str, i: int) -> bool:
    """Whether the letter at `i` reads as typed by mistake with a letter beside it: the same letter again, or a
    key next to it on the keyboard. Not a first or last letter that differs from its neighbour: a name's own
    ends ("auditd", "stunnel", "rclone") would read as everyday words ("audit", "tunnel", "clone")."""
    letter = word[i]
    beside = [word[j] for j in (i - 1, i + 1) if 0 <= j < len(word)]
    if letter in beside:
        return True
    if i == 0 or i == len(word) - 1:
        return False
    return any(_keys_touch(letter, other) for other in beside)


def _keys_touch(a: str, b: str) -> bool:
    if a not in _KEY_AT or b not in _KEY_AT:
        return False
    (row_a, column_a), (row_b, column_b) = _KEY_AT[a], _KEY_AT[b]
    # each row sits about half a key to the right of the one above it
    return (row_a == row_b and abs(column_a - column_b) == 1) or (
        abs(row_a - row_b) == 1 and (column_a - column_b) * (1 if row_a > row_b else -1) in (0, -1)
    )


def near_misspelt_terms(term: str, principal: Principal, *, limit: int, min_df: int) -> list[str]:
    """The readable terms `term` could be a misspelling of (`near_readable_terms`), closest first. A word one
    edit from a readable word must be one slip of it (`one_slip_apart`): a name the corpus lacks is often one
    changed or added letter from a word it has ("obcerv" / "observ", "fastd" / "fast", "mailu" / "mail"),
    and read as that word it no longer tells that the corpus lacks the topic. Nor is a number a slip of another
    ("10.20.0.53" of "10.0.0.253", "vlan100" of "vlan101"). Setting and option names (identifiers) are typed
    from memory, not only mistyped (a plural: "ssl_ciphers"), and keep every other edit."""
    near = [
        t
        for t in near_readable_terms(term, principal, limit=limit, min_df=min_df)
        if _DIGITS.findall(t) == _DIGITS.findall(term)
    ]
    if term.startswith("="):
        return near
    return [t for t in near if edit_distance(term, t, 1) > 1 or one_slip_apart(term, t)]


_VOWELS = frozenset("aeiouy")


def one_slip_apart(typed: str, meant: str) -> bool:
    """Whether one slip makes `typed` of `meant` (words an edit apart): two adjacent letters swapped, a letter
    typed twice or with the key beside it (`slips_undone`), a letter left out but the first, a key beside the
    right one hit, or one vowel written for another ("seperate"). Not any other letter changed, added or
    left out at the start: those make a name the corpus lacks of a word it has."""
    if meant in slips_undone(typed):
        return True
    if len(typed) + 1 == len(meant):
        return any(typed == meant[:i] + meant[i + 1 :] for i in range(1, len(meant)))
    if len(typed) != len(meant):
        return False
    changed = [(a, b) for a, b in zip(typed, meant, strict=True) if a != b]
    if len(changed) != 1:
        return False
    a, b = changed[0]
    return _keys_touch(a, b) or (a in _VOWELS and b in _VOWELS)


def _typed_word_corrections(terms: list[str], question: str, principal: Principal) -> dict[str, str]:
    """Corrections of misspelt words looked up through the words as typed. The stemmer takes an ending off a
    word spelt right only ("numeric" -> "numer", but "nuemric" stays whole; "configuration" -> "configur", but
    "confiugration" -> "confiugr"), so a misspelt word's stem can be several edits from the right word's stem,
    and the trigram candidates rank a swapped pair below shorter terms ("config", "confid") and cut it. The
    word as typed, one slip (`slips_undone`: a swap of two letters, a letter too many) from a word spelt right
    whose stem at least two chunks the principal may read hold (as for a stem's correction), is that word
    misspelt: its term -> that stem, the likeliest slip first, then the stem more such chunks hold."""
    word_of = surface_word_of(question, terms)
    options: dict[str, dict[str, int]] = {}
    for term in terms:
        word = word_of[term].lower()
        if len(word) >= 5 and word.isascii() and word.isalpha():
            found: dict[str, int] = {}
            for spelling, rank in slips_undone(word).items():
                if spelling not in STOPWORDS:
                    stemmed = stem(spelling)
                    found[stemmed] = min(rank, found.get(stemmed, rank))
            found.pop(term, None)
            options[term] = found
    wanted = {stemmed for found in options.values() for stemmed in found}
    if not wanted:
        return {}
    df = terms_readable_df(wanted, principal, cap=_WORD_CORRECTION_COUNTED)
    corrections: dict[str, str] = {}
    for term, found in options.items():
        held = sorted(
            (t for t in found if df.get(t, 0) >= _WORD_CORRECTION_MIN_DF), key=lambda t: (found[t], -df[t], t)
        )
        if held:
            corrections[term] = held[0]
    return corrections


def word_read_as(word: str, pairs: Sequence[tuple[str, str]]) -> tuple[str, list[str]]:
    """A typed word as the spelling corrections read it, and the corrections that could not be placed in it.

    Args:
        word: the word as typed ("recieving", "nuemric", "recieve_timout").
        pairs: its (misspelt term, correction) pairs from `correct_terms`, an identifier's whole-name one first.
    Returns:
        The word with each corrected term put in place of its misspelt one, which keeps the rest ("recieving":
        "reciev" -> "receiv" gives "receiving"; a whole word corrected as typed is spelt out, `spelled_as`), and
        the corrected terms not found in the word as typed (folding changed its letters)."""
    reading, unplaced = word, []
    for term, correction in pairs:
        term, correction = term.removeprefix(IDENTIFIER_PREFIX), correction.removeprefix(IDENTIFIER_PREFIX)
        at = reading.lower().find(term)
        if at < 0:
            if correction.lower() not in reading.lower():  # not already read so by a whole-name correction
                unplaced.append(correction)
            continue
        if term == reading.lower():
            correction = spelled_as(reading, correction)
        reading = reading[:at] + correction + reading[at + len(term) :]
    return reading, unplaced


def spelled_as(word: str, stemmed: str) -> str:
    """The word spelt right that a word corrected as typed was read as (`slips_undone`: "nuemric", whose slip
    kept the stemmer from taking its ending off, was searched as "numer": it reads "numeric"); `stemmed` when no
    one slip of `word` stems to it."""
    return next((spelling for spelling in slips_undone(word.lower()) if stem(spelling) == stemmed), stemmed)


def corrections_by_word(
    word_of: Mapping[str, str], corrections: Mapping[str, str]
) -> dict[str, list[tuple[str, str]]]:
    """Each typed word (`word_of`: term -> the word it came from) -> the (misspelt term, correction) pairs made
    in it, an identifier's whole-name one first (`word_read_as` reads them in that order)."""
    made: dict[str, list[tuple[str, str]]] = {}
    for term, correction in sorted(
        corrections.items(), key=lambda item: not item[0].startswith(IDENTIFIER_PREFIX)
    ):
        made.setdefault(word_of[term], []).append((term, correction))
    return made


def question_as_meant(question: str, corrections: Mapping[str, str]) -> str:
    """The question as the asker meant it: each word that `correct_terms` corrected spelt as it was read
    ("what is the nuemric limit" -> "what is the numeric limit"), for what reads the question as a whole (its
    embedding: the dense search, the reranker, the answer's sentence scores). The question itself, unchanged,
    when nothing was corrected or a correction's word is not in it.

    Args:
        question: the question (or a part of it) as typed.
        corrections: misspelt term -> the readable term searched instead (`SearchResult.corrections`).
    Returns:
        The question with the corrected words in place of the typed ones."""
    if not corrections:
        return question
    meant = question
    for word, pairs in corrections_by_word(surface_word_of(question, corrections), corrections).items():
        reading = word_read_as(word, pairs)[0]
        if reading != word:
            meant = reading.join(re.split(rf"(?<!\w){re.escape(word)}(?!\w)", meant))
    return meant


_query_vectors: dict[str, np.ndarray] = {}


def embed_query(question: str) -> np.ndarray:
    """Query embedding, memoised for the few most recent questions (dense and MMR both need it)."""
    from knowledge.embedders import get_embedder

    vector = _query_vectors.get(question)
    if vector is None:
        vector = get_embedder().embed_query(question)
        if len(_query_vectors) > 256:
            _query_vectors.clear()
        _query_vectors[question] = vector
    return vector


def run_sources(
    question: str,
    principal: Principal,
    filters: Filters,
    config: SearchConfig,
    analysis: QueryAnalysis,
    timings: dict[str, float],
) -> dict[str, list[Scored]]:
    """Run the configured sources concurrently; returns source name -> run."""

    def dense() -> list[Scored]:
        from knowledge.embedders import get_embedder

        t0 = time.perf_counter()
        vec = embed_query(question)
        timings["embed_query"] = (time.perf_counter() - t0) * 1000
        t1 = time.perf_counter()
        # the embedder is loaded by now, and its name carries its variant (+int8)
        model = get_embedder().name
        run = dense_search(vec, principal, filters, k=config.dense_k, ef_search=config.ef_search, model=model)
        timings["dense"] = (time.perf_counter() - t1) * 1000
        return run

    def bm25() -> list[Scored]:
        t0 = time.perf_counter()
        run = bm25_search(
            analysis.terms, principal, filters, k=config.bm25_k, k1=config.bm25_k1, b=config.bm25_b
        )
        timings["bm25"] = (time.perf_counter() - t0) * 1000
        return run

    def graph() -> list[Scored]:
        t0 = time.perf_counter()
        run = graph_search(analysis.entities, principal, filters, k=config.graph_k)
        timings["graph"] = (time.perf_counter() - t0) * 1000
        return run

    stages = {"dense": dense, "bm25": bm25, "graph": graph}
    futures: dict[str, Future[list[Scored]]] = {
        name: _executor().submit(in_thread, stages[name]) for name in config.sources
    }
    return {name: future.result() for name, future in futures.items()}


def rerank_candidates(
    question: str, candidates: list[Scored], rows: dict[int, dict[str, Any]], config: SearchConfig
) -> list[Scored]:
    """Reorder the fused candidates with the configured reranker, blended with the fused score."""
    from retrieval.rerank import get_reranker

    reranker = get_reranker()
    passages = [f"{rows[c.id]['title']} {rows[c.id]['section']}\n{rows[c.id]['text']}" for c in candidates]
    scores = reranker.score(
        question,
        passages,
        vectors=[rows[c.id]["embedding"] for c in candidates],
        query_vector=embed_query(question),  # memoised: the dense stage computed it
    )
    fused = {s.id: s.score for s in minmax(candidates)}
    reranked = {
        s.id: s.score for s in minmax([Scored(c.id, sc) for c, sc in zip(candidates, scores, strict=True)])
    }
    blend = config.rerank_blend if config.rerank_blend is not None else getattr(reranker, "blend", 0.5)
    combined = [Scored(c.id, blend * fused[c.id] + (1 - blend) * reranked[c.id]) for c in candidates]
    return sorted(combined, key=lambda s: (-s.score, s.id))


def diversify(
    question_vec: np.ndarray | None,
    ranked: list[Scored],
    rows: dict[int, dict[str, Any]],
    config: SearchConfig,
) -> list[Scored]:
    vectors = [rows[s.id]["embedding"] for s in ranked]
    if question_vec is None or any(v is None for v in vectors) or not ranked:
        return ranked[: config.final_k]
    matrix = np.vstack([np.asarray(v, dtype=np.float32) for v in vectors])
    order = mmr(question_vec, matrix, [s.score for s in ranked], lam=config.mmr_lambda, k=config.final_k)
    return [ranked[i] for i in order]


def search(
    question: str, principal: Principal, filters: Filters | None = None, config: SearchConfig | None = None
) -> SearchResult:
    """Hybrid retrieval.

    Args:
        question: the user's question (already guarded).
        principal: who asks; only documents readable by them are ever touched by any stage.
        filters: metadata filters applied inside each source's SQL.
        config: stage parameters (k per source, fusion mode and weights, rerank/MMR switches).
    Returns:
        SearchResult with up to `final_k` hits, per-stage timings in ms and the query analysis.
    """
    filters = filters or Filters()
    config = config or SearchConfig()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    t0 = time.perf_counter()
    analysis = understand(question)

    corrections = correct_terms([t for t, _ in analysis.terms], principal, question)
    if corrections:
        # a correction is the word the asker meant, not an expansion of it: it is searched with the weight of the
        # term it corrects (which matches nothing the asker may read); at SYNONYM_WEIGHT the misspelt word counted
        # half as much as each word spelt right (typo probe, train: 11 -> 7 questions losing their answer)
        weight = dict(analysis.terms)
        analysis = replace(
            analysis, terms=[*analysis.terms, *((c, weight[t]) for t, c in corrections.items())]
        )
    # the question's embedding reads it as meant: a slip of the keyboard in a word is a word the model never
    # saw, and moves the question's vector away from the passages that answer it
    meant = question_as_meant(question, corrections)
    timings["understand"] = (time.perf_counter() - t0) * 1000

    t0 = time.perf_counter()
    runs = run_sources(meant, principal, filters, config, analysis, timings)
    timings["sources"] = (time.perf_counter() - t0) * 1000

    t0 = time.perf_counter()
    weights = {name: w for name, w in config.weight_map().items() if name in runs}
    fused = fuse(FusionMode.from_str(config.fusion), {k: v for k, v in runs.items() if v}, weights)
    pool_size = max(config.rerank_pool, config.rerank_k, config.final_k)
    # read under the ACL again: a document restricted or removed since its source read it (an admin's change,
    # a re-ingest swapping in new chunks) is left out here rather than shown or missing from `rows`
    rows = chunk_rows([c.id for c in fused[:pool_size]], visible_to=principal)
    candidates = [c for c in fused[:pool_size] if c.id in rows]
    if analysis.vendors:
        wanted = {v.lower() for v in analysis.vendors}
        candidates = sorted(
            (
                Scored(
                    c.id, c.score + (VENDOR_BOOST if (rows[c.id]["vendor"] or "").lower() in wanted else 0.0)
                )
                for c in candidates
            ),
            key=lambda s: (-s.score, s.id),
        )
    timings["fusion"] = (time.perf_counter() - t0) * 1000

    ranked = candidates
    if config.rerank and candidates:
        t0 = time.perf_counter()
        ranked = rerank_candidates(meant, candidates, rows, config)[: config.rerank_k]
        timings["rerank"] = (time.perf_counter() - t0) * 1000
    if config.mmr and ranked:
        t0 = time.perf_counter()
        query_vec = embed_query(meant)
        ranked = diversify(query_vec, ranked[: max(config.rerank_k, config.final_k)], rows, config)
        timings["mmr"] = (time.perf_counter() - t0) * 1000
    ranked = ranked[: config.final_k]

    per_source = {name: {s.id: s.score for s in run} for name, run in runs.items()}
    hits = []
    for item in ranked:
        row = rows[item.id]
        hits.append(
            Hit(
                chunk_id=item.id,
                document_id=row["document_id"],
                source=row["source"],
                title=row["title"],
                section=row["section"],
                page=row["page"],
                ordinal=row["ordinal"],
                text=row["text"],
                score=item.score,
                scores={name: round(scores.get(item.id, 0.0), 4) for name, scores in per_source.items()},
                updated_at=row["updated_at"],
                access_tier=row["access_tier"],
                prev_id=row["prev_id"],
                content_hash=row["content_hash"],
                injection_flag=row["injection_flag"],
                code_lines=tuple(row["code_lines"] or ()),
            )
        )
    timings["total"] = (time.perf_counter() - started) * 1000
    return SearchResult(
        hits=hits,
        timings_ms={k: round(v, 1) for k, v in timings.items()},
        query_terms=[t for t, _ in analysis.terms],
        vendors=analysis.vendors,
        entities=[f"{k}:{n}" for k, n in analysis.entities],
        candidates=len(fused),
        corrections=corrections,
    )


def chunks_by_ids(chunk_ids: Sequence[int], principal: Principal) -> dict[int, dict[str, Any]]:
    """Neighbour expansion for the answering pipeline: the chunks, only if the principal may read them."""
    return chunk_rows(chunk_ids, visible_to=principal)


def neighbour_ids(chunk_ids: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
    """(previous, next) chunk id of each chunk, for the answering pipeline's neighbour expansion."""
    return chunk_neighbours(chunk_ids)
