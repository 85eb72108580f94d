"""Answer or abstain. With the trained selector (agents/answerer.py): its calibrated P(answerable) against the
threshold fitted on the train split, candidates re-ranked by P(this sentence states the answer). Without it:
the hand-set adequacy rules. Either way a weak first pool gets one reformulated search (the question's
distinctive terms only) before the pipeline abstains."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from agents.answerer import (
    MAX_CANDIDATES,
    QuestionFacts,
    Selection,
    get_answerer,
    next_sentences,
    rank,
    select,
    sentence_features,
)
from agents.evidence import EXPECTS_NUMBER, HAS_NUMBER, NUMBER, Evidence, ScoredSentence
from agents.steps.evaluate import evaluate_pool, pool_sentences
from agents.steps.retrieve import merge_results
from agents.steps.state import ABSTAIN_MESSAGE, AnswerState, QuestionTerms, ablated
from knowledge.text import (
    analyze,
    identifiers,
    match_form,
    query_terms,
    surface_word_of,
    surface_words,
)
from retrieval.metrics import contains
from retrieval.types import SearchConfig

# The hand-set rules (used only without a trained selector): the best evidence sentence must cover enough of
# the question's idf-weighted terms and be close in meaning
MIN_COVERAGE = 0.20
MIN_SENTENCE_SCORE = 0.35


# an abstention names at most this many of the words it searched for
SEARCHED_SHOWN = 8


def searched_words(
    question: str,
    terms: QuestionTerms,
    readable_df: dict[str, int],
    clipped: Mapping[str, str] | None = None,
) -> list[str]:
    """The question's words as written that were searched for, the SEARCHED_SHOWN most distinctive ones (a
    word as rare as its rarest term; a term no chunk the asker may read holds, rarest of all), in the question's
    order: what an abstention says it searched for, without "after", "up" or "long" taking the places of the
    words that mattered. Ranked by word, not term: an identifier yields several terms ("nw_http_healthz" ->
    nw, http, healthz, =nw_http_healthz) and would otherwise fill every place.

    Rarity is counted in the chunks the asker may read (`readable_df`, capped: words past the cap are equally
    common and keep the question's order). The index's own frequencies count every chunk, so which words were
    named could tell how often documents they cannot read use them.

    A word the spelling correction read as another is shown as typed with what it was read as ("recieve (read
    as receive)"); the correction is not listed as a word of its own, which the asker never typed, nor is the
    expansion of a synonym or an abbreviation. A correction is a term of chunks the asker may read
    (retrieval.search.correct_terms), so naming it tells them nothing of documents they cannot read. So is a
    word written out for shorthand the asker typed ("dflt (read as default)"; `clipped`).

    Args:
        question: the question as searched (the rewritten one for a follow-up).
        terms: its search terms and the spelling corrections retrieval made.
        readable_df: the readable chunks holding each search term, up to a cap (`_readable_df`); a term
            missing from it is held by none.
        clipped: each word written out for a clipping -> the clipping as typed (`AnswerState.clipped`).
    Returns:
        The words to name, in the question's order.
    """
    from retrieval.search import corrections_by_word

    typed = set(analyze(question))
    corrections = {term: read_as for term, read_as in terms.corrections.items() if term in terms.search}
    # the words the asker typed: not a correction the question does not also hold itself (searched for a word
    # of theirs), nor a synonym's or an abbreviation's expansion ("gw" is searched as "gateway" too)
    searched = [term for term in terms.search if term in typed]
    word_of = surface_word_of(question, searched)
    held: dict[str, float] = {}  # a word's rarest term: the fewest readable chunks that hold one of its terms
    for term, word in word_of.items():
        held[word] = min(held.get(word, math.inf), readable_df.get(term, 0))
    rarest = set(sorted(held, key=lambda word: held[word])[:SEARCHED_SHOWN])
    # each word with every correction made in it, an identifier's whole-name one first ("recieve_timout"
    # -> "receive_timeout"; "recieve-timout" -> "receive-timeout")
    made = corrections_by_word(word_of, corrections)
    shown = {word: f"{word} (read as {_read_as(word, pairs)})" for word, pairs in made.items()}
    typed_as = clipped or {}
    for word in held:
        if word.lower() in typed_as and word not in shown:
            shown[word] = f"{typed_as[word.lower()]} (read as {word})"
    return [shown.get(word, word) for word in held if word in rarest]


def _read_as(word: str, pairs: list[tuple[str, str]]) -> str:
    """The word as the corrections read it (`word_read_as`), with any correction not found in the word as typed
    listed after it."""
    from retrieval.search import word_read_as

    reading, unplaced = word_read_as(word, pairs)
    return ", ".join([reading] * (reading != word) + unplaced) or word


@dataclass(frozen=True)
class Decide:
    name: str = "decide"

    def run(self, state: AnswerState) -> AnswerState:
        terms = state.terms
        assert terms is not None, "retrieve runs first"
        if state.observe is not None:
            _observe(state)
        ok, why, selection = adequate(state, state.candidates, state.evidence)
        state = state.noted("adequacy", why)
        readable_df = _readable_df(state) if not ok else {}
        if not ok and not terms.unknown and len(state.sub_questions) <= 1 and not ablated("reformulate"):
            retried = _reformulated(state, readable_df)
            if retried is not None:
                state = retried
                ok, selection = True, state.selection
        if not ok:
            # the question's own words, not the analyser's stems ("configure", not "configur")
            searched = ", ".join(searched_words(state.rewritten, terms, readable_df, dict(state.clipped)))
            return state.abstained(
                f"{ABSTAIN_MESSAGE} I searched the documents you can access for: {searched}."
            )
        if selection is not None:
            state = replace(state, selection=selection, candidates=tuple(selection.ranked))
        if state.follow_up:
            state = follow_up_ordered(state)
        return state

    def describe(self, state: AnswerState) -> str:
        if state.verdict == "abstained":
            return "abstain"
        return state.selection.describe() if state.selection else "sufficient"


def follow_up_ordered(state: AnswerState) -> AnswerState:
    """A joined follow-up ("and the cmdport?") was searched, and judged answerable, as "<previous question>
    <follow-up>": the earlier question's words find the right documents. Its answer's sentences are ordered
    by what the follow-up itself asks: judged on the joined words, the sentence that answered the previous
    question matched best again and led the answer (hand-made follow-ups of train questions: the previous
    answer's sentence led 42 of 70 answers, 3-5 after; gold answer contained 29 -> 34).

    The same evidence pool's sentences are scored for the follow-up's own words and ranked by the trained
    sentence model when one is installed; whether to answer stays decided on the joined question. A follow-up
    that names nothing to judge a sentence by ("and why?") keeps the joined question's order."""
    assert state.terms is not None, "retrieve runs first"
    asked = state.asked or state.question
    if not query_terms(asked):
        return state
    own = pool_sentences(state, asked, state.evidence[: state.pool_size])
    if not own:
        return state
    answerer = get_answerer()
    if answerer is None or state.selection is None:
        return replace(state, candidates=tuple(own))
    ranked = rank(answerer, own, state.evidence, chunk_scores(state))[0]
    return replace(state, candidates=tuple(ranked), selection=replace(state.selection, ranked=ranked))


def facts(state: AnswerState, evidence: Sequence[Evidence]) -> QuestionFacts:
    assert state.terms is not None
    return QuestionFacts(
        unknown_terms=len(state.terms.unknown),
        pool_coverage=pool_coverage(state.terms.search, evidence[: state.pool_size], state.terms.idf),
        top_fused=state.hits[0].score if state.hits else 0.0,
        top_dense=max((h.scores.get("dense", 0.0) for h in state.hits), default=0.0),
        top_bm25=math.log1p(max((h.scores.get("bm25", 0.0) for h in state.hits), default=0.0)),
        wants_number=EXPECTS_NUMBER.search(state.rewritten) is not None,
        question_words=question_length(state.rewritten),
        multi_hop=state.hop == "multi_hop",
        unmatched_quoted=unmatched_quoted(state.rewritten, evidence[: state.pool_size]),
    )


# Words per word that carries a search term: at least this in 95 of 100 questions of the train split (its 5th
# percentile; median 1.68). A query typed as keywords has about one ("bgp keepalive default")
MIN_WORDS_PER_TERM_WORD = 1.33


def question_length(text: str) -> int:
    """The question's length in words as the abstention model reads it (its `question_words` fact): the words
    typed, but never fewer than MIN_WORDS_PER_TERM_WORD for each word that carries a search term.

    The model was fitted on questions written out in full, where the length corrects the coverage measures (a
    long question's terms are harder to cover all at once). A query typed as keywords says as much with its
    function words left out, and read by its bare word count it looked far less answerable than the same
    question written out (-1.8 logit for five words): 20 of 134 train questions typed as keywords were turned
    away that were answered written out. A question written out keeps its own count unless it has fewer function
    words than 95 of 100 train questions: no dev answer's verdict changed."""
    words = text.split()
    carrying = sum(1 for word in words if analyze(word))
    return max(len(words), math.ceil(MIN_WORDS_PER_TERM_WORD * carrying))


def unmatched_quoted(question: str, pool: Sequence[Evidence]) -> int:
    """How many of the identifiers and numbers the question quotes no evidence passage contains (as written,
    case aside, at token edges)."""
    quoted = dict.fromkeys([*identifiers(question), *(m.group(0) for m in NUMBER.finditer(question))])
    if not quoted:
        return 0
    # folded as the identifiers are ("Gerät-Prüfung" in a passage holds the identifier "gerat-prufung")
    text = match_form(" ".join(f"{item.title} {item.section} {item.text}" for item in pool))
    return sum(1 for value in quoted if not contains(text, value))


def chunk_scores(state: AnswerState) -> dict[int, dict[str, float]]:
    """Chunk id -> its per-source retrieval scores, for the hits of the first search and of a reformulation."""
    scores = {h.chunk_id: h.scores for result in state.results for h in result.hits}
    scores.update({h.chunk_id: h.scores for h in state.hits})
    return scores


def pool_coverage(terms: Sequence[str], pool: Sequence[Evidence], idf: dict[str, float]) -> float:
    """The idf-weighted share of the question's search terms that occur anywhere in the evidence pool (text,
    title or heading trail): a question about something the readable documents never mention leaves its
    distinctive terms uncovered even when its everyday words match well."""
    if not terms:
        return 0.0
    present: set[str] = set()
    for item in pool:
        present.update(analyze(f"{item.title} {item.section} {item.text}"))
    weights = {t: idf.get(t, 1.0) for t in terms}
    total = sum(weights.values()) or 1.0
    return sum(w for t, w in weights.items() if t in present) / total


def adequate(
    state: AnswerState, ranked: Sequence[ScoredSentence], evidence: Sequence[Evidence]
) -> tuple[bool, str, Selection | None]:
    """(answer?, why, the selector's ranking when a trained selector decided)."""
    answerer = None if ablated("selector") else get_answerer()
    if answerer is None:
        ok, why = adequate_by_rules(state, ranked)
        return ok, why, None
    chosen = select(
        answerer,
        ranked,
        evidence,
        facts(state, evidence),
        chunk_scores(state),
        unknown_terms_abstain=not ablated("unknown_terms"),
    )
    assert state.terms is not None
    if state.terms.unknown and not ablated(
        "unknown_terms"
    ):  # the selector abstains on these whatever its probability: say which term
        missing = ", ".join(_unknown_words(state))
        return False, f"term(s) not in the knowledge base: {missing}; {chosen.describe()}", chosen
    return chosen.answer, chosen.describe(), chosen


def _unknown_words(state: AnswerState) -> list[str]:
    assert state.terms is not None
    return surface_words(state.rewritten, state.terms.unknown)[:5]


def adequate_by_rules(state: AnswerState, ranked: Sequence[ScoredSentence]) -> tuple[bool, str]:
    """The hand-set adequacy rules, used when no trained answer selector is installed."""
    assert state.terms is not None
    if state.terms.unknown and not ablated("unknown_terms"):
        return False, f"term(s) not in the knowledge base: {', '.join(_unknown_words(state))}"
    if not ranked:
        return False, "no evidence"
    closest = sorted(ranked, key=lambda s: -s.support)[:4]  # the closest matches, before answer-shape bonuses
    best = closest[0]
    if best.coverage < MIN_COVERAGE or best.support < MIN_SENTENCE_SCORE:
        return False, f"best evidence too weak (coverage {best.coverage:.2f}, score {best.support:.2f})"
    if EXPECTS_NUMBER.search(state.question) and not any(HAS_NUMBER.search(s.text) for s in closest):
        # answer-type check: "how many / what port / how long" needs a quantity in the evidence
        return False, "the question asks for a quantity and no close evidence sentence states one"
    return True, f"sufficient (coverage {best.coverage:.2f}, score {best.support:.2f})"


# a word in more readable chunks than this is common; counting further would only order common words
READABLE_DF_CAP = 1000


def _readable_df(state: AnswerState) -> dict[str, int]:
    """The question's search terms with how many chunks the asker may read hold each, up to READABLE_DF_CAP:
    what ranks the words that the asker is shown (the reformulated query in the trace, the words an
    abstention names). A few milliseconds, only for a question whose first pool was not adequate."""
    from knowledge.index_selectors import terms_readable_df

    assert state.terms is not None
    return terms_readable_df(state.terms.search, state.principal, cap=READABLE_DF_CAP)


def _reformulated(state: AnswerState, readable_df: dict[str, int]) -> AnswerState | None:
    """One more search with the question's distinctive terms only (drops chatter that dilutes retrieval); the
    state with its evidence when that pool is adequate, else None. The terms are the six held by the fewest
    chunks the asker may read (`readable_df`; a term none of them holds last: it would find nothing), ties in
    the question's order."""
    import time

    from retrieval.search import search

    assert state.terms is not None
    rare = sorted(
        (t for t in state.terms.search if not t.startswith("=")),
        key=lambda t: readable_df.get(t) or math.inf,
    )[:6]
    identifiers = [t.lstrip("=") for t in state.terms.search if t.startswith("=")]
    reformulated = " ".join(dict.fromkeys([*identifiers, *rare]))
    if not reformulated or reformulated == state.rewritten:
        return None
    config = state.config or SearchConfig()
    started = time.perf_counter()
    again = search(reformulated, state.principal, state.filters, config)
    hits = merge_results([again, state.results[0]], config.final_k)
    evidence, ranked = evaluate_pool(state, hits)
    probe = replace(state, hits=tuple(hits), results=(*state.results, again))
    ok, why, selection = adequate(probe, ranked, evidence)
    state = state.noted("reformulate", f"retried as '{reformulated}'", (time.perf_counter() - started) * 1000)
    state = state.noted("adequacy", why)
    if not ok:
        return None
    return replace(
        state, hits=tuple(hits), evidence=tuple(evidence), candidates=tuple(ranked), selection=selection
    )


def _observe(state: AnswerState) -> None:
    """Store the selector's inputs for the first evidence pool (`train_answerer --collect` learns from them)."""
    assert state.observe is not None
    pool = list(state.candidates[:MAX_CANDIDATES])
    following = next_sentences(pool, state.evidence)
    state.observe.update(
        candidates=[s.text for s in pool],
        next_sentences=following,
        rows=sentence_features(pool, state.evidence, following, chunk_scores(state)).tolist(),
        facts=facts(state, state.evidence),
    )
