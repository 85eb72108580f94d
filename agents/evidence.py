"""Per-chunk evidence evaluation, extractive generation shaped by template, and attribution verification.
Pure functions over small dataclasses; the only model used (optionally) is the sentence embedder, passed in."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.layout import command_line, manual_command
from knowledge.text import (
    ATTACHED_VALUE,
    CAPTION,
    analyze,
    column_names,
    identifiers,
    is_caps_heading,
    match_form,
    query_terms,
    sentences,
    table_cells,
)
from knowledge.text import passage_sentences as sentences_below_title

if TYPE_CHECKING:
    from knowledge.embedders import SpanVectors

WORD = re.compile(r"[^\W\d_]{2}")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?:/\d+)?(?![\w])")
# a procedure's step: an item of a numbered list. A bulleted list (a passage's items start with "- ", see
# knowledge.chunking.ITEM_MARKER) is a set of things, not an order to do them in: a table of contents, the
# commands for each of several cases
STEP_LINE = re.compile(r"^\s*\d+[.)]\s+")
SUPPORT_THRESHOLD = 0.70  # answers whose supported-sentence share is below this are rejected (DESIGN §6)
# Answer types a question announces: a quantity, or the name of a thing (an option, command, setting ...).
EXPECTS_NUMBER = re.compile(
    r"\bhow (?:many|much|long|often|big|large)\b|\bwhat (?:port|number|size|percentage|timeout|interval)\b",
    re.IGNORECASE,
)
HAS_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|single|twice|once)\b",
    re.IGNORECASE,
)
# A sentence that opens with a pronoun or demonstrative continues the one before it ("Effectively, this is the
# same as a full restart": "this" is the previous sentence's subject).
ANAPHOR = re.compile(
    r"^(?:(?:effectively|therefore|thus|hence|so|also|however|otherwise|in (?:this|that) case|by design),?\s+)?"
    r"(?:this|that|these|those|it|its|they|their|such|the latter|the former)\b",
    re.IGNORECASE,
)
# A sentence that names its subject only as "this option" (a manual's entry text: "--notify-peers n
# Send a parting notice ... In edge mode, this option will ask the hub ...") refers to the entry
# named in the sentence before it.
NAMED_BACK = re.compile(
    r"\b(?:this|the above|said)\s+(?:option|command|directive|setting|parameter|flag|keyword|statement|switch)\b",
    re.IGNORECASE,
)


def _names_back(sentence: str) -> bool:
    """Prose that calls its subject "this option" ("In client mode, this option ..."); an entry line that
    starts with its own term ("listen-port port This option specifies ...") names it already."""
    return sentence[:1].isupper() and NAMED_BACK.search(sentence) is not None


# A reference entry, the answer shape of "which option / directive / command ..." (its name is what is asked):
# an option line with its description ("-q, --quiet Print nothing but errors"), a "term - description"
# item ("discard - the packet is dropped ..."), or a description right below its short term line
# ("resync threshold limit" / "This directive makes the daemon step ...").
ENTRY_OPTION = re.compile(
    r"-{1,2}[A-Za-z][\w-]*(?:[ =][<\[]?[\w|.,-]+[>\]]?)?(?:,\s*-{1,2}[A-Za-z][\w-]*(?:[ =]\S+)?)*\s+[A-Z]"
)
ENTRY_ITEM = re.compile(r"[a-z][\w-]* - [a-z]")
ENTRY_TERM_LINE = re.compile(r"[a-z][\w-]*(?: [\w<>\[\]|.-]+){0,4}")
# An item of a list of named entries: "discard - the packet is dropped ...", "SYNC_STATE -- (Client only) ...".
# The sentence that introduces the list names what the entries are (states, rule types); an option list is left
# out (an option list's lead-in describes the command, not each option).
LIST_ENTRY = re.compile(r"[a-z][\w-]* - [a-z]|[A-Z][A-Z0-9_]{2,} -{1,2} \S")
ENTRY_BONUS = 0.15  # hand-set; the learned selector reads the entry signal itself (agents/answerer.py)


def is_entry(sentence: str, before: str) -> bool:
    """Is `sentence` (preceded by `before` in its passage) the description of a reference entry?"""
    if ENTRY_OPTION.match(sentence) or ENTRY_ITEM.match(sentence):
        return True
    return sentence[:1].isupper() and bool(before) and ENTRY_TERM_LINE.fullmatch(before) is not None


# "what is the default ...", "... by default": the answer states a default
DEFAULT = re.compile(r"\bdefault(?:s|ed)?\b", re.IGNORECASE)
# "which option / command ...", and "which kind / type of rule ...": the answer is a name
EXPECTS_NAME = re.compile(
    r"\b(?:which|what)\s+(?:\w+[\s-]+){0,3}?(?:flag|option|setting|directive|command|parameter|statement|"
    r"module|keyword|state|variable|property|file|directory|unit|signal|template|action|kind|type)s?\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Evidence:
    """One retrieved chunk as the answering pipeline sees it (ref = its [n] number in the answer)."""

    chunk_id: int
    source: str
    title: str
    section: str
    text: str
    score: float
    # the passage's lines that its format marks as code (`Hit.code_lines`): shown as code whatever they read as
    code_lines: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ScoredSentence:
    text: str
    evidence_index: int
    score: float
    coverage: float
    dense: float
    position: int
    support: float = 0.0  # the score before the answer-shape adjustments: how well the evidence matches
    # the measurements the score was made of, named by SIGNALS: the learned answer selector reads them
    signals: tuple[float, ...] = ()


# What `score_sentences` measures about each sentence (ScoredSentence.signals, in this order).
SIGNALS = (
    "own_coverage",  # idf-weighted share of the question's terms in the sentence itself
    "context_coverage",  # ... in the sentence with its heading trail and the sentence before it
    "heading_coverage",  # ... in the passage's heading trail alone
    "title_coverage",  # ... in its document's title
    "quoted",  # share of the question's identifiers and numbers the sentence repeats
    "entry",  # the description of a reference entry (an option line, a 'term - description' item)
    "new_tokens",  # values, identifiers or commands the question lacks
    "name_fit",  # the question asks for a name and the sentence brings a new non-numeric token
    "number_fit",  # the question asks for a quantity and the sentence states one
    "default_fit",  # the question asks for a default and the sentence speaks of one
    "question_mark",  # the sentence is a question (a FAQ heading)
    "lead_in",  # the sentence ends with ':' (introduces what follows)
    "words",  # length in words
    "comment",  # a configuration example's comment above a setting
    "step",  # one of its passage's list steps
)


@dataclass
class Draft:
    """A generated answer: sentences, each citing one evidence index."""

    template: str
    sentences: list[tuple[str, int]]  # (sentence, evidence index)
    preface: str = ""
    notes: list[str] = field(default_factory=list)
    named: int | None = None  # the evidence index whose passage the preface names
    lead: int = (
        1  # the first sentences that make the answer's lead unit (the selected sentence and its context)
    )
    # per sentence, its claim on the word budget (lower first; empty: the order given). The shaper keeps the
    # sentences that fit by this order and shows them in the order above
    priority: tuple[int, ...] = ()


@dataclass(frozen=True)
class SentenceCheck:
    sentence: str
    evidence_index: int
    supported: bool
    span: str
    overlap: float
    missing_tokens: tuple[str, ...]


@dataclass(frozen=True)
class Attribution:
    score: float
    checks: tuple[SentenceCheck, ...]

    @property
    def passed(self) -> bool:
        return self.score >= SUPPORT_THRESHOLD and bool(self.checks)


def _words(text: str) -> list[str]:
    return [t for t in analyze(text) if not t.startswith("=")]


@lru_cache(maxsize=512)
def _split(text: str) -> tuple[str, ...]:
    """The sentences of one passage, split once per answer: scoring, composing and verifying all read them."""
    return tuple(sentences(text))


def _continuation(
    index: int, evidence: Sequence[Evidence], continued_in: Mapping[int, int] | None
) -> int | None:
    """The evidence index of the passage that goes on with passage `index`: the next chunk of its document, when
    retrieval brought it and it does not open a section of its own (its first line is the heading its trail
    ends with: it does not go on with what the chunk before it was saying)."""
    following = (continued_in or {}).get(index)
    if following is None:
        return None
    item = evidence[following]
    first = item.text.lstrip("\n").partition("\n")[0].strip()
    return None if first and first == item.section.rpartition(" > ")[2].strip() else following


def _position(pick: ScoredSentence, parts: Sequence[str]) -> int | None:
    """Where `pick` sits among its passage's sentences: its recorded position when that still holds it (a
    sentence repeated in a passage is never confused), else its first occurrence."""
    if pick.position < len(parts) and parts[pick.position] == pick.text:
        return pick.position
    return parts.index(pick.text) if pick.text in parts else None


def passage_sentences(item: Evidence) -> tuple[str, ...]:
    """The answer sentences of one evidence passage, as scoring and composing read them."""
    return _passage(item)


def _passage(item: Evidence) -> tuple[str, ...]:
    """The answer sentences of one evidence passage (see `knowledge.text.passage_sentences`)."""
    return sentences_below_title(item.text, item.title)


def window_vector(pooled: SpanVectors | None, at: Sequence[int]) -> np.ndarray | None:
    """The unit vector of a window of a passage's sentences, pooled from their stored token means weighted by
    token count (the mean over the window's tokens, as the model pools a whole text), or None when the passage
    has no stored vectors or the sentence itself lay beyond the model window. A context sentence beyond the
    window is left out."""
    if pooled is None or not at or at[-1] >= len(pooled.tokens) or pooled.tokens[at[-1]] == 0:
        return None
    inside = [p for p in at if 0 <= p < len(pooled.tokens)]
    weights = pooled.tokens[inside].astype(np.float32)
    summed = weights @ pooled.means[inside]
    norm = float(np.linalg.norm(summed))
    return summed / norm if norm else None


def _header_row_at(parts: Sequence[str], position: int, passage: str) -> int | None:
    """Where in `parts` the header row of the table row at `position` stands, when it is a body row of a table
    with a header in `passage` (`knowledge.text.column_names`); None otherwise."""
    row = parts[position]
    if " | " not in row:
        return None
    names = column_names(row, passage)
    if not names:
        return None
    return next((at for at in range(position - 1, -1, -1) if table_cells(parts[at]) == names), None)


def score_sentences(
    question: str,
    evidence: Sequence[Evidence],
    *,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    query_vec: np.ndarray | None = None,
    idf: dict[str, float] | None = None,
    max_sentences: int = 60,
    embed_top: int = 24,
    aliases: dict[str, str] | None = None,
    pooled: Sequence[SpanVectors | None] | None = None,
) -> list[ScoredSentence]:
    """Score every sentence of the evidence chunks for how well it answers the question.

    Args:
        question: the (rewritten) question.
        evidence: chunks in retrieval order.
        embed/query_vec: optional sentence embedder and question vector for semantic similarity.
        idf: corpus idf per BM25 term (rare terms matter more); defaults to 1.
        aliases: question term -> another term that counts as it (a misspelt name's correction).
        pooled: per evidence passage, its sentences' vectors stored at ingestion (aligned with the passage's
            sentences), or None for a passage without them; a window is then embedded with `embed`.
    Returns:
        sentences sorted best first.
    """
    q_terms = query_terms(question)
    weights = {t: (idf or {}).get(t, 1.0) for t in q_terms}
    total = sum(weights.values()) or 1.0
    # "-N1" in the question is matched by the manual's bare "-N" (as retrieval expands it)
    alternatives = {t: f"={m.group(1)}" for t in q_terms if (m := ATTACHED_VALUE.fullmatch(t))} | (
        aliases or {}
    )

    def covered(terms: set[str]) -> float:
        return sum(w for t, w in weights.items() if t in terms or alternatives.get(t) in terms) / total

    # identifiers and numbers the question quotes ("max_retries", "120"): a sentence repeating them is on topic
    q_ids = {i.lower() for i in identifiers(question)}
    q_numbers = {m.group(0) for m in NUMBER.finditer(question)} - q_ids
    # (sentence, evidence index, position in its passage, its context: the sentence before it, and for a
    # comment in a configuration file also the line after it; is it a reference entry's description; the
    # positions of its context sentences; a table row's header row, "" for any other sentence)
    candidates: list[tuple[str, int, int, str, bool, tuple[int, ...], str]] = []
    headings = [
        set(analyze(item.section)) for item in evidence
    ]  # each passage's heading trail, analysed once
    titles = [set(analyze(item.title)) for item in evidence]
    for index, item in enumerate(evidence):
        parts = _passage(item)
        comments = comment_lines(item.text)
        lead_in: int | None = None  # the sentence that introduces the run of list entries being read
        for position, sentence in enumerate(parts):
            is_item = LIST_ENTRY.match(sentence) is not None
            if not is_item:
                lead_in = None
            elif lead_in is None:
                lead_in = position - 1
            if 3 <= len(sentence.split()) <= 90 and not CAPTION.match(sentence):  # (a caption: no answer)
                context = previous = parts[position - 1] if position else ""
                around_at = [position - 1] if position else []  # where its context sentences sit
                if is_item and lead_in is not None and max(0, position - 29) <= lead_in < position - 1:
                    # an item of a list of entries ("SYNC_STATE -- Synchronising the state table"): the
                    # sentence that introduces the list ("These are the session states: ...") is its context too
                    context = f"{parts[lead_in]} {context}"
                    around_at.insert(0, lead_in)
                header_at = _header_row_at(parts, position, item.text)
                header = parts[header_at] if header_at is not None else ""
                if header_at is not None and header_at < position - 1:
                    # a table row's header names what its cells are ("Vendor | Contract number" above "Palo
                    # Alto | PAN-PREM-3391"): it is the row's context too
                    context = f"{header} {context}"
                    around_at.insert(0, header_at)
                entry = is_entry(sentence, previous)
                if sentence in comments and position + 1 < len(parts):
                    context += " " + parts[position + 1]
                    around_at.append(position + 1)
                candidates.append((sentence, index, position, context, entry, tuple(around_at), header))
    candidates = candidates[: max_sentences * 3]
    scored: list[list[Any]] = []
    for sentence, index, position, context, entry, context_at, header in candidates:
        # a table row says what its header names, as the answer shows it ("Contract number: PAN-PREM-3391")
        terms = set(analyze(sentence)) | set(analyze(header))
        own = covered(terms)
        # context: the chunk's heading trail and the previous sentence. An answer sentence often leaves
        # the subject implicit ("The default is 10.") because the sentence before names it; a comment in a
        # configuration file ("# Only the leading eight (8) letters are checked.") describes the line below.
        around = terms | headings[index] | set(analyze(context))
        in_context = covered(around)
        coverage = 0.6 * own + 0.4 * in_context
        ident = quoted_share(q_ids, q_numbers, sentence)
        rank_prior = 1.0 / (1.0 + 0.15 * index)
        with_context = bool(context) and len(context.split()) <= 40
        window = f"{context} {sentence}" if with_context else sentence
        window_at = (*context_at, position) if with_context else (position,)
        measured = (own, in_context, covered(headings[index]), covered(titles[index]))
        scored.append(
            [sentence, index, position, coverage, ident, rank_prior, 0.0, window, entry, measured, window_at]
        )
    scored.sort(key=lambda row: -(row[3] + 0.3 * row[4]) * row[5])
    scored = scored[:max_sentences]
    if query_vec is not None and scored:
        # the lexically best sentences are compared with the question, each with its context: by the sentence
        # vectors pooled from the passage's own embedding at ingestion (`pooled`), else by embedding the window
        # (cut to its last 64 words) now, the cost of this step
        # stored vectors cost nothing to compare, so every candidate gets its similarity; a window embedded now
        # costs a model pass, so only the lexically best `embed_top` are
        head = scored if pooled is not None else scored[:embed_top]
        vectors: list[np.ndarray | None] = [
            window_vector(pooled[row[1]], row[10]) if pooled is not None else None for row in head
        ]
        missing = [number for number, vector in enumerate(vectors) if vector is None and number < embed_top]
        if missing and embed is not None:
            embedded = embed([" ".join(str(head[n][7]).split()[-64:]) for n in missing])
            for number, vector in zip(missing, embedded, strict=True):
                vectors[number] = vector
        for row, vector in zip(head, vectors, strict=True):
            if vector is not None:
                row[6] = float(vector @ query_vec)
    q_tokens = _critical_tokens(question)
    wants_name, wants_number = bool(EXPECTS_NAME.search(question)), bool(EXPECTS_NUMBER.search(question))
    wants_default = bool(DEFAULT.search(question))
    results = []
    steps_of = [frozenset(_steps(item.text)) for item in evidence]
    for sentence, index, position, coverage, ident, prior, dense, _window, entry, measured, _at in scored:
        support = score = (0.55 * coverage + 0.35 * max(0.0, dense) + 0.10 * ident) * (0.7 + 0.3 * prior)
        new = _critical_tokens(sentence) - q_tokens  # values, identifiers, commands the question lacks
        asks_question = sentence.rstrip().endswith("?")
        name_fit = wants_name and any(not NUMBER.fullmatch(t) for t in new)
        number_fit = wants_number and HAS_NUMBER.search(sentence) is not None
        default_fit = wants_default and DEFAULT.search(sentence) is not None
        if asks_question:
            score *= 0.75  # a FAQ heading restates the question; its answer comes after it
        else:
            score += 0.03 * bool(new) + 0.06 * name_fit + ENTRY_BONUS * (wants_name and entry)
            # the answer type the question announces: a name (which option / command ...) or a quantity
            score += 0.06 * number_fit + 0.06 * default_fit
        signals = (
            *measured,
            ident,
            float(entry),
            float(bool(new)),
            float(name_fit),
            float(number_fit),
            float(default_fit),
            float(asks_question),
            float(sentence.rstrip().endswith(":")),
            float(len(sentence.split())),
            float(sentence in comment_lines(evidence[index].text)),
            float(any(sentence in step for step in steps_of[index])),
        )
        results.append(ScoredSentence(sentence, index, score, coverage, dense, position, support, signals))
    results.sort(key=lambda s: (-s.score, s.evidence_index, s.position))
    return results


def quoted_share(q_ids: set[str], q_numbers: set[str], sentence: str) -> float:
    """The share of the question's identifiers and numbers that `sentence` repeats (numbers whole: 3 is not 30)."""
    if not q_ids and not q_numbers:
        return 0.0
    # match_form: the identifiers are folded as the analyser folds them (lower case for ASCII text)
    quoted = sum(1 for i in q_ids if i in match_form(sentence))
    quoted += len(q_numbers & {m.group(0) for m in NUMBER.finditer(sentence)})
    return quoted / (len(q_ids) + len(q_numbers))


@lru_cache(maxsize=512)
def comment_lines(text: str) -> frozenset[str]:
    """The '#' comment lines of a configuration example that sit right above a setting, as the sentence splitter
    returns them. A Markdown heading looks the same but is followed by a blank line or by a prose sentence."""
    return frozenset(
        " ".join(m.group(1).split())
        # the next line is a setting, not a prose sentence (a heading's first paragraph ends in . ! ? or :)
        for m in re.finditer(
            r"^[ \t]*#+[ \t]*(\S.*)\n(?=[ \t]*[^#\s][^\n]*(?<![.!?:])[ \t]*$)", text, re.MULTILINE
        )
    )


COMMENT = re.compile(r"^[ \t]*#+[ \t]?(.*)$")


@lru_cache(maxsize=512)
def _comment_subjects(text: str, title: str) -> dict[str, str]:
    """A configuration example's '#' comment block describes the setting line right below it (a blank line may
    sit between): "# Use this to bound the retry delay ..." is about "! retry_delay 5 30".
    Returns each sentence of such a block, as the passage's sentences are read (`_passage`), with that line."""
    parts = sentences_below_title(text, title)
    lines = text.splitlines()
    subjects: dict[str, str] = {}
    block: list[str] = []
    for number, line in enumerate(lines):
        comment = COMMENT.match(line)
        if comment:
            block.append(comment.group(1))
            continue
        if not line.strip() and block and number + 1 < len(lines) and not COMMENT.match(lines[number + 1]):
            continue  # one blank line between a block and its setting
        setting = " ".join(line.split())
        words = setting.split()
        if block and 1 <= len(words) <= 8 and not setting.endswith((".", ":", "?")) and setting in parts:
            described = " ".join(" ".join(block).split())
            for part in parts:
                if part != setting and len(part.split()) >= 3 and part in described:
                    subjects.setdefault(part, setting)
        block = []
    return subjects


def _steps(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    return [STEP_LINE.sub("", line) for line in lines if STEP_LINE.match(line)]


def _list_goes_on(text: str, following: str) -> list[str]:
    """The steps that continue `text`'s list in the next chunk `following`: the list must run to the end of
    `text` and go on at the start of `following` (after the lines the two chunks share)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not STEP_LINE.match(lines[-1]):
        return []
    shared = set(lines)
    rest = [line.strip() for line in following.splitlines() if line.strip() and line.strip() not in shared]
    steps: list[str] = []
    for line in rest:
        if not STEP_LINE.match(line):
            break
        steps.append(STEP_LINE.sub("", line))
    return steps


# a procedure's step scoring this share of the best sentence's score still makes the answer its steps
CLOSE_TO_BEST = 0.8


# how many of a list's most probable steps add up against the best sentence (all of them would favour a
# long list: a dozen bullets at .035 each outweigh a right answer at .40)
BULK_STEPS = 3


def _steps_in_bulk(ranked: Sequence[ScoredSentence], evidence: Sequence[Evidence]) -> list[ScoredSentence]:
    """The most probable step of the passage (in the best sentence's document) whose BULK_STEPS most probable
    list steps are together at least as probable as the best sentence: the answer is probably somewhere in
    that procedure, although each of its steps alone ranks below a sentence of the introduction ("Only one
    router is upgraded per window"). A passage's steps are its numbered and bulleted lines (`_steps`)."""
    best = ranked[0]
    source = evidence[best.evidence_index].source
    steps_of = {
        index: _steps(item.text) for index, item in enumerate(evidence) if item.source == source
    }  # each passage's lines read once, not once per candidate
    bulk: dict[int, list[ScoredSentence]] = {}
    for candidate in ranked:  # most probable first, so each passage's list keeps that order
        steps = steps_of.get(candidate.evidence_index, [])
        if any(candidate.text in step for step in steps):
            bulk.setdefault(candidate.evidence_index, []).append(candidate)
    weights = {index: sum(step.score for step in steps[:BULK_STEPS]) for index, steps in bulk.items()}
    heaviest = max(weights, key=lambda index: weights[index], default=None)
    return bulk[heaviest][:1] if heaviest is not None and weights[heaviest] >= best.score else []


def compose_extractive(
    template: str,
    question: str,
    ranked: Sequence[ScoredSentence],
    evidence: Sequence[Evidence],
    *,
    max_sentences: int = 3,
    hop: str = "single_hop",
    pinned: Sequence[ScoredSentence] = (),
    continued_in: Mapping[int, int] | None = None,
    close_to_best: float = CLOSE_TO_BEST,
) -> Draft:
    """Build an answer from verbatim evidence sentences, shaped by the template.

    `continued_in` maps an evidence index to the index of the passage that continues it in its document (the
    next chunk, when retrieval brought it too): reading on after a sentence goes on across the chunk boundary.
    `close_to_best`: for a procedure, the share of the best sentence's score one of the next two must reach for
    its list of steps to make the answer (0 when `ranked` is the trained selector's order: its probabilities
    are not on the hand-made score's scale, and its top three are all plausible answers; its probabilities
    then also add up over a list's steps, see `_steps_in_bulk`).
    """
    if not ranked:
        return Draft(template, [])
    best = ranked[0]
    chosen: list[tuple[str, int]] = []
    if template == "procedure_sop":
        # a passage's list of steps is the answer when one of the best sentences is one of its steps (a step may
        # hold several sentences) or introduces the list; not only the very best one: a "how do I" question is
        # answered by the procedure even when a line above it ("The approved target release is ...") matches
        # the question a little better. Only the best sentence's document: another document's list (a policy
        # whose step mentions the same device) must not replace the answer the best sentence gives
        bulk = _steps_in_bulk(ranked, evidence) if close_to_best == 0.0 else []
        for pick in [*bulk, *ranked[:3]]:
            if pick.score < best.score * close_to_best:
                break
            if evidence[pick.evidence_index].source != evidence[best.evidence_index].source:
                continue
            passage = evidence[pick.evidence_index].text
            steps = _steps(passage)
            introduces = (
                pick.text.rstrip().endswith(":")
                and _next_sentence(evidence[pick.evidence_index], pick.text) in steps
            )
            if len(steps) >= 2 and (any(pick.text in step for step in steps) or introduces):
                chosen = [(step, pick.evidence_index) for step in steps]
                successor = _continuation(pick.evidence_index, evidence, continued_in)
                if successor is not None:
                    chosen += [(step, successor) for step in _list_goes_on(passage, evidence[successor].text)]
                return Draft(template, chosen[:10], preface="Steps:")
    if template == "comparison_decision":
        per_doc: dict[str, ScoredSentence] = {}
        for sentence in ranked:
            per_doc.setdefault(evidence[sentence.evidence_index].source, sentence)
        picks = list(per_doc.values())[:3]
        picks += [p for p in pinned if p.text not in {s.text for s in picks}]
        chosen = [(s.text, s.evidence_index) for s in picks]
        if hop == "multi_hop":
            # a chained question's answer often sits right after the bridging fact: keep the next sentence
            following = _next_sentence(evidence[picks[0].evidence_index], picks[0].text)
            if following and len(following.split()) <= 40:
                chosen.insert(1, (following, picks[0].evidence_index))
        return Draft(template, chosen)
    # Answer units: a chosen sentence plus what follows it in its passage. The value or the reason is often
    # in the sentence AFTER the one that matches the question best ("listen-port port: This directive sets
    # the relay port ... The default is 7000."), and a line ending in ':' or '?' introduces its answer.
    limit = 5 if template == "parameter_lookup" else max_sentences + 4
    wants_name = EXPECTS_NAME.search(question) is not None
    floor = best.score * 0.7
    seen: set[str] = set()

    def add_unit(pick: ScoredSentence, allow_lead_in: bool, room: int) -> None:
        """Add `pick` with what it needs around it; reading on stops once the answer holds `room` sentences.
        Neighbours are found by position in the passage, so a sentence repeated in it is never confused."""
        parts = _passage(evidence[pick.evidence_index])
        here = _position(pick, parts)

        def add(sentence: str, index: int = pick.evidence_index) -> None:
            chosen.append((sentence, index))
            seen.add(sentence.lower())

        before: list[str] = []
        if here is not None:
            if allow_lead_in and here > 0:
                # a definition list entry ("resync threshold limit" then its description): the term line
                # names the thing the question asks for, so it leads the answer
                lead_in = parts[here - 1]
                if len(lead_in.split()) <= 6 and not lead_in.rstrip().endswith((".", ":", "?")):
                    before.append(lead_in)
            # "Effectively, this is ...": the sentences before say what "this" is (at most two steps back)
            at = here
            while (
                at > 0
                and here - at < 2
                and (ANAPHOR.match(parts[at]) or _names_back(parts[at]))
                and len(parts[at - 1].split()) <= 40
            ):
                at -= 1
            before = list(dict.fromkeys([*parts[at:here], *before])) if at < here else before
            # a setting line of a configuration example ("max_retries 5 }") is explained by the comment
            # right above it ("# Only the leading eight (8) letters are checked.")
            comments = comment_lines(evidence[pick.evidence_index].text)
            if not before and here > 0 and parts[here - 1] in comments and pick.text not in comments:
                before.append(parts[here - 1])
        for sentence in before:
            if sentence.lower() not in seen and sentence != pick.text:
                add(sentence)
        if pick.text.lower() not in seen:
            add(pick.text)
        if here is None:
            return
        # what follows the pick: the rest of its passage, then the passage that continues it (without the
        # sentences the two chunks share: consecutive chunks overlap)
        reading = [(sentence, pick.evidence_index) for sentence in parts]
        successor = _continuation(pick.evidence_index, evidence, continued_in)
        if successor is not None:
            shared = set(parts)
            reading += [
                (sentence, successor) for sentence in _passage(evidence[successor]) if sentence not in shared
            ]
        at, taken = here, 0
        while taken < 3 and len(chosen) < room and at + 1 < len(reading):
            current, (following, where) = reading[at][0], reading[at + 1]
            if len(following.split()) > 40 or following.lower() in seen:
                break
            if not WORD.search(following):
                break  # a fragment with no word ("?", "2.15." of a table of contents) is not an answer sentence
            add(following, where)
            if not current.rstrip().endswith(":"):
                taken += 1  # what a lead-in introduces comes with it, whatever the count so far
            # keep going after or into a lead-in ("... by running these lines (as root):"), after a short
            # sentence, or into a sentence that continues this one ("It is a ring buffer which ...")
            after = reading[at + 2][0] if at + 2 < len(reading) else None
            if not (
                current.rstrip().endswith((":", "?"))
                or following.rstrip().endswith(":")
                or len(following.split()) <= 12
                or (after is not None and ANAPHOR.match(after))
            ):
                break
            at += 1
        # the setting a comment describes, when the comment calls it "this option" or the question asks for a name
        if wants_name or NAMED_BACK.search(pick.text):
            item = evidence[pick.evidence_index]
            subject = _comment_subjects(item.text, item.title).get(pick.text)
            if subject is not None and subject.lower() not in seen:
                add(subject)

    # the next best sentences, then the top-ranked passage's own best sentence (retrieval rank is the
    # strongest single signal we have), then close runners-up while there is room. The first ones keep a
    # place of their own: reading on after a sentence never crowds them out.
    top_best = next((s for s in ranked if s.evidence_index == 0), None)
    close = [s for s in ranked[1:3] if s.score >= best.score * 0.6]
    if top_best is not None and top_best.score >= best.score * 0.6:
        close.append(top_best)
    # each sub-question's best sentence comes right after the best one: a chained question's answer needs them
    close = [*pinned, *close]
    unique: dict[str, ScoredSentence] = {}
    for sentence in close:
        unique.setdefault(sentence.text.lower(), sentence)
    unique.pop(best.text.lower(), None)
    close = list(unique.values())
    reserved = len({s.text.lower() for s in close})
    add_unit(best, allow_lead_in=True, room=limit - reserved)
    if template == "parameter_lookup":
        _value_first(question, chosen)
    lead = len(chosen)
    for position, sentence in enumerate(close + [s for s in ranked[3:] if s.score >= floor]):
        if len(chosen) >= limit:
            break
        if sentence.text.lower() not in seen:
            later = {s.text.lower() for s in close[position + 1 :]} - seen
            add_unit(sentence, allow_lead_in=False, room=limit - len(later))
    name = source_name(evidence[best.evidence_index])
    if not name:
        return Draft(template, chosen, lead=lead)
    return Draft(template, chosen, preface=f"From {name}:", named=best.evidence_index, lead=lead)


def source_name(item: Evidence) -> str:
    """How an answer names a passage: its document's title and, where it adds something, its section."""
    name = item.title or item.source
    if item.section and not item.section.startswith(name[:20]):
        name = f"{name} > {item.section}"
    return name


def _value_first(question: str, unit: list[tuple[str, int]]) -> None:
    """Parameter lookups answer with the value first: within the first answer unit, move the first sentence that
    states a value the question lacks (and a default or a quantity when the question asks for one) to the
    front. "listen-port port This option sets the relay port ... The default is 7000." becomes "The default
    is 7000. listen-port port This option ...". A lead-in right above that sentence moves with it. Every
    sentence stays verbatim and keeps its citation."""
    asked = _critical_tokens(question)
    wants_default, wants_number = bool(DEFAULT.search(question)), bool(EXPECTS_NUMBER.search(question))

    def states_value(sentence: str) -> bool:
        # a sentence that refers back ("It defaults to 7000.") would lose what it refers to at the front
        if sentence.rstrip().endswith(("?", ":")) or ANAPHOR.match(sentence):
            return False
        if not (_critical_tokens(sentence) - asked):
            return False
        if wants_default and not DEFAULT.search(sentence):
            return False
        return not wants_number or bool(HAS_NUMBER.search(sentence))

    if not unit or states_value(unit[0][0]):
        return
    for position, (sentence, _) in enumerate(unit[1:], start=1):
        if states_value(sentence):
            # a lead-in right above it ("To make it permanent:" above a command) goes with it
            start = position - 1 if unit[position - 1][0].rstrip().endswith(":") else position
            unit[:] = unit[start : position + 1] + unit[:start] + unit[position + 1 :]
            return


def _next_sentence(item: Evidence, sentence: str) -> str | None:
    parts = _passage(item)
    for i, part in enumerate(parts[:-1]):
        if part == sentence:
            return parts[i + 1]
    return None


def _critical_tokens(sentence: str) -> set[str]:
    """Numbers, identifiers, commands and paths: each must appear verbatim in the supporting span."""
    tokens = {m.group(0) for m in NUMBER.finditer(sentence)}
    tokens |= set(identifiers(sentence))
    tokens |= {m.group(1) for m in re.finditer(r"`([^`]{1,80})`", sentence)}
    return {t.lower() for t in tokens if t.strip()}


def verify_sentence(sentence: str, span_source: str) -> SentenceCheck:
    """Find the best supporting span in `span_source` for `sentence` and label it supported or not."""
    spans = _split(span_source) or (span_source,)
    words = set(_words(sentence))
    best_span = ""
    best_overlap = 0.0
    for span in spans:
        span_words = set(_words(span))
        overlap = len(words & span_words) / len(words) if words else 0.0
        if overlap > best_overlap:
            best_overlap, best_span = overlap, span
    # a span may continue into the next sentence: also check the whole source for critical tokens
    # (identifiers are compared as the analyser normalises them too: "RFC 5798" in the source is "rfc5798")
    haystack = span_source.lower()
    missing = tuple(sorted(t for t in _critical_tokens(sentence) if t not in haystack))
    if missing:
        normalised = _source_tokens(span_source)
        missing = tuple(t for t in missing if t not in normalised)
    supported = best_overlap >= 0.6 and not missing
    return SentenceCheck(sentence, -1, supported, best_span, round(best_overlap, 3), missing)


@lru_cache(maxsize=256)
def _source_tokens(text: str) -> frozenset[str]:
    return frozenset(_critical_tokens(text))


def verify(draft: Draft, evidence: Sequence[Evidence]) -> Attribution:
    """Check every answer sentence against the evidence chunk it cites."""
    checks = []
    for sentence, index in draft.sentences:
        if not 0 <= index < len(evidence):
            checks.append(SentenceCheck(sentence, index, False, "", 0.0, ("<no such citation>",)))
            continue
        check = verify_sentence(sentence, evidence[index].text)
        checks.append(
            SentenceCheck(sentence, index, check.supported, check.span, check.overlap, check.missing_tokens)
        )
    score = sum(1 for c in checks if c.supported) / len(checks) if checks else 0.0
    return Attribution(round(score, 3), tuple(checks))


def _with_lead_in(parts: Sequence[str], first: int, item: Evidence) -> list[str]:
    """The lead-in ending in ':' right above a command that stands on a line of its own ("... create it with
    these commands:" above "mkdir /run/relay"), as what that command needs before it; [] otherwise."""
    if first <= 0 or not parts[first - 1].rstrip().endswith(":"):
        return []
    if not command_line(parts[first], item.text, manual_command(item.title), item.code_lines):
        return []
    return [parts[first - 1]]


# the word budget goes to the probable sentences first (each with what it needs before it), then to the
# sentences that follow them
PICK_CLAIM = 10
FOLLOWING_CLAIM = 1000


def compose_ranked(
    template: str,
    question: str,
    ranked: Sequence[ScoredSentence],
    evidence: Sequence[Evidence],
    *,
    units: int = 3,
    protect: int = 1,
    continued_in: Mapping[int, int] | None = None,
) -> Draft:
    """An answer from the selector's most probable sentences, each as a unit: the sentence, what it needs
    before it (the sentence it refers back to, a definition entry's term line, the comment above a setting,
    the lead-in above a command)
    and the sentence after it (a value or a reason often follows the sentence that matches the question best).
    The first unit is the answer's lead; the shaper keeps it whole and fits the rest into the word budget.

    Args:
        template: the answer template (procedures and comparisons use `compose_extractive`).
        question: the (rewritten) question.
        ranked: candidates, most probable answer first.
        evidence: the passages the candidates index.
        units: how many of the most probable sentences make units.
        protect: how many of the first units the shaper must keep whole (the lead, and each sub-question's
            best sentence when `ranked` puts them right after it).
        continued_in: evidence index -> the passage that continues it in its document.
    Returns:
        a Draft whose `lead` counts the protected units' sentences.
    """
    chosen: list[tuple[str, int]] = []
    priority: list[int] = []
    seen: set[str] = set()
    lead = 0

    def add(sentence: str, index: int, claim: int) -> None:
        if sentence.lower() not in seen:
            chosen.append((sentence, index))
            priority.append(claim)
            seen.add(sentence.lower())

    for number, pick in enumerate(ranked[:units], start=1):
        if pick.text.lower() in seen:
            if number == protect and not lead:
                lead = len(chosen)
            continue
        index = pick.evidence_index
        parts = _passage(evidence[index])
        here = _position(pick, parts)
        if here is not None:
            at = here
            while at > 0 and here - at < 2 and (ANAPHOR.match(parts[at]) or _names_back(parts[at])):
                at -= 1
            before = list(parts[at:here])
            term_line = parts[here - 1] if here > 0 else ""
            if (
                not before
                and term_line
                and len(term_line.split()) <= 6
                and not term_line.rstrip().endswith((".", ":", "?"))
            ):
                before = [term_line]
            if not before and here > 0 and term_line in comment_lines(evidence[index].text):
                before = [term_line]
            before = _with_lead_in(parts, here - len(before), evidence[index]) + before
            for sentence in before:
                if len(sentence.split()) <= 40:
                    add(sentence, index, PICK_CLAIM * number + 1)
        add(pick.text, index, PICK_CLAIM * number)
        if number == 1 and template == "parameter_lookup":
            _value_first(question, chosen)  # within the pick and what it needs, not the sentence after it
        following: tuple[str, int] | None = None
        if here is not None and here + 1 < len(parts):
            following = (parts[here + 1], index)
        elif here is not None:
            successor = _continuation(index, evidence, continued_in)
            if successor is not None:
                shared = set(parts)
                rest = [s for s in _passage(evidence[successor]) if s not in shared]
                following = (rest[0], successor) if rest else None
        # the sentence after the pick, unless it is the heading of the next section ("DESCRIPTION") or a caption
        # (it announces a table the answer does not show)
        if (
            following
            and len(following[0].split()) <= 40
            and WORD.search(following[0])
            and not is_caps_heading(following[0])
            and not CAPTION.match(following[0])
        ):
            add(*following, FOLLOWING_CLAIM + number)
        if number == protect:
            lead = len(chosen)
    lead = max(lead or len(chosen), 1)
    # the lead unit is kept whole whatever its claims (`_value_first` may have reordered its sentences)
    return Draft(template, chosen, lead=lead, priority=(0,) * lead + tuple(priority[lead:]))
