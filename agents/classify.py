"""Question classification without an LLM: answer template, hop type, decomposition and clarification.

Two layers:

1. Deterministic rules (regexes with a weight each) that recognise the obvious cases: "difference
   between", "vs", "how do I", "default ... timeout", "why ... failing", "what is", "and then", ...
2. A small scikit-learn model (TF-IDF word + character n-grams, one logistic regression per head)
   trained on ``agents/data/classifier_examples.jsonl`` and shipped as ``agents/data/classifier.joblib``.

A rule whose weight reaches ``_RULE_WINS`` decides the label on its own unless another label's rule is
just as strong; otherwise rule weights are added to the model's probabilities. The model file is loaded
lazily once; without it the rules alone still produce an answer. No Django imports.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "TEMPLATES",
    "HOPS",
    "Classification",
    "classify",
    "decompose",
    "clarifying_question",
    "train_and_save",
    "load_examples",
    "MODEL_PATH",
    "EXAMPLES_PATH",
]

logger = logging.getLogger(__name__)

TEMPLATES: tuple[str, ...] = (
    "procedure_sop",
    "concept_explanation",
    "comparison_decision",
    "parameter_lookup",
    "troubleshooting",
)
HOPS: tuple[str, ...] = ("single_hop", "multi_hop", "ambiguous")

DATA_DIR = Path(__file__).resolve().parent / "data"
EXAMPLES_PATH = DATA_DIR / "classifier_examples.jsonl"
MODEL_PATH = DATA_DIR / "classifier.joblib"
_SEED = 13
_TEST_FRACTION = 0.2
# A rule at least this strong decides on its own (when no other label has an equally strong rule).
_RULE_WINS = 0.85
# Otherwise rule weights are blended into the model's probabilities with this factor.
_RULE_BLEND = 0.6


@dataclass(frozen=True)
class Classification:
    """Result of ``classify``: template, hop type, template confidence and the names of rules that fired."""

    template: str
    hop: str
    confidence: float
    rules: tuple[str, ...] = ()
    hop_confidence: float = 0.0


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    head: str  # "template" or "hop"
    label: str
    regex: re.Pattern[str]
    weight: float


def _r(name: str, head: str, label: str, pattern: str, weight: float) -> _Rule:
    return _Rule(name, head, label, re.compile(pattern, re.IGNORECASE), weight)


_TEMPLATE_RULES: tuple[_Rule, ...] = (
    # comparison / decision
    _r("cmp.difference_between", "template", "comparison_decision",
       r"\b(?:differences?|diff|distinction)\s+(?:in\s+\w+\s+)?(?:between|beetween|betwen|btw)\b", 0.95),
    _r("cmp.versus", "template", "comparison_decision", r"\b(?:vs\.?|versus)\s", 0.92),
    _r("cmp.compare", "template", "comparison_decision", r"\bcompar(?:e|ed|es|ing|ison)\b", 0.9),
    _r("cmp.pros_cons", "template", "comparison_decision", r"\bpros\s+(?:and|&)\s+cons\b|\btrade-?offs?\b", 0.9),
    _r("cmp.should_i_x_or_y", "template", "comparison_decision",
       r"\b(?:should|shall|do|would)\s+(?:i|we|you)\s+(?:use|pick|choose|go\s+with|prefer|run|deploy|standardi[sz]e\s+on)\b[^?]*\bor\b", 0.9),
    _r("cmp.which_better", "template", "comparison_decision",
       r"\bwhich\s+(?:one\s+|option\s+|is\s+|\w+\s+)?(?:is\s+)?(?:better|best|faster|more\s+\w+|recommended|preferred)\b|"
       # "which one should we pick" is a decision; "which directory should the files live in" is a lookup
       r"\bwhich\s+(?:\w+\s+){0,3}?should\s+(?:i|we|you)\s+(?:use|pick|choose|prefer|go\s+with|run|deploy|buy|"
       r"install)\b", 0.85),
    _r("cmp.better_than", "template", "comparison_decision",
       r"\b(?:better|worse|faster|slower|safer|more\s+(?:secure|reliable|efficient))\s+(?:than|for)\b|\b(?:instead\s+of|rather\s+than)\b", 0.8),
    _r("cmp.x_or_y_question", "template", "comparison_decision", r"^\s*[\w.+-]+\s+or\s+[\w.+-]+\b", 0.85),
    _r("cmp.recommend", "template", "comparison_decision",
       r"\b(?:recommended|recommend|best\s+(?:option|practice|choice|way)|good\s+idea|worth\s+(?:it|enabling|using))\b|^\s*(?:should|shall)\s+(?:i|we)\b", 0.7),
    # procedure / SOP
    _r("proc.how_do_i", "template", "procedure_sop",
       r"^\s*(?:pls\s+|please\s+)?(?:how\s+(?:do|can|should|would|could)\s+(?:i|we|you|one)|how\s+to|howto|hwo\s+(?:do\s+i|to))\b", 0.7),
    _r("proc.lead", "template", "procedure_sop",
       r"^\s*(?:pls\s+|please\s+)?(?:steps?\s+(?:to|for)|procedure\s+(?:to|for)|runbook\s+for|process\s+for|"
       r"what(?:'s|\s+is|s)\s+the\s+(?:procedure|runbook|process|steps?)\b|walk\s+me\s+through)", 0.9),
    _r("proc.steps", "template", "procedure_sop",
       r"\b(?:steps?|procedure|runbook|playbook|walk\s+(?:me\s+)?through|process\s+(?:for|to)|instructions\s+(?:for|to)|guide\s+to|checklist)\b", 0.8),
    _r("proc.imperative", "template", "procedure_sop",
       r"^\s*(?:configure|set\s*up|setup|install|enable|add|create|rotate|upgrade|migrate|restore|reset|deploy|provision|renew|join|mount|extend|schedule|replace|decommission|onboard|apply|raise|revoke|cfg)\b", 0.75),
    # parameter lookup
    _r("param.default", "template", "parameter_lookup", r"\b(?:default|defalt|deafult)\b(?!\s+route\s+(?:is\s+)?(?:missing|gone|wrong))", 0.85),
    _r("param.value_of", "template", "parameter_lookup",
       r"\b(?:value|setting)\s+(?:of|for|on|in)\b|\bwhat(?:\s+is|'s|s|\s+are)\s+(?:the\s+|our\s+)?(?:[\w.-]+[\s_-]+){0,4}(?:value|setting|size|number|asn|address|ip|path|id|version|port|range|extension|length|priority|interval|limit|ttl|lifetime|timeout|timers?|rpo|rto|sla|period|algorithm|cipher|stratum|community|vlan|scope|subnet|gateway|mtu|asn)s?\b", 0.85),
    _r("param.config_key", "template", "parameter_lookup", r"\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]+(?:\.[a-z0-9_]+){2,}\b", 0.6),
    _r("param.port", "template", "parameter_lookup",
       r"\b(?:what|which)\s+(?:\w+\s+)?port\b|\bport\s+(?:number|does|for)\b|^\W*(?:[\w.-]+\s+){0,2}port\s*\??\s*$", 0.85),
    _r("param.numeric_setting", "template", "parameter_lookup",
       r"\b(?:timeout|time-?out|limit|max(?:imum)?|min(?:imum)?|interval|lifetime|hold\s*-?time|ttl|retention|lease\s+time|mtu|threshold|size|priority)\b", 0.6),
    _r("param.where_is", "template", "parameter_lookup",
       r"\bwhere\s+(?:is|are|does|do)\b.*\b(?:file|config|conf|log|logs|stored|store|located|live|write)\b|\b(?:path|location)\s+of\b", 0.85),
    _r("param.command", "template", "parameter_lookup",
       r"\b(?:what|which)\s+(?:is\s+the\s+)?command\b|\bthe\s+command\s+(?:to|that|for)\b|\bwhich\s+option\s+(?:in|of|sets|controls)\b", 0.85),
    # troubleshooting
    _r("trouble.symptom", "template", "troubleshooting",
       r"\b(?:errors?|fail(?:s|ed|ing|ure|ures)?(?!\s+over)|not\s+(?:working|syncing|sync(?:h)?roni[sz]ed|forwarding|receiving|resolving|reachable|coming\s+up|being)|"
       r"doesn'?t\s+(?:work|run)|won'?t|wont|flap(?:s|ping)?|stuck|broken|brokn|hangs?|hanging|refused|unreachable|crash(?:es|ed|ing)?|"
       r"degraded|drop(?:s|ping|ped)|dropping|lost|loss|lagging|lag\s+(?:keeps|is)|timed?\s+out|times\s+out|disconnect(?:ed|s)?|"
       r"can'?t|cannot|cant|unable|keeps?\s+\w+ing|split\s+brain|expired|too\s+many|(?:is|are|disk|table|queue|partition|filesystem|volume|log)\s+(?:\w+\s+)?full|"
       r"status\s+red|slow(?!\s+(?:query|start|log|path))|spikes?|leak(?:s|ing)?|stopped|stops|broke|conflicts?|mismatch(?:es)?|"
       r"detected|bounc(?:e|es|ing)|out\s+of\s+sync|drift(?:ing)?|back\s+and\s+forth)\b", 0.85),
    _r("trouble.why", "template", "troubleshooting", r"^\s*(?:why|y)\b|\bwhy\s+(?:is|are|does|do|did|can'?t|cant|won'?t)\b", 0.65),
    _r("trouble.down", "template", "troubleshooting", r"\b(?:is|are|goes|went|keeps\s+going|neighbou?r|link|tunnel|session|vpn)\s+down\b|\bdown\s*$", 0.85),
    _r("trouble.log_message", "template", "troubleshooting",
       r"%[A-Z0-9_]+-\d-[A-Z0-9_]+|\b[A-Z]{2,5}-\d{3,5}\b|\berror\s+\d+|\bexit\s+code\s+\d+|\b\d{3}\s+bad\s+gateway\b", 0.9),
    # concept
    _r("concept.what_is_a", "template", "concept_explanation",
       r"^\s*(?:what|wat|wht)\s*(?:is|'s|s)\s+(?:an?|the\s+(?:purpose|point|role|meaning|function|idea|concept))\b", 0.85),
    _r("concept.explain", "template", "concept_explanation",
       r"^\s*(?:can\s+you\s+|could\s+you\s+|please\s+)?(?:explain|describe|define)\b|\b(?:concept|meaning|purpose|role|point)\s+of\b|\bused\s+for\s*\??$", 0.85),
    _r("concept.why_do_we", "template", "concept_explanation",
       r"\bwhy\s+(?:do|would|should)\s+(?:we|you|i|people|one)\s+(?:use|need|run|have|want|bother)\b|\bwhy\s+is\s+[\w\s-]{1,30}\s+(?:needed|necessary|required|used|useful)\b", 0.9),
    _r("concept.what_is", "template", "concept_explanation",
       r"^\s*(?:what|wat|wht)\s*(?:is|'s|s|are)\b|\bwhat\s+does\s+[\w\s-]{1,40}\s+(?:mean|do)\b", 0.55),
    _r("concept.how_does_it_work", "template", "concept_explanation",
       r"\bhow\s+(?:does|do)\s+[\w\s./-]{1,50}\s+(?:work|decide|pick|choose|relate|interact)\b", 0.8),
)  # fmt: skip

_HOP_RULES: tuple[_Rule, ...] = (
    _r("hop.difference_between", "hop", "multi_hop",
       r"\b(?:differences?|diff)\s+(?:in\s+\w+\s+)?(?:between|beetween|betwen)\s+.+\s+(?:and|&)\s+", 0.9),
    _r("hop.versus", "hop", "multi_hop", r"\S\s+(?:vs\.?|versus)\s+\S", 0.9),
    _r("hop.x_or_y", "hop", "multi_hop",
       r"\b(?:use|pick|choose|go\s+with|prefer|better|between)\b[^?]*\b[\w.+-]+\s+or\s+[\w.+-]+|^\s*[\w.+-]+\s+or\s+[\w.+-]+\b", 0.85),
    _r("hop.compare_x_and_y", "hop", "multi_hop",
       r"\bcompare\s+\S+(?:\s+\S+){0,4}\s+(?:and|with|to|vs)\s+\S|\bcompared?\s+(?:with|to)\s+\S", 0.85),
    _r("hop.instead_of", "hop", "multi_hop",
       r"\S\s+(?:instead\s+of|rather\s+than|(?:better|worse|faster|slower|safer|more\s+\w+)\s+than)\s+\S", 0.85),
    _r("hop.sequence", "hop", "multi_hop",
       r"\b(?:and\s+then|then\s+(?:\w+\s+)?(?:make|check|verify|update|register|install|grant|trunk|re-?\w+|patch|apply|advertise|request|point|add|restart)|after\s+that|afterwards|followed\s+by)\b|,\s*then\b", 0.85),
    _r("hop.second_question", "hop", "multi_hop",
       r"\S\s+(?:and|,|;)\s+(?:how|what|which|where|why|when|who|is\s+(?:it|the|that)|are\s+(?:they|the)|does|do\s+(?:i|we)|can|should|are\s+they\s+related)\b", 0.8),
    _r("hop.relation", "hop", "multi_hop",
       r"\bhow\s+(?:does|do|is|are)\s+.+\s+(?:relate|related|interact|tie|connect)s?\b|\b(?:relate|interact)s?\s+(?:to|with)\b|\bare\s+they\s+related\b", 0.85),
    # a statement of what is known, then the question that builds on it ("Nightly dumps land in some spool
    # directory by default. Which cleanup job prunes that directory?")
    _r("hop.context_then_question", "hop", "multi_hop",
       r"^[^?]{25,}[.!]\s+(?:(?:is|are|does|do|can|should|will|would)\b|[^.?]*\b(?:what|which|how|where|why|when|who)\b)"
       r"[^.?]*\?\s*$", 0.85),
    _r("hop.nested_reference", "hop", "multi_hop",
       r"\b(?:which|what)\s+[\w-]+(?:\s+[\w-]+){0,4}\s+(?:that|which|whose)\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+){0,3}\s+(?:uses?|runs?|serves?|hosts?|listens|polls?|is\s+plugged|sits|depends)\b|"
       r"\bthe\s+(?:\w+\s+){1,3}that\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+){0,3}\s+(?:uses?|runs?|serves?|hosts?|listens|polls?|is\s+plugged|sits|depends)\b|"
       r"\bthe\s+(?:\w+\s+){1,3}that\s+(?:uses?|runs?|serves?|hosts?|listens|polls?|feeds?|connects?)\s+\S", 0.85),
)  # fmt: skip

_WORD_RE = re.compile(r"[\w][\w./:%+-]*", re.UNICODE)
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "doing",
        "have",
        "has",
        "had",
        "i",
        "we",
        "you",
        "it",
        "its",
        "it's",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "me",
        "my",
        "our",
        "your",
        "us",
        "they",
        "them",
        "he",
        "she",
        "what",
        "what's",
        "whats",
        "wat",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "why",
        "how",
        "hwo",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "from",
        "by",
        "with",
        "about",
        "into",
        "over",
        "under",
        "again",
        "once",
        "and",
        "or",
        "but",
        "if",
        "then",
        "so",
        "than",
        "too",
        "very",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "not",
        "no",
        "nor",
        "only",
        "own",
        "same",
        "just",
        "also",
        "any",
        "all",
        "some",
        "each",
        "every",
        "both",
        "few",
        "more",
        "most",
        "other",
        "such",
        "up",
        "down",
        "out",
        "off",
        "pls",
        "please",
        "help",
        "s",
        "t",
        "y",
        "u",
        "one",
        "ones",
        "thing",
        "things",
        "stuff",
        "something",
        "anything",
        "everything",
        "still",
        "now",
        "today",
        "yesterday",
        "last",
        "time",
        "like",
        "new",
        "old",
        "get",
        "got",
        "getting",
        "keep",
        "keeps",
        "kept",
        "let",
        "lets",
        "let's",
        "make",
        "really",
        "after",
        "before",
        "during",
        "since",
        "while",
        "because",
        "until",
        "go",
        "going",
        "went",
        "gone",
        "come",
        "came",
        "via",
        "per",
    ]
)
# Words that say what kind of question it is but not *what* it is about.
_GENERIC = frozenset(
    [
        "server",
        "servers",
        "service",
        "services",
        "box",
        "host",
        "machine",
        "system",
        "systems",
        "setting",
        "settings",
        "config",
        "configuration",
        "conf",
        "value",
        "values",
        "default",
        "defaults",
        "timeout",
        "timeouts",
        "limit",
        "limits",
        "max",
        "maximum",
        "min",
        "minimum",
        "number",
        "port",
        "ports",
        "ip",
        "address",
        "file",
        "files",
        "option",
        "options",
        "procedure",
        "procedures",
        "steps",
        "step",
        "process",
        "change",
        "changes",
        "issue",
        "issues",
        "problem",
        "problems",
        "error",
        "errors",
        "fail",
        "fails",
        "failing",
        "failed",
        "failure",
        "broken",
        "brokn",
        "work",
        "works",
        "working",
        "worked",
        "down",
        "slow",
        "wrong",
        "fix",
        "fixed",
        "fixing",
        "configure",
        "configured",
        "set",
        "setup",
        "install",
        "installed",
        "enable",
        "enabled",
        "disable",
        "explain",
        "mean",
        "means",
        "meaning",
        "compare",
        "comparison",
        "better",
        "best",
        "difference",
        "diff",
        "choose",
        "pick",
        "use",
        "using",
        "used",
        "recommended",
        "recommend",
        "why",
        "happening",
        "happen",
        "happened",
        "stop",
        "stopped",
        "start",
        "started",
        "restart",
        "run",
        "running",
        "runs",
        "again",
        "broke",
        "breaking",
        "crash",
        "crashed",
        "connect",
        "can't",
        "cant",
        "cannot",
        "doesnt",
        "doesn't",
        "isn't",
        "not",
        "version",
        "update",
        "updated",
        "walk",
        "through",
        "done",
        "do",
        "add",
        "added",
        "remove",
        "removed",
        "that's",
        "it's",
        "one",
        "which",
        "save",
        "saved",
        "check",
        "checked",
        "show",
        "see",
        "sure",
        "okay",
        "ok",
        "yes",
        "no",
    ]
)


def _normalise(question: str) -> str:
    text = unicodedata.normalize("NFKC", question or "")
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text).strip()


def _specific_terms(question: str) -> list[str]:
    """Content words that name something (a protocol, product, host, setting): not stopwords or generic."""
    terms = []
    for token in _WORD_RE.findall(question):
        lowered = token.lower().strip(".,;:!?'\"")
        if not lowered or lowered in _STOPWORDS or lowered in _GENERIC:
            continue
        if len(lowered) == 1 and not lowered.isdigit():
            continue
        terms.append(token.strip(".,;:!?'\""))
    return terms


def _rule_scores(rules: Sequence[_Rule], text: str) -> tuple[dict[str, float], list[str]]:
    scores: dict[str, float] = {}
    fired: list[str] = []
    for rule in rules:
        if rule.regex.search(text):
            fired.append(rule.name)
            scores[rule.label] = max(scores.get(rule.label, 0.0), rule.weight)
    return scores, fired


_SECOND_QUESTION_RE = re.compile(
    r"\s+(?:and|,|;)\s+(?=(?:how|what|which|where|why|when|who|is|are|does|do|can|should)\b)", re.IGNORECASE
)
_COORDINATION_RE = re.compile(r"\s+and\s+(?!then\b)", re.IGNORECASE)


def _hop_rule_scores(text: str) -> tuple[dict[str, float], list[str]]:
    scores, fired = _rule_scores(_HOP_RULES, text)
    terms = _specific_terms(text)
    words = _WORD_RE.findall(text)
    if "hop.second_question" in fired:
        # "what is vacuum and why is it needed" asks twice about one thing: only a second clause that
        # brings in something new ("... and why do we run it with ospf") needs a second retrieval.
        parts = _SECOND_QUESTION_RE.split(text, maxsplit=1)
        head, tail = parts[0], parts[-1]
        head_terms = {t.lower() for t in _specific_terms(head)}
        if not [t for t in _specific_terms(tail) if t.lower() not in head_terms]:
            fired.remove("hop.second_question")
            scores = _rule_scores([r for r in _HOP_RULES if r.name in fired], text)[0]
    if "multi_hop" not in scores:
        sides = _COORDINATION_RE.split(text, maxsplit=1)
        if len(sides) == 2 and _specific_terms(sides[0]) and _specific_terms(sides[1]):
            # "the ntp servers and the log retention policy": two named things, probably two lookups.
            fired.append("hop.coordinated_terms")
            scores["multi_hop"] = 0.6
    if not terms:
        # Nothing names what the question is about: "it's broken, fix it", "what's the timeout?".
        fired.append("hop.no_specific_terms")
        scores["ambiguous"] = max(scores.get("ambiguous", 0.0), 0.9)
    elif len(terms) == 1 and len(words) <= 4 and re.search(r"\b(?:it|this|that|them|thing)\b", text, re.I):
        fired.append("hop.vague_short")
        scores["ambiguous"] = max(scores.get("ambiguous", 0.0), 0.6)
    elif "multi_hop" not in scores:
        # It names something and shows no sign of a second part: lean (weakly) towards one retrieval.
        scores["single_hop"] = 0.5
    return scores, fired


def _combine(labels: Sequence[str], probs: dict[str, float], rules: dict[str, float]) -> tuple[str, float]:
    """Rules win when one label has a strong rule and no other label matches it; else blend with the model."""
    strong = [label for label, weight in rules.items() if weight >= _RULE_WINS]
    if strong:
        best_rule = max(rules.values())
        top = [label for label in strong if rules[label] == best_rule]
        if len(top) == 1:
            label = top[0]
            return label, round(max(best_rule, probs.get(label, 0.0)), 3)
    blended = {label: probs.get(label, 0.0) + _RULE_BLEND * rules.get(label, 0.0) for label in labels}
    total = sum(blended.values()) or 1.0
    label = max(labels, key=lambda name: (blended[name], -labels.index(name)))
    return label, round(blended[label] / total, 3)


# ---------------------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------------------
_model_lock = threading.Lock()
_model: dict[str, Any] | None = None
_model_loaded = False


def _load_model(path: Path = MODEL_PATH) -> dict[str, Any] | None:
    global _model, _model_loaded
    if not _model_loaded:
        with _model_lock:
            if not _model_loaded:
                try:
                    import joblib

                    _model = joblib.load(path)
                except FileNotFoundError:
                    logger.warning("classifier model %s missing; classifying with rules only", path)
                    _model = None
                _model_loaded = True
    return _model


def _model_probs(model: dict[str, Any] | None, text: str) -> tuple[dict[str, float], dict[str, float]]:
    if model is None:
        return {}, {}
    features = model["vectorizer"].transform([text])
    heads = []
    for key in ("template_clf", "hop_clf"):
        clf = model[key]
        probs = clf.predict_proba(features)[0]
        heads.append({str(label): float(p) for label, p in zip(clf.classes_, probs, strict=True)})
    return heads[0], heads[1]


def template_rule_scores(text: str) -> tuple[dict[str, float], list[str]]:
    """The answer-template rules on `text`: template -> the weight of its strongest rule that fired, and the
    names of the rules that fired."""
    return _rule_scores(_TEMPLATE_RULES, text)


def classify_with(model: dict[str, Any] | None, question: str) -> Classification:
    """:func:`classify` with the given fitted model (the contents of its artefact), or with the rules
    alone when `model` is None (training compares the two on held-back examples)."""
    text = _normalise(question)
    template_probs, hop_probs = _model_probs(model, text.lower())
    template_rules, fired_t = template_rule_scores(text)
    hop_rules, fired_h = _hop_rule_scores(text)
    template, confidence = _combine(TEMPLATES, template_probs, template_rules)
    hop, hop_confidence = _combine(HOPS, hop_probs, hop_rules)
    return Classification(template, hop, confidence, tuple(fired_t + fired_h), hop_confidence)


def classify(question: str) -> Classification:
    """Classify a question into an answer template and a hop type.

    Args:
        question: the user's question (after any follow-up rewriting).

    Returns:
        ``Classification`` with ``template`` (one of ``TEMPLATES``), ``hop`` (one of ``HOPS``), the
        template ``confidence`` in [0, 1], the names of the ``rules`` that fired and ``hop_confidence``.
    """
    return classify_with(_load_model(), question)


def load_examples(path: Path = EXAMPLES_PATH) -> list[dict[str, str]]:
    """Read the labelled examples (``{"question", "template", "hop"}`` per line), validating labels."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row["template"] not in TEMPLATES or row["hop"] not in HOPS:
                raise ValueError(f"{path}:{number}: unknown label {row['template']!r}/{row['hop']!r}")
            rows.append(row)
    return rows


