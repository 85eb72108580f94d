"""Per-chunk evaluation: the best hits' neighbouring chunks join the evidence after the hits (a value or a step
often spills over a chunk boundary), then every sentence of the first passages is scored for the question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agents.evidence import Evidence, ScoredSentence, score_sentences
from agents.steps.state import AnswerState, ablated
from retrieval.types import Hit

# Neighbour expansion for the best three hits
NEIGHBOURS_FOR = 3


@dataclass(frozen=True)
class EvaluateEvidence:
    name: str = "evaluate_chunks"

    def run(self, state: AnswerState) -> AnswerState:
        evidence, ranked = evaluate_pool(state, state.hits)
        return replace(state, evidence=tuple(evidence), candidates=tuple(ranked))

    def describe(self, state: AnswerState) -> str:
        return f"{len(state.candidates)} candidate sentence(s)"


def hit_evidence(hit: Hit) -> Evidence:
    return Evidence(
        hit.chunk_id, hit.source, hit.title, hit.section, hit.text, hit.score, frozenset(hit.code_lines)
    )


def evaluate_pool(state: AnswerState, hits: Sequence[Hit]) -> tuple[list[Evidence], list[ScoredSentence]]:
    """The evidence passages for `hits` (the hits in retrieval order, then the neighbouring chunks of the best
    ones, fetched through the ACL filter like everything else) and the sentences of the first `pool_size`
    passages scored for the question, best first.

    A neighbour never takes a hit's place among the passages read: put right after its hit, the neighbours of
    the best three filled half of the pool and pushed lower-ranked hits out of it (on the dev set's validation
    split EM .546 with them there, .583 with them after the hits; train .664 both). Past the pool they still
    let an answer read on into the next chunk (`continuations`)."""
    from retrieval.search import chunks_by_ids, neighbour_ids

    assert state.terms is not None, "retrieve runs first"
    top = list(hits[: 0 if ablated("neighbours") else NEIGHBOURS_FOR])
    links = neighbour_ids([h.chunk_id for h in top])
    wanted = [n for h in top for n in links.get(h.chunk_id, (None, None)) if n]
    neighbours = chunks_by_ids(wanted, state.principal)
    expanded: list[Evidence] = []
    seen: set[int] = set()
    for hit in hits:
        if hit.chunk_id not in seen:
            expanded.append(hit_evidence(hit))
            seen.add(hit.chunk_id)
    for hit in top:
        for n in links.get(hit.chunk_id, (None, None)):
            row = neighbours.get(n) if n else None
            if row is not None and row["chunk_id"] not in seen:
                expanded.append(
                    Evidence(
                        row["chunk_id"],
                        row["source"],
                        row["title"],
                        row["section"],
                        row["text"],
                        0.0,
                        frozenset(row["code_lines"] or ()),
                    )
                )
                seen.add(row["chunk_id"])
    return expanded, pool_sentences(state, state.rewritten, expanded[: state.pool_size])


def pool_sentences(
    state: AnswerState, question: str, pool: Sequence[Evidence], *, corrected: bool = True
) -> list[ScoredSentence]:
    """The sentences of `pool` scored for `question` (the whole question, a follow-up's own words or one part
    of it) by the hand-made score, with the run's cached passage vectors and the question embedded as meant.
    `corrected`: a misspelt term also matches the term retrieval read it as."""
    assert state.terms is not None, "retrieve runs first"
    return score_sentences(
        question,
        pool,
        embed=state.cache.embed_windows,
        pooled=state.cache.pooled(pool),
        query_vec=state.cache.query_vector(state.terms.meant(question)),
        idf=state.terms.idf,
        aliases=state.terms.corrections if corrected else None,
    )