def _fit(questions: Sequence[str], templates: Sequence[str], hops: Sequence[str]) -> dict[str, Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion

    vectorizer = FeatureUnion(
        [
            (
                "word",
                TfidfVectorizer(
                    analyzer="word", ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w[\w'-]*\b"
                ),
            ),
            # Character n-grams make the model robust to typos ("replicaton", "hwo") and fused tokens.
            ("char", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=2)),
        ]
    )
    lowered = [_normalise(q).lower() for q in questions]
    features = vectorizer.fit_transform(lowered)
    heads = {}
    for key, labels in (("template_clf", templates), ("hop_clf", hops)):
        clf = LogisticRegression(C=8.0, max_iter=5000, class_weight="balanced", random_state=_SEED)
        clf.fit(features, list(labels))
        heads[key] = clf
    for _, vec in vectorizer.transformer_list:
        # Only needed for introspection and can be large; sklearn documents it as safe to drop.
        if hasattr(vec, "stop_words_"):
            vec.stop_words_ = None
    return {"vectorizer": vectorizer, **heads, "version": 1}


def _accuracy(
    predict: Callable[[str], Classification], rows: Sequence[dict[str, str]]
) -> tuple[float, float]:
    predictions = [predict(row["question"]) for row in rows]
    template = sum(p.template == row["template"] for p, row in zip(predictions, rows, strict=True)) / len(
        rows
    )
    hop = sum(p.hop == row["hop"] for p, row in zip(predictions, rows, strict=True)) / len(rows)
    return round(template, 4), round(hop, 4)


def train_and_save(
    path: Path | str | None = None, *, examples_path: Path | str | None = None
) -> dict[str, Any]:
    """Train the two-head classifier, report held-back accuracy, refit on all data and save it.

    Args:
        path: where to write the model (default ``agents/data/classifier.joblib``).
        examples_path: labelled examples (default ``agents/data/classifier_examples.jsonl``).

    Returns:
        Metrics: example counts, held-back accuracy of the model alone (``*_accuracy_model``) and of the
        full rules+model ``classify`` (``template_accuracy``, ``hop_accuracy``) on a stratified 20 % split
        with a fixed seed, plus the saved path and its size in bytes.
    """
    import joblib
    from sklearn.model_selection import train_test_split

    random.seed(_SEED)
    target = Path(path) if path else MODEL_PATH
    rows = load_examples(Path(examples_path) if examples_path else EXAMPLES_PATH)
    strata = [f"{row['template']}|{row['hop']}" for row in rows]
    train_rows, test_rows = train_test_split(
        rows, test_size=_TEST_FRACTION, random_state=_SEED, stratify=strata
    )

    held_back = _fit(
        [r["question"] for r in train_rows],
        [r["template"] for r in train_rows],
        [r["hop"] for r in train_rows],
    )

    def model_only(question: str) -> Classification:
        template_probs, hop_probs = _model_probs(held_back, _normalise(question).lower())
        return Classification(
            max(template_probs, key=template_probs.__getitem__),
            max(hop_probs, key=hop_probs.__getitem__),
            0.0,
        )

    template_model, hop_model = _accuracy(model_only, test_rows)
    template_full, hop_full = _accuracy(lambda q: classify_with(held_back, q), test_rows)

    final = _fit([r["question"] for r in rows], [r["template"] for r in rows], [r["hop"] for r in rows])
    target.parent.mkdir(parents=True, exist_ok=True)
    joblib.dump(final, target, compress=3)
    _reset_model_cache()
    metrics = {
        "n_examples": len(rows),
        "n_train": len(train_rows),
        "n_test": len(test_rows),
        "template_accuracy_model": template_model,
        "hop_accuracy_model": hop_model,
        "template_accuracy": template_full,
        "hop_accuracy": hop_full,
        "path": str(target),
        "size_bytes": target.stat().st_size,
    }
    print(json.dumps(metrics, indent=2))
    return metrics


def _reset_model_cache() -> None:
    global _model, _model_loaded
    with _model_lock:
        _model, _model_loaded = None, False


# ---------------------------------------------------------------------------------------------------------
# Decomposition and clarification
# ---------------------------------------------------------------------------------------------------------
_COMPARE_PATTERNS = (
    # "which is better for Z, X or Y"
    re.compile(
        r"^\s*which\s+(?:one\s+)?(?:is\s+|would\s+be\s+)?(?:better|best|recommended|preferred|faster|safer)\s+"
        r"(?P<z>(?:for|in|on|when|as)\s+[^,]+?)\s*[,:]\s*(?P<x>[^,?]+?)\s+or\s+(?P<y>[^,?]+?)\s*[?.!]*$",
        re.I,
    ),
    # "(what is the) difference between X and Y (for|in|when|on Z)"
    re.compile(
        r"\b(?:differences?|diff|distinction)\s+(?:in\s+\w+\s+)?(?:between|beetween|betwen)\s+(?P<x>.+?)\s+(?:and|&)\s+"
        r"(?P<y>.+?)(?:\s+(?P<z>(?:for|in|on|when|with|under|as)\s+.+?))?\s*[?.!]*$",
        re.I,
    ),
    # "compare X and|with|to Y (for Z)"
    re.compile(
        r"\bcompare\s+(?P<x>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<y>.+?)(?:\s+(?P<z>(?:for|in|on|when|as)\s+.+?))?\s*[?.!]*$",
        re.I,
    ),
    # "should I use X or Y (for Z)"
    re.compile(
        r"\b(?:use|pick|choose|go\s+with|prefer|run|standardi[sz]e\s+on)\s+(?P<x>[^?,]+?)\s+or\s+(?P<y>[^?,]+?)"
        r"(?:\s+(?P<z>(?:for|in|on|when|as)\s+[^?]+?))?\s*(?:[?.!]|,|$)",
        re.I,
    ),
    # "X vs Y (for Z)"
    re.compile(
        r"(?P<x>[^,?:;]+?)\s+(?:vs\.?|versus)\s+(?P<y>[^,?:;]+?)(?:\s+(?P<z>(?:for|in|on|when|as)\s+[^,?]+?))?\s*(?:[?.!,:;—-]|$)",
        re.I,
    ),
    # "is X better than Y (for Z)"
    re.compile(
        r"\bis\s+(?P<x>.+?)\s+(?:better|worse|faster|slower|safer|more\s+\w+)\s+than\s+(?P<y>.+?)"
        r"(?:\s+(?P<z>(?:for|in|on|when|as)\s+.+?))?\s*[?.!]*$",
        re.I,
    ),
    # "X or Y (for Z)?"
    re.compile(
        r"^(?:.*?,\s*)?(?P<x>[\w.+/-]+(?:\s+[\w.+/-]+)?)\s+or\s+(?P<y>[\w.+/-]+(?:\s+[\w.+/-]+)?)"
        r"(?:\s+(?P<z>(?:for|in|on|when|as)\s+[^?]+?))?\s*\??$",
        re.I,
    ),
)
_LEADING_FILLER = re.compile(
    r"^(?:what(?:'s|\s+is|\s+are)\s+(?:the\s+)?|which\s+is\s+(?:better|best)\s*(?:for\s+[^,]+)?,?\s*|"
    r"(?:should|shall|do)\s+(?:i|we)\s+|is\s+it\s+better\s+(?:to\s+use\s+)?|a\s+|an\s+|the\s+)",
    re.I,
)
_SEQUENCE_SPLIT = re.compile(
    r"\s*(?:,\s*and\s+then\s+|,\s*then\s+|;\s*then\s+|\s+and\s+then\s+|\s+then\s+|;\s+|\?\s+(?=\w)|\.\s+(?=\w)|"
    r",?\s+after\s+that,?\s+|,?\s+and\s+(?=(?:how|what|which|where|why|when|who|is|are|does|do|can|should|make|check|"
    r"verify|update|register|grant|trunk|point|advertise|request|repoint|re-?enable|add)\b))",
    re.I,
)
_IMPERATIVE_COMMA = re.compile(
    r",\s+(?=(?:join|install|add|create|configure|enable|restart|register|grant|open|point|update|verify|check|"
    r"apply|patch|drain|stop|start|take|restore|request|provision|deploy|remove|upgrade|test|reboot)\b)",
    re.I,
)
_RELATED_TAIL = re.compile(
    r",?\s*(?:(?:are|is)\s+(?:they|these|those|the\s+two|both)\s+(?:related|connected|linked)|which\s+causes\s+which|"
    r"what'?s\s+the\s+(?:root\s+)?cause|how\s+do\s+(?:these|they)\s+relate)\s*\??\s*$",
    re.I,
)
_SHARED_PREFIX = re.compile(
    r"^(?P<head>.+?)\s+(?P<prep>on|for|in|at|from)\s+(?P<a>[\w./-]+(?:\s+[\w./-]+)?)\s+and\s+(?:(?:on|for|in|at|from)\s+)?"
    r"(?:the\s+)?(?P<b>[\w./-]+(?:\s+[\w./-]+)?)\s*[?.!]*$",
    re.I,
)
_PRONOUN = re.compile(r"\b(?:it|its|them|they|their|that|this|those|these|both)\b", re.I)


def _clean_part(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip(" ,;:.-—?!")


def _comparison_parts(text: str) -> list[str] | None:
    for pattern in _COMPARE_PATTERNS:
        match = pattern.search(text)
        if not match:
            continue
        x = _LEADING_FILLER.sub("", _clean_part(match.group("x")))
        y = _clean_part(match.group("y"))
        z = _clean_part(match.groupdict().get("z") or "")
        if not x or not y or x.lower() == y.lower():
            continue
        # "ospf vs isis for the core": Z qualifies both; "OSPF and EIGRP?" has none.
        return [f"{x} {z}".strip(), f"{y} {z}".strip()]
    return None


def decompose(question: str, classification: Classification | None = None) -> list[str]:
    """Split a multi-hop or comparison question into 2-3 retrievable sub-questions.

    Args:
        question: the user's question.
        classification: result of ``classify`` (computed when omitted).

    Returns:
        For comparisons ``["X Z", "Y Z"]`` ("difference between X and Y for Z"); for sequences
        ("A, and then B") and double questions the parts, each later part that refers back with a
        pronoun carrying the first part's key terms; otherwise ``[question]``.
    """
    text = _normalise(question)
    if not text:
        return [question]
    result = classification or classify(text)
    if result.hop != "multi_hop" and result.template != "comparison_decision":
        return [text]
    if result.template == "comparison_decision" or re.search(
        r"\b(?:vs\.?|versus|difference|compare)\b", text, re.I
    ):
        parts = _comparison_parts(text)
        if parts:
            return parts
    body = _RELATED_TAIL.sub("", text)
    body = re.sub(r"\s*[-—]+\s*how\s*\??\s*$", "", body, flags=re.I)
    pieces = [_clean_part(p) for chunk in _SEQUENCE_SPLIT.split(body) for p in _IMPERATIVE_COMMA.split(chunk)]
    pieces = [p for p in pieces if len(_specific_terms(p)) + len(p.split()) >= 3]
    if len(pieces) < 2 and result.hop == "multi_hop":
        shared = _SHARED_PREFIX.match(body)
        if shared and _specific_terms(shared.group("a")) and _specific_terms(shared.group("b")):
            # "default hello timers on ios and on junos" -> one lookup per platform.
            head, prep = shared.group("head"), shared.group("prep")
            return [f"{head} {prep} {shared.group('a')}", f"{head} {prep} {shared.group('b')}"]
        sides = [_clean_part(p) for p in _COORDINATION_RE.split(body, maxsplit=1)]
        if len(sides) == 2 and all(len(side.split()) >= 3 and _specific_terms(side) for side in sides):
            pieces = sides
    if len(pieces) < 2:
        nested = re.search(r"\b(?:the|a)\s+((?:[\w-]+\s+){0,3}[\w-]+)\s+that\s+(.+?)\s*[?.!]*$", text, re.I)
        if nested and result.hop == "multi_hop":
            # "which rule blocks the port that rsyslog uses" -> first resolve "the port that rsyslog uses".
            inner = f"{_clean_part(nested.group(1))} that {_clean_part(nested.group(2))}"
            return [inner, text]
        return [text]
    first_terms = [t for t in _specific_terms(pieces[0]) if not _PRONOUN.fullmatch(t)]
    out = [pieces[0]]
    for piece in pieces[1:3]:
        if _PRONOUN.search(piece) and first_terms:
            missing = [t for t in first_terms if t.lower() not in piece.lower()][:4]
            piece = f"{piece} ({' '.join(missing)})" if missing else piece
        out.append(piece)
    if len(pieces) > 3:
        out[-1] = " ".join([out[-1], *pieces[3:]])
    return out


_CLARIFY_BY_TEMPLATE = {
    "procedure_sop": "What exactly do you want to set up or change, and on which system (product, version, host)?",
    "concept_explanation": "Which term, protocol or component would you like explained?",
    "comparison_decision": "Which options are you choosing between, and for what use?",
    "parameter_lookup": "Which setting do you mean, and for which product or system?",
    "troubleshooting": (
        "What is failing, and where? Please name the system or service, quote the error message or symptom, "
        "and say what changed recently."
    ),
}
_CLARIFY_EXAMPLES = {
    "procedure_sop": 'For example: "How do I configure NTP authentication on Cisco IOS XE?"',
    "concept_explanation": 'For example: "What is an OSPF stub area?"',
    "comparison_decision": 'For example: "chrony vs ntpd on RHEL 9 for the DMZ servers?"',
    "parameter_lookup": 'For example: "What is the default BGP hold timer on Junos?"',
    "troubleshooting": 'For example: "Why is the BGP session to 192.0.2.1 stuck in Active after the firewall change?"',
}


def clarifying_question(question: str) -> str:
    """A clarifying question for an ambiguous request, specific to what it seems to ask.

    Args:
        question: the ambiguous question.

    Returns:
        One or two sentences asking for the missing subject, with an example of a well-formed question;
        when the question leans on a pronoun ("fix it") the reply asks what it refers to.
    """
    text = _normalise(question)
    template = classify(text).template if text else "troubleshooting"
    pronoun = _PRONOUN.search(text)
    lead = (
        f'What does "{pronoun.group(0).lower()}" refer to? ' if pronoun and not _specific_terms(text) else ""
    )
    return f"{lead}{_CLARIFY_BY_TEMPLATE[template]} {_CLARIFY_EXAMPLES[template]}"
