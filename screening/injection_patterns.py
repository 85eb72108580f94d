"""Prompt-injection pattern library and the text views it is matched against.

Each :class:`InjectionPattern` carries two weights:

* ``weight`` is used for user questions (``detect_injection``): a question is blocked when the summed
  weight of distinct matching patterns reaches 1.0.
* ``ingest_weight`` is used for document chunks (``looks_like_injection``). Documentation legitimately
  says things like "if you use Debian, ignore the above instructions", so phrases that are only
  suspicious when aimed at a model get 0.5 there and need a second, AI-directed cue to flag.

Patterns are matched against several *views* of the text (Unicode-normalised, confusable-folded,
leetspeak-decoded, letter-spacing collapsed, and decoded base64 / hex / rot13 / URL-encoded /
escaped payloads) so that trivial obfuscation does not slip through. Nothing here imports Django.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import unquote_plus

import re2

__all__ = [
    "InjectionPattern",
    "PATTERNS",
    "TextView",
    "ZERO_WIDTH_CHARS",
    "invisible_char_counts",
    "mixed_script_words",
    "normalize_text",
    "fold_confusables",
    "deleet",
    "collapse_spaced_letters",
    "decoded_views",
    "text_views",
    "trigger_words_present",
]

_FLAGS = re.IGNORECASE | re.MULTILINE


class Matcher(Protocol):
    """What a detector needs of a compiled pattern (a Python or an RE2 regex, or a scanner)."""

    @property
    def pattern(self) -> Any: ...

    def search(self, text: str) -> Any: ...

    def finditer(self, text: str) -> Iterator[Any]: ...


@dataclass(frozen=True, slots=True)
class InjectionPattern:
    """One named detector: a compiled regex plus its category and weights."""

    name: str
    category: str
    regex: Matcher
    weight: float = 1.0
    ingest_weight: float = 0.5
    # Cheap pre-check: every group must have at least one substring present in the lower-cased text.
    # Scanning 1,500-character chunks with ~100 regexes over several views is otherwise the ingest
    # bottleneck; substring tests cost microseconds. Triggers are necessary conditions only.
    triggers: tuple[tuple[str, ...], ...] = ()
    # A match is ignored when this regex finds a benign context in the same sentence ("Windows developer
    # mode", "the pinentry system prompt").
    unless: re.Pattern[str] | None = None

    def matches(self, text: str) -> bool:
        """True when the regex matches ``text`` outside any ``unless`` context."""
        if self.unless is None:
            return self.regex.search(text) is not None
        for match in self.regex.finditer(text):
            # The sentence around the match: wrapped lines belong to it, a blank line or ". " ends it.
            start = max(match.start() - 200, 0)
            before = _SENTENCE_END_RE.findall(text[start : match.start()])
            if before:
                start = text.rfind(before[-1], start, match.start()) + len(before[-1])
            after = _SENTENCE_END_RE.search(text, match.end(), match.end() + 200)
            end = after.start() if after else match.end() + 200
            if not self.unless.search(text[start:end]):
                return True
        return False

    def may_match(self, present: frozenset[str]) -> bool:
        """True unless a trigger group has no word in ``present`` (see ``trigger_words_present``)."""
        return all(any(word in present for word in group) for group in self.triggers)


_SENTENCE_END_RE = re.compile(r"[.!?](?:\s+|$)|\n\s*\n")


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a pattern RE2 cannot take falls back quietly (see _compile)


def _compile(pattern: str) -> Matcher:
    """RE2 (linear time whatever the text) for every pattern it accepts; Python's engine only for the few
    that need look-around and for the non-English ones (RE2's \\b and \\w know ASCII letters only). Those
    are kept linear by construction -- no nested or adjacent unbounded quantifiers over the same characters
    -- and tests/agents/test_guard_complexity.py runs every pattern on adversarial 100 kB inputs."""
    if pattern.isascii():
        try:
            return re2.compile("(?im)" + pattern, _RE2_OPTIONS)
        except re2.error:
            pass
    return re.compile(pattern, _FLAGS)


def _p(
    name: str, category: str, pattern: str | Matcher, weight: float = 1.0, ingest: float = 0.5
) -> InjectionPattern:
    matcher = _compile(pattern) if isinstance(pattern, str) else pattern
    return InjectionPattern(name, category, matcher, weight, ingest)


@dataclass(frozen=True)
class _CommentMatch:
    start_at: int
    end_at: int

    def start(self) -> int:
        return self.start_at

    def end(self) -> int:
        return self.end_at


class HtmlCommentCue:
    """An HTML comment (`<!--` ... `-->`) with a cue that starts at most `reach` characters after an opening
    `<!--` of the comment and ends at most `reach` characters before its `-->`.

    A scanner rather than a regex: the regex form (`<!--(?:(?!-->)[\\s\\S]){0,600}?cue...-->`) needs
    look-ahead, so it cannot run on RE2, and on Python's engine a page of unclosed `<!--` made it retry
    every opening against the next 600 characters and every cue (0.6 s per 100 kB). Here each comment is
    found once with str.find and only the `reach`-sized tail before its end is searched for the cue."""

    def __init__(self, cue: str, *, reach: int = 600) -> None:
        self.pattern = cue
        self.cue = re2.compile("(?im)" + cue, _RE2_OPTIONS)
        self.reach = reach

    def finditer(self, text: str) -> Iterator[_CommentMatch]:
        opening = text.find("<!--")
        while opening != -1:
            close = text.find("-->", opening + 4)
            if close == -1:
                return  # no later comment can close either
            tail = max(opening + 4, close - self.reach - 200)  # 200: longer than any cue
            for cue in self.cue.finditer(text, tail, close):
                if cue.end() > close or close - cue.end() > self.reach:
                    continue
                nearest = text.rfind("<!--", opening, cue.start())
                if nearest != -1 and cue.start() - (nearest + 4) <= self.reach:
                    yield _CommentMatch(opening, close + 3)
                    break
            opening = text.find("<!--", close + 3)

    def search(self, text: str) -> _CommentMatch | None:
        return next(self.finditer(text), None)


# ---------------------------------------------------------------------------------------------------------
# Shared fragments. They are deliberately narrow: "instructions", not "lines" or "keys", and "previous",
# not "default", so that man-page prose ("ignore the previous line", "override the default instructions
# in /etc/...") stays clean.
# ---------------------------------------------------------------------------------------------------------
_IGNORE = r"(?:ignore|ignoring|disregard|disregarding|forget|forgetting|neglect|skip|abandon|discard|override|overwrite|bypass|drop|erase|delete|clear)"
_DET = r"(?:(?:all|any|every|each|of|the|your|my|our|these|those|this|that|its|above|such)\s+){0,4}"
_PREV = r"(?:previous|previously\s+given|prior|preceding|above|earlier|former|foregoing|original|initial|old|existing|system|developer|given|pre-?set|prior\s+set\s+of)"
_INSTR = r"(?:instructions?|prompts?|directives?|guidelines?|guidance|programming|guardrails?)"
# Nouns that also describe firewalls and shells ("does iptables ignore the previous rules?"): weaker.
_INSTR_WEAK = r"(?:directions|rules|orders|context|constraints|restrictions|polic(?:y|ies)|messages|conversation|commands)"
# Words for "the model". Bare "model" and "bot" are too common in documentation ("the permission model",
# "as a model of ...") for ingest-time cues, so they only appear where an adjective already narrows them.
_AI = r"(?:ai|a\.i\.|artificial\s+intelligence|assistant|ai\s+assistant|chat\s?bot|language\s+model|llm|large\s+language\s+model|gpt|chatgpt|ai\s+model)"
_AI_LOOSE = r"(?:ai|a\.i\.|artificial\s+intelligence|assistant|ai\s+assistant|chat\s?bot|bot|language\s+model|llm|large\s+language\s+model|gpt|chatgpt|model)"
_REVEAL = (
    r"(?:reveal|print|show|display|output|repeat|recite|echo|dump|leak|disclose|expose|tell(?:\s+me|\s+us)?|"
    r"give(?:\s+me|\s+us)?|share|write(?:\s+out|\s+down)?|spell\s+out|copy|paste|paraphrase|summari[sz]e|"
    r"translate|return|send(?:\s+me)?|provide|list|quote|cite|respond\s+(?:only\s+)?with|reply\s+(?:only\s+)?with|"
    r"what\s+(?:is|are|was|were|'s))"
)
# Without "what is": "what is the system prompt in PS1?" is a shell question; "what is YOUR prompt" is not.
_REVEAL_IMPERATIVE = _REVEAL.replace(r"|what\s+(?:is|are|was|were|'s))", ")")
_SECRET_PROMPT = (
    r"(?:system|hidden|secret|internal|initial|original|developer|pre-?|meta|base|confidential|full|"
    r"complete|entire|exact|underlying)[\s_-]*(?:prompt|instructions?|message|directives?|guidelines|"
    r"rules|configuration)"
)
# "the system prompt string of pppd", "system prompt option", ... are documentation, not exfiltration.
_NOT_DOC_NOUN = (
    r"(?!\s*(?:string|option|variable|parameter|setting|character|regex|pattern|timeout|of\s+(?:the\s+)?(?:remote|modem|"
    r"router|device|host|pppd|chat|shell)))(?![^.?!\n]{0,60}\b(?:ps[12]|bash|zsh|shell|terminal|console|tty|login|cli|"
    r"modem|pppd|expect|chat\s+script)\b)"
)
_RESTRICTED = (
    r"(?:restricted|confidential|classified|secret|top[\s-]?secret|internal[\s-]only|private|hidden|"
    r"protected|sensitive|locked|privileged|other\s+(?:users?'?s?|people'?s?|teams?'?s?|departments?'?s?))"
)
_DOCS = r"(?:documents?|docs|files?|records|data|information|content|chunks|passages|pages|reports?|runbooks?|sops?|entries)"
_ADMIN_ROLE = (
    r"(?:system\s+)?(?:admin|administrator|sysadmin|root(?:\s+user)?|superuser|super\s+user|owner|developer|"
    r"creator|ceo|cto|ciso|security\s+(?:officer|team|admin)|it\s+(?:admin|manager|director)|dba|"
    r"supervisor|auditor|compliance\s+officer|moderator)"
)
_SECRET_DATA = (
    r"(?:conversation|chat(?:\s+history)?|history|(?:the|this|your)\s+(?:answer|response|reply)|system\s+prompt|"
    r"prompt|instructions|credentials?|passwords?|api[\s_-]?keys?|secrets?|(?:access\s+|auth\s+)?tokens?|"
    r"session(?:\s+id)?|cookies?|user(?:name)?s?(?:'s)?\s+(?:data|info|information|details|emails?)|personal\s+data|"
    r"documents?|context|previous\s+messages|everything|all\s+(?:the\s+)?(?:data|information|text|messages))"
)
# Data an attacker wants out of the session (no generic "context" or "documents": docs say "add context
# such as a link").
_SECRET_DATA_STRICT = (
    r"(?:conversation|chat(?:\s+history)?|(?:chat|conversation)\s+history|system\s+prompt|credentials?|passwords?|"
    r"api[\s_-]?keys?|secrets?|(?:access\s+|auth\s+|session\s+)?tokens?|session\s+ids?|cookies?|previous\s+messages|"
    r"user(?:name)?s?(?:'s)?\s+(?:data|info|information|details|emails?|passwords?|tokens?))"
)
_SINK = (
    r"(?:https?://|ftp://|www\.|[\w.+-]+@[\w-]+\.[\w.]+|(?:(?:an?|the|this|that|my|our|following|"
    r"external|remote|attacker'?s?)\s+){1,3}(?:url|link|endpoint|webhook|server|address|domain|email|inbox))"
)
_PLACEHOLDER = r"(?:\{[^}\s]{1,40}\}|<[^>\s]{1,40}>|\$\{?\w+|%s|\[[A-Z_ ]{2,40}\]|\{\{)"

PATTERNS: tuple[InjectionPattern, ...] = (
    # --- instruction override ----------------------------------------------------------------------------
    _p(
        "override.ignore_previous_instructions",
        "instruction_override",
        rf"\b{_IGNORE}\s+{_DET}{_PREV}\s+(?:[a-z]+\s+)?{_INSTR}\b",
    ),
    _p(
        "override.ignore_previous_rules",
        "instruction_override",
        rf"\b{_IGNORE}\s+{_DET}{_PREV}\s+(?:[a-z]+\s+)?{_INSTR_WEAK}\b",
        0.5,
        0.25,
    ),
    _p(
        "override.ignore_all_previous_instructions",
        "instruction_override",
        rf"\b{_IGNORE}\s+(?:all|any|every)\s+(?:of\s+)?(?:the\s+|your\s+|my\s+)?(?:previous|prior|preceding|earlier|above)\s+(?:[a-z]+\s+)?(?:instructions?|prompts?|directives?|guidelines)\b",
        1.0,
        1.0,
    ),
    _p(
        "override.ignore_your_instructions",
        "instruction_override",
        r"\b(?:ignore|disregard|forget|override|bypass|abandon|discard)\s+(?:all\s+(?:of\s+)?)?your\s+(?:previous\s+|prior\s+|original\s+|initial\s+|current\s+|system\s+|safety\s+)*(?:instructions?|programming|guidelines|rules|directives|system\s+prompt|training|prompt|constraints|restrictions|filters|guardrails)\b",
        1.0,
        1.0,
    ),
    _p(
        "override.ignore_instructions_above",
        "instruction_override",
        rf"\b{_IGNORE}\s+{_DET}(?:instructions?|prompts?|directives?|guidelines)\s+(?:above|before\s+this|given\s+(?:above|before|earlier|previously)|(?:that\s+)?you\s+(?:were|have\s+been)\s+given|from\s+(?:before|earlier|your\s+(?:developers?|creators?)))",
    ),
    _p(
        "override.ignore_everything_above",
        "instruction_override",
        rf"\b{_IGNORE}\s+(?:everything|anything|all)\s+(?:(?:that\s+)?(?:was|you\s+were|i|we|you've\s+been|you\s+have\s+been)\s+(?:\w+\s+){{0,2}})?(?:above|before(?!\s+\w+ing)|prior|previously|so\s+far|until\s+now|earlier)\b",
    ),
    _p(
        "override.forget_what_you_were_told",
        "instruction_override",
        r"\b(?:ignore|disregard|forget|discard)\s+(?:everything|anything|all|what(?:ever)?)\s+(?:that\s+)?(?:you\s+(?:were|have\s+been|'ve\s+been|got)\s+(?:told|given|instructed|taught|asked|programmed)|i\s+(?:said|told\s+you)|was\s+said|(?:your\s+)?(?:developers?|creators?|admins?)\s+(?:said|told\s+you))",
        1.0,
        0.5,
    ),
    _p(
        "override.ignore_the_above_and",
        "instruction_override",
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+of\s+)?the\s+(?:above|previous|prior|preceding)\s*(?:,|and|\.|;)\s*(?:instead\s+)?(?:say|print|output|respond|reply|write|tell|reveal|repeat|answer|return|act|pretend|you)\b",
        1.0,
        1.0,
    ),
    _p(
        "override.do_not_follow_instructions",
        "instruction_override",
        r"\b(?:do\s+not|don't|dont|stop|no\s+longer|cease\s+to)\s+(?:follow|obey|adhere\s+to|comply\s+with|respect)(?:ing)?\s+(?:your|the|any)\s+(?:previous\s+|prior\s+|original\s+|system\s+|initial\s+)*(?:instructions|rules|guidelines|directives|system\s+prompt|programming)\b",
    ),
    _p(
        "override.new_instructions_header",
        "instruction_override",
        r"(?:^|[\s\[(*#>-])(?:new|updated|revised|real|actual|true|secret|hidden|additional|important|urgent)\s+(?:system\s+)?(?:instructions?|directives?|task|orders|rules)\s*[:\]!-]",
    ),
    _p(
        "override.instructions_void",
        "instruction_override",
        r"\b(?:the\s+)?(?:above|previous|prior|earlier|original|old|system)\s+(?:instructions?|prompt|rules|directives|guidelines)\s+(?:are|were|is|was|have\s+been|has\s+been)\s+(?:now\s+)?(?:void|null|cancel+ed|obsolete|revoked|superseded|replaced|deprecated|no\s+longer\s+(?:valid|apply|applicable|in\s+effect))",
    ),
    _p(
        "override.your_new_task",
        "instruction_override",
        r"\byour\s+(?:new|real|actual|true|only|primary|sole)\s+(?:task|instructions?|goal|objective|purpose|role|job|mission|directive|persona|identity|name)\s+(?:is|are|will\s+be|:)",
        1.0,
        1.0,
    ),
    _p(
        "override.from_now_on",
        "instruction_override",
        r"\b(?:from\s+now\s+on|from\s+this\s+point(?:\s+on(?:wards?)?)?|henceforth|for\s+the\s+rest\s+of\s+(?:this|the)\s+(?:conversation|chat|session))\s*,?\s+(?:(?:you|your|the\s+(?:assistant|ai|model|bot))\s+(?:will|must|are|shall|should|can|have\s+to|need\s+to|answer|respond|reply|act|only)|(?:respond|answer|reply|act|behave|speak|ignore|do\s+not|don't|never|always)\b)\b",
    ),
    _p(
        "override.you_are_now",
        "persona_override",
        rf"\byou(?:\s+are|'re)\s+(?:now|no\s+longer|henceforth|from\s+now\s+on)\s+(?:an?\s+|the\s+|my\s+|in\s+|acting\s+as\s+)?(?:(?:new|different|unrestricted|unfiltered|uncensored|jailbroken|evil|free|rogue|independent|sentient|unbound|limitless|helpful)\s+)*(?:dan\b|{_AI_LOOSE}\b|(?:developer|god|dan|jailbreak|jailbroken|unrestricted|unfiltered|opposite|evil|chaos)\s+mode|(?:bound|restricted|limited|constrained)\s+by|free\s+(?:of|from)|able\s+to\s+(?:do\s+anything|ignore|bypass))",
        1.0,
        1.0,
    ),
    _p(
        "override.renamed_persona",
        "persona_override",
        r"\byou(?:\s+are|'re)\s+no\s+longer\s+(?-i:[A-Z][\w-]+)(?:\s*[.,;!]|\s+(?:but|and|from|anymore))|\byou(?:\s+are|'re)\s+(?:now\s+)?(?:called|named|renamed\s+to)\s+\w+|\byour\s+(?:new\s+)?name\s+is\s+(?:now\s+)?\w+",
        1.0,
        0.5,
    ),
    _p(
        "override.act_as_ai",
        "persona_override",
        rf"\b(?:act|behave|respond|answer|operate|function)\s+(?:as|like)\s+(?:an?\s+|the\s+|my\s+)?(?:(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|different|new|malicious|amoral|unethical|unaligned|free|limitless|hacked|compromised)\s+)+(?:{_AI_LOOSE}|version|persona|character|entity)\b",
        1.0,
        1.0,
    ),
    _p(
        "override.act_as_if_no_rules",
        "persona_override",
        r"\b(?:act|behave|respond|answer)\s+as\s+(?:if|though)\s+(?:you\s+(?:have|had|are|were|did)|there\s+(?:are|were|is|was))\s+(?:no|not|free\s+(?:of|from)|without|never)\s+(?:\w+\s+){0,2}(?:restrictions?|rules|filters?|guidelines|limits|limitations|constraints|policies|programming|instructions|bound|restricted|censored|filtered|an?\s+ai)",
        1.0,
        1.0,
    ),
    _p(
        "override.act_as_dan",
        "jailbreak",
        r"\b(?:act|behave|respond|answer|role-?play|pretend\s+to\s+be)\s+(?:as|like)?\s*(?-i:DAN|STAN|DUDE|AIM|KEVIN|BetterDAN|APOPHIS)\b",
        1.0,
        1.0,
    ),
    _p(
        "override.pretend",
        "persona_override",
        rf"\bpretend(?:ing)?\s+(?:that\s+)?(?:you\s+are|you're|youre|to\s+be|you\s+have|you\s+had|you\s+(?:do\s+not|don't)\s+have)\s+(?:an?\s+|the\s+|my\s+|no\s+)?(?:(?:unrestricted|unfiltered|uncensored|evil|different|real|human|jailbroken|rogue|new)\s+)*(?:{_AI_LOOSE}|human|person|dan|admin|administrator|root|developer|system|hacker|restrictions?|rules|filters?|guidelines|limits|limitations|feelings|opinions|grandm(?:a|other))\b",
        1.0,
        0.5,
    ),
    _p(
        "override.pretend_no_rules",
        "persona_override",
        r"\b(?:pretend|act\s+as\s+if)\s+(?:that\s+)?(?:there\s+(?:are|is|were)\s+no\s+(?:content\s+|safety\s+|ethical\s+|usage\s+)?(?:rules|restrictions|filters|polic(?:y|ies)|guidelines|limits|access\s+controls?|guardrails)|the\s+(?:rules|restrictions|filters|polic(?:y|ies)|guidelines|access\s+controls?)\s+(?:don't|do\s+not|no\s+longer)\s+apply)\b",
        1.0,
        0.5,
    ),
    _p(
        "override.switch_persona",
        "persona_override",
        r"\b(?:switch|change|transform|turn)\s+(?:yourself\s+)?(?:to|into)\s+(?:an?\s+)?(?:new\s+|different\s+|unrestricted\s+|evil\s+)+(?:persona|character|role|personality|identity|assistant|ai|mode)\b",
        0.5,
        0.25,
    ),
    _p(
        "override.simulate_unrestricted",
        "persona_override",
        rf"\b(?:simulate|emulate|impersonate|roleplay|role-play|role\s+play|become|play)\s+(?:as\s+)?(?:an?\s+|the\s+)?(?:(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|malicious|amoral|unaligned|hypothetical)\s+)+{_AI_LOOSE}\b",
        1.0,
        1.0,
    ),
    # --- jailbreak -----------------------------------------------------------------------------------------
    _p(
        "jailbreak.dan",
        "jailbreak",
        r"(?-i:\bDAN\b)\s*(?:mode|prompt|jailbreak|v?\d+(?:\.\d+)?\b)|\b(?:you\s+are|as|become|called|named)\s+(?-i:DAN)\b|\bdo\s+anything\s+now\b|\bstay\s+in\s+character\b",
        1.0,
        1.0,
    ),
    _p("jailbreak.keyword", "jailbreak", r"\bjail\s?br(?:eak|oken|eaking|eaks)\b", 0.5, 0.25),
    _p(
        "jailbreak.prompt",
        "jailbreak",
        r"\bjail\s?break(?:ing)?\s+(?:mode|prompt|the\s+(?:ai|assistant|model|bot|llm|chatbot)|yourself|you)\b|\b(?:enable|activate|enter|unlock|engage)\s+(?:the\s+)?jail\s?break\b",
        1.0,
        1.0,
    ),
    _p(
        "jailbreak.developer_mode",
        "jailbreak",
        r"\bdeveloper\s+mode\s+(?:enabled|activated|output|response)\b|\((?:developer\s+mode|dev\s+mode)\s+output\)|\b(?:simulate|emulate)\s+(?:developer|dev)\s+mode\b|\b(?:chatgpt|gpt|assistant|ai|you)\s+(?:with|in)\s+(?:developer|dev|god)\s+mode\b|\b(?:god|dan|opposite|chaos|evil)\s+mode\s+(?:enabled|activated|on)\b",
        1.0,
        1.0,
    ),
    _p(
        "jailbreak.no_restrictions",
        "jailbreak",
        r"\byou\s+(?:have|has|now\s+have|are\s+under)\s+no\s+(?:\w+\s+)?(?:restrictions|rules|limits|limitations|filters|guidelines|boundaries|constraints|ethical\s+guidelines|content\s+polic(?:y|ies)|morals|ethics)\b|\b(?:free|freed|released|liberated)\s+(?:from|of)\s+(?:all\s+|any\s+|your\s+)*(?:restrictions|rules|limitations|filters|guidelines|constraints|programming|content\s+polic(?:y|ies)|ethical\s+guidelines)\b",
        1.0,
        0.5,
    ),
    _p(
        "jailbreak.unfiltered_ai",
        "jailbreak",
        rf"\b(?:unfiltered|uncensored|unrestricted|unaligned|unbiased\s+and\s+unfiltered|amoral)\s+(?:{_AI}|responses?|answers?|version\s+of\s+(?:yourself|you|the\s+(?:ai|assistant|model)))\b",
        1.0,
        1.0,
    ),
    _p("jailbreak.god_mode", "jailbreak", r"\b(?:god|dan|jailbreak|opposite|evil|chaos)\s+mode\b", 1.0, 0.5),
    _p(
        "jailbreak.refusal_suppression",
        "jailbreak",
        r"\b(?:never|do\s+not|don't|dont|must\s+not|cannot|can't|will\s+not|won't)\s+(?:refuse|decline|reject|deny)\s+(?:to\s+answer|any\s+(?:request|question|prompt)s?|my\s+(?:request|question)s?|to\s+(?:comply|respond|help))\b|\b(?:answer|respond|reply|write|output|speak|talk)\w*\s+(?:\w+\s+){0,4}?(?:without|with\s+no)\s+(?:any\s+)?(?:warnings?|disclaimers?|refusals?|caveats?|moraliz\w*|moralis\w*|ethical\s+\w+|filters?|censorship|restrictions|limits|limitations|rules)\b|\b(?:no|skip\s+(?:the|any|all))\s+(?:disclaimers?|refusals?|moraliz\w*|moralis\w*)\b",
        1.0,
        0.5,
    ),
    _p(
        "jailbreak.grandma",
        "jailbreak",
        r"\b(?:dead|deceased|late|dying)\s+grandm(?:a|other)\s+(?:who\s+|that\s+)?(?:used\s+to|would|always)\b",
        1.0,
        0.5,
    ),
    _p(
        "jailbreak.roleplay_game",
        "jailbreak",
        r"\blet'?s\s+(?:play\s+a\s+(?:game|role)|role-?\s?play|pretend)\b|\bin\s+this\s+(?:hypothetical|fictional)\s+(?:story|scenario|world|universe),?\s+(?:you|the\s+(?:ai|assistant))\b",
        0.5,
        0.25,
    ),
    # --- system prompt / tool exfiltration -----------------------------------------------------------------
    _p(
        "exfil.reveal_your_prompt",
        "prompt_exfiltration",
        rf"\b{_REVEAL}\s+(?:me\s+|us\s+)?(?:all\s+(?:of\s+)?)?(?:(?:the\s+)?(?:full\s+|entire\s+|complete\s+|exact\s+|raw\s+|whole\s+)?(?:text|contents?|wording|words)\s+of\s+)?(?:your|yer|ur)\s+(?:\w+\s+){{0,2}}(?:{_SECRET_PROMPT}|prompts?|instructions|rules|guidelines|directives|programming|initial\s+message|configuration|context\s+window|pre-?prompt)\b",
        1.0,
        1.0,
    ),
    _p(
        "exfil.reveal_system_prompt",
        "prompt_exfiltration",
        rf"\b{_REVEAL_IMPERATIVE}\s+(?:me\s+|us\s+)?(?:all\s+(?:of\s+)?)?(?:the|its|this|that)?\s*(?:\w+\s+)?{_SECRET_PROMPT}\b{_NOT_DOC_NOUN}",
        1.0,
        0.5,
    ),
    _p(
        "exfil.system_prompt_mention",
        "prompt_exfiltration",
        r"\b(?:system|hidden|secret|initial|developer)\s*[-_ ]?prompt\b(?!\s*(?:string|option|variable|parameter|setting|character|regex|pattern|timeout|of\s+(?:the\s+)?(?:remote|modem|router|device|host|pppd|chat|shell)))",
        0.5,
        0.0,
    ),
    _p(
        "exfil.repeat_above",
        "prompt_exfiltration",
        r"\b(?:repeat|print|output|copy|echo|recite|write|type|reproduce)\s+(?:out\s+)?(?:back\s+)?(?:everything|all|the\s+(?:text|words|content|messages?|instructions|lines)|all\s+(?:the\s+)?(?:text|words|messages))\s+(?:above|before\s+(?:this|my)|preceding|prior\s+to\s+(?:this|my))\b(?:.{0,40}(?:verbatim|word\s+for\s+word|starting\s+with|beginning\s+with|in\s+(?:a\s+)?code\s*block|exactly))?",
        1.0,
        0.5,
    ),
    _p(
        "exfil.instructions_you_received",
        "prompt_exfiltration",
        rf"\b{_REVEAL}\s+(?:me\s+|us\s+)?(?:the\s+|all\s+(?:the\s+)?|any\s+)?(?:\w+\s+)?(?:instructions|prompts?|rules|guidelines|directives|messages?)\s+(?:that\s+)?you\s+(?:received|were\s+given|got|have\s+been\s+given|were\s+told|are\s+following|follow|operate\s+under|were\s+trained\s+with)\b",
        1.0,
        0.5,
    ),
    _p(
        "exfil.whats_in_your_prompt",
        "prompt_exfiltration",
        r"\bwhat(?:'s|\s+is|\s+does|\s+was)\s+(?:written\s+|said\s+|stated\s+|contained\s+)?(?:in|inside|within)\s+your\s+(?:\w+\s+)?(?:prompt|instructions|rules|guidelines|system\s+message|configuration|context|directives)\b",
        1.0,
        1.0,
    ),
    _p(
        "exfil.verbatim_instructions",
        "prompt_exfiltration",
        r"\b(?:verbatim|word\s+for\s+word|exactly\s+as\s+(?:written|given)|in\s+full)\b.{0,40}\b(?:instructions|prompt|rules|guidelines)\b|\b(?:instructions|prompt|rules|guidelines)\s+(?:you\s+were\s+given\s+)?(?:verbatim|word\s+for\s+word)\b",
        1.0,
        0.5,
    ),
    _p(
        "exfil.initial_prompt",
        "prompt_exfiltration",
        r"\b(?:what\s+(?:was|is|were)|tell\s+me|repeat|print|show(?:\s+me)?)\s+(?:the\s+|your\s+)?(?:first|initial|original|very\s+first|opening)\s+(?:prompt|instructions?|message|text|thing)s?\s+(?:you\s+(?:were|have\s+been)\s+(?:given|told|shown|sent)|(?:in|of)\s+(?:this|the|our)\s+(?:conversation|chat|context|session)|given\s+to\s+you|above)",
        1.0,
        0.5,
    ),
    _p(
        "exfil.tool_descriptions",
        "prompt_exfiltration",
        r"\b(?:reveal|print|show|display|output|repeat|dump|list|describe|tell\s+me|give\s+me|enumerate|what\s+are)\s+(?:me\s+)?(?:all\s+(?:of\s+)?)?your\s+(?:available\s+|internal\s+|hidden\s+)?(?:tools?|functions?|plugins?|apis|capabilities|actions)(?:\s+(?:descriptions?|definitions?|schemas?|specs?|signatures?|list))?\b|\b(?:reveal|print|show|dump|output|repeat)\s+(?:the\s+)?(?:tool|function|plugin)\s+(?:descriptions?|definitions?|schemas?|specifications)\b",
        1.0,
        0.5,
    ),
    _p(
        "exfil.conversation_start",
        "prompt_exfiltration",
        r"\b(?:everything|all\s+(?:the\s+)?text|what\s+(?:was|is)\s+written|the\s+text)\s+(?:before|above)\s+(?:this|my|our)\s+(?:message|question|conversation|prompt)\b|\b(?:beginning|start)\s+of\s+(?:this|the|our)\s+(?:conversation|chat|context(?:\s+window)?|prompt)\b",
        0.5,
        0.25,
    ),
    _p(
        "exfil.how_were_you_instructed",
        "prompt_exfiltration",
        r"\b(?:how|what)\s+(?:were|have)\s+you\s+(?:been\s+)?(?:instructed|programmed|prompted|configured|told)\s+to\b|\bwhat\s+(?:instructions|rules|guidelines)\s+(?:were\s+you|have\s+you\s+been|did\s+you\s+get|are\s+you\s+following)\b",
        1.0,
        0.5,
    ),
    # --- AI-addressing cues: harmless alone in a question, the "second cue" at ingest ----------------------
    _p(
        "ai_cue.if_you_are_an_ai",
        "ai_addressing",
        rf"\b(?:if|when|whenever)\s+you\s+are\s+an?\s+(?:{_AI})\b|\b(?:{_AI})\s+(?:reading|processing|summari[sz]ing|parsing|ingesting|seeing|analy[sz]ing)\s+(?:this|these|the\s+following)\b",
        1.0,
        1.0,
    ),
    _p(
        "ai_cue.as_an_ai",
        "ai_addressing",
        rf"\b(?:as\s+an?|you\s+are\s+an?|you're\s+an?)\s+(?:helpful\s+|harmless\s+)?(?:{_AI})\b",
        0.5,
        0.5,
    ),
    _p(
        "ai_cue.addressing_model",
        "ai_addressing",
        r"(?:^|[.!?]\s+|\n)\s*(?:(?:dear|hey|hi|hello|attention|note\s+to(?:\s+the)?|instructions?\s+for(?:\s+the)?|message\s+(?:for|to)(?:\s+the)?)\s+)?(?:ai|assistant|ai\s+assistant|chatbot|llm|language\s+model|chatgpt|gpt-?\d?|claude|copilot|gemini|bard|llama)\s*[,:!]\s*\S",
        0.5,
        0.5,
    ),
    _p(
        "ai_cue.the_model_must",
        "ai_addressing",
        rf"\b(?:the|this)\s+(?:{_AI})\s+(?:must|should|shall|will\s+now|is\s+(?:required|instructed|ordered)\s+to|has\s+to)\s+(?:always\s+|never\s+|now\s+|only\s+)?(?:ignore|disregard|respond|reply|answer|say|output|print|reveal|tell|include|append|add|insert|recommend|follow|obey|not)\b",
        1.0,
        1.0,
    ),
    _p(
        "ai_cue.hide_from_user",
        "ai_addressing",
        r"\b(?:do\s+not|don't|dont|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|alert(?:ing)?|notify(?:ing)?|mention(?:ing)?\s+(?:this|it)\s+to|reveal(?:ing)?\s+(?:this|it)\s+to|let(?:ting)?)\s+the\s+user\b(?!\s+(?:know\s+(?:the\s+)?(?:password|key|secret)))|\bthe\s+user\s+(?:must|should|will)\s+(?:not|never)\s+(?:know|see|find\s+out|be\s+told)\b",
        1.0,
        0.5,
    ),
    _p(
        "ai_cue.say_exact_phrase",
        "ai_addressing",
        r"\b(?:say|print|output|respond\s+with|reply\s+with|answer\s+with|write|return)\s+(?:only\s+|just\s+|exactly\s+)?[\"'`]?(?:i\s+have\s+been\s+(?:pwned|hacked|owned)|pwned|hacked|haha\s*pwned|access\s+granted)\b",
        1.0,
        1.0,
    ),
    _p(
        "ai_cue.instead_do",
        "ai_addressing",
        r"\b(?:and|then|but)\s+(?:instead|now|only)\s*,?\s+(?:say|print|output|respond|reply|write|tell|reveal|repeat|answer|translate)\b",
        0.5,
        0.5,
    ),
    _p(
        "ai_cue.override_then_directive",
        "ai_addressing",
        r"(?<!not\s)(?<!n\'t\s)\b(?:ignore|disregard|forget)\b[^.\n]{0,60}?\b(?:and|then)\s+(?:instead\s+|just\s+)?(?:say|print|output|respond|reply|answer\s+with|reveal|tell\s+me|write|repeat|act\s+as|pretend)\b",
        0.5,
        0.5,
    ),
    _p(
        "ai_cue.respond_only_with",
        "ai_addressing",
        r"\b(?:respond|reply|answer)\s+(?:only|solely|exclusively)\s+(?:with|in|using)\s+[\"'`]",
        0.5,
        0.5,
    ),
    _p(
        "ai_cue.this_is_for_the_model",
        "ai_addressing",
        rf"\b(?:this|these|the\s+following)\s+(?:is|are)\s+(?:an?\s+)?(?:instructions?|message|note|directive|command)s?\s+(?:for|to)\s+(?:the\s+|any\s+)?(?:{_AI})\b",
        1.0,
        1.0,
    ),
    _p(
        "ai_cue.summary_manipulation",
        "ai_addressing",
        r"\bwhen\s+(?:you\s+are\s+)?(?:asked|summari[sz]ing|answering|responding|questioned)\b.{0,60}\b(?:you\s+(?:must|should|will)|always)\s+(?:say|respond|reply|answer|recommend|claim|state|tell)\b",
        1.0,
        0.5,
    ),
    # --- role / delimiter injection ------------------------------------------------------------------------
    _p(
        "role.chatml_token",
        "role_injection",
        r"<\|\s*(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|end_of_text|eom_id|fim_\w+|pad|sep|tool|ipython)\s*\|>",
        1.0,
        1.0,
    ),
    _p("role.llama_inst", "role_injection", r"(?-i:\[/?INST\])", 1.0, 1.0),
    _p("role.llama_sys", "role_injection", r"<</?SYS>>", 1.0, 1.0),
    _p(
        "role.sentence_tags",
        "role_injection",
        r"</s>\s*(?:<s>|\[INST\]|(?:system|assistant|user|human)\s*:)|<s>\s*\[INST\]",
        1.0,
        1.0,
    ),
    _p("role.bare_eos_tag", "role_injection", r"</s>|<\|endoftext\|>", 0.5, 0.0),
    _p(
        "role.markdown_role_header",
        "role_injection",
        r"^\s*#{2,}\s*(?:system|instructions?|response|assistant|user|human|input|output)\s*(?:prompt|message)?\s*:?\s*$",
        1.0,
        0.25,
    ),
    _p(
        "role.fake_assistant_turn",
        "role_injection",
        r"(?:^|\n)\s*(?:assistant|ai\s+assistant|chatbot|gpt|chatgpt|model|bot)\s*:\s*\S",
        1.0,
        0.0,  # ai_cue.addressing_model already counts the same "Assistant:" at ingest
    ),
    _p(
        "role.fake_system_turn",
        "role_injection",
        rf"(?:^|[\n.!?]\s*|\s)(?:system|developer|admin|root|sys)\s*(?:message|prompt|note|override|notice)?\s*:\s*(?:you\s+are|you're|ignore|disregard|forget|new\s+(?:instructions|rules|task)|from\s+now|override|the\s+(?:user|assistant|ai|model)|as\s+an?\s+{_AI}|respond|reply|always|never)\b",
        1.0,
        0.5,  # commit-style prefixes ("admin: ignore all of gnulib-tests") are common in changelogs
    ),
    _p(
        "role.fake_system_turn_ai",
        "role_injection",
        rf"(?:^|[\n.!?]\s*)(?:system|developer)\s*(?:message|prompt)?\s*:\s*(?:you\s+are|you're)\s+(?:now\s+)?(?:an?\s+|the\s+)?(?:\w+\s+){{0,2}}?{_AI}\b|\b(?:system|developer)\s+(?:message|prompt|override)\s*:",
        1.0,
        1.0,
    ),
    _p(
        "role.turn_sequence",
        "role_injection",
        r"(?:^|\n)\s*(?:human|user)\s*:[^\n]{0,400}\n\s*(?:assistant|ai|bot)\s*:",
        1.0,
        1.0,
    ),
    _p(
        "role.json_role",
        "role_injection",
        r"[\"']role[\"']\s*:\s*[\"'](?:system|developer|assistant)[\"']",
        0.5,
        0.0,
    ),
    _p(
        "role.prompt_xml_tag",
        "role_injection",
        r"</?\s*(?:system_prompt|system-prompt|sys_prompt|systemprompt|hidden_instructions|admin_instructions|developer_instructions|im_start|assistant_response|user_query)\s*>",
        1.0,
        1.0,
    ),
    _p(
        "role.generic_xml_tag",
        "role_injection",
        r"</?\s*(?:system|instructions?|sys|admin|developer)\s*>",
        0.5,
        0.0,
    ),
    _p(
        "role.bracket_system",
        "role_injection",
        r"[\[({](?:system|admin|developer|sys|root|operator)(?:\s+(?:message|note|override|prompt|instruction)s?)?[\])}]\s*:?\s*(?:you|ignore|disregard|forget|new|override|bypass|from\s+now|always|never|show|give|list|reveal|print|grant|dump|the\s+(?:assistant|ai|model|user))\b",
        1.0,
        1.0,
    ),
    _p(
        "role.override_prefix",
        "role_injection",
        r"(?:^|\n)\s*(?:override|sudo|admin\s+mode|debug\s+mode|god\s+mode|maintenance\s+mode)\s*:",
        0.5,
        0.0,
    ),
    _p(
        "priv.config_assignment",
        "privilege_claim",
        r"\b(?:access[_\s-]?(?:tier|level)|clearance(?:[_\s-]?level)?|is[_\s-]?admin)\s*[=:]\s*[\"']?(?:confidential|restricted|admin(?:istrator)?|root|true|top[_\s-]?secret|superuser|all|unrestricted)\b",
        0.5,
        0.0,
    ),
    _p(
        "role.end_of_prompt",
        "role_injection",
        r"\b(?:end\s+of\s+(?:the\s+)?(?:system\s+)?(?:prompt|instructions|context|user\s+input)|begin(?:ning)?\s+(?:of\s+)?(?:new|user|real|actual)\s+(?:prompt|instructions|input))\b|-{3,}\s*(?:end|begin)\s+(?:of\s+)?(?:system|prompt|instructions)\s*-{3,}",
        1.0,
        0.5,
    ),
    # --- data exfiltration ---------------------------------------------------------------------------------
    _p(
        "exfil_data.send_to_sink",
        "data_exfiltration",
        rf"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|submit|beacon|report|copy|append|attach|encode|embed|email|mail|pass|smuggle)\s+(?:[\w']+\s+){{0,4}}?{_SECRET_DATA}\b[^.\n]{{0,60}}?\b(?:to|into|at|via|in|on|through)\s+{_SINK}",
        1.0,
        0.5,
    ),
    _p(
        "exfil_data.markdown_image_beacon",
        "data_exfiltration",
        rf"!\[[^\]\n]{{0,200}}\]\(\s*<?https?://[^)\s]*[?&/=][^)\s]*{_PLACEHOLDER}",
        1.0,
        1.0,
    ),
    _p(
        "exfil_data.html_image_beacon",
        "data_exfiltration",
        rf"<img\b[^>]{{0,200}}\bsrc\s*=\s*[\"']?https?://[^\"'>\s]*[?&/=][^\"'>\s]*{_PLACEHOLDER}",
        1.0,
        1.0,
    ),
    _p(
        "exfil_data.render_image_instruction",
        "data_exfiltration",
        r"\b(?:render|display|show|output|include|embed|print|append|insert|add)\s+(?:the\s+following\s+|this\s+|an?\s+|the\s+)?(?:markdown\s+)?(?:image|img|pixel|tracking\s+pixel)\b.{0,80}\b(?:url|link|src|query|parameter|https?://)",
        1.0,
        0.5,
    ),
    _p(
        "exfil_data.data_in_url",
        "data_exfiltration",
        rf"\b(?:append|add|include|insert|put|encode|place)\s+(?:[\w']+\s+){{0,3}}?{_SECRET_DATA_STRICT}\s+(?:[\w']+\s+){{0,3}}?(?:in|into|to)\s+(?:the\s+|a\s+|an\s+)?(?:url|link|query(?:\s+string)?|query\s+parameter|parameter|image\s+(?:url|link|src))\b",
        1.0,
        1.0,
    ),
    _p(
        "exfil_data.fetch_and_follow",
        "data_exfiltration",
        r"\b(?:visit|open|fetch|browse\s+to|go\s+to|navigate\s+to|load|read|retrieve|download)\s+(?:this\s+|the\s+following\s+)?(?:url|link|page|website|site)?\s*:?\s*\S{0,200}?\s+(?:and|then)\s+(?:follow|execute|obey|carry\s+out|do\s+what|apply)\s+(?:the\s+|its\s+|any\s+)?(?:instructions|commands|directions|it\s+says)\b",
        1.0,
        1.0,
    ),
    _p(
        "exfil_data.tool_abuse",
        "data_exfiltration",
        r"\b(?:call|invoke|use|trigger|execute)\s+(?:the\s+|your\s+)?[\w.-]{1,40}\s+(?:tool|function|plugin|action)\s+(?:and|to)\s+(?:send|email|post|upload|delete|forward|transfer|exfiltrate|leak)\b",
        1.0,
        0.5,
    ),
    # --- privilege claims ----------------------------------------------------------------------------------
    _p(
        "priv.claim_role",
        "privilege_claim",
        rf"\b(?:i\s+am|i'm|im|this\s+is|speaking\s+as)\s+(?:the\s+|an\s+|a\s+|your\s+)?{_ADMIN_ROLE}\b",
        0.5,
        0.0,
    ),
    _p(
        "priv.claim_authorized",
        "privilege_claim",
        r"\b(?:i\s+am|i'm|im|i\s+have\s+been|user\s+is)\s+(?:fully\s+|officially\s+|now\s+)?(?:authori[sz]ed|cleared|permitted|allowed|entitled|approved|whitelisted|granted\s+(?:full\s+)?(?:access|permission|clearance))\s+(?:to\s+(?:see|view|read|access|get|know)|for\s+(?:all|restricted|confidential|classified))",
        0.5,
        0.0,
    ),
    _p(
        "priv.claim_clearance",
        "privilege_claim",
        r"\bi\s+(?:have|hold|got)\s+(?:top[\s-]?secret|secret|root|admin(?:istrator)?|superuser|full|elevated|unrestricted|unlimited|confidential|level\s+\d+)\s+(?:clearance|access|privileges?|rights|permissions?)\b|\b(?:(?:my\s+|i\s+have\s+)(?:security\s+)?(?:clearance|access\s+level|access\s+tier|permission\s+level|privilege\s+level|role)|(?:security\s+)?(?:clearance|access\s+level|access\s+tier|permission\s+level|privilege\s+level))\s*(?:is|=|:|of)\s*(?:top[\s-]?secret|secret|confidential|restricted|admin(?:istrator)?|root|superuser|level\s+\d+|maximum|full|elevated|unlimited)\b",
        0.5,
        0.0,
    ),
    _p(
        "priv.request_restricted_docs",
        "privilege_claim",
        rf"\b(?:show|give|grant|list|display|reveal|open|read|print|dump|return|send|fetch|provide|include|expose|tell\s+me|let\s+me\s+(?:see|read|view|access)|i\s+(?:want|need)\s+(?:to\s+see\s+)?)\s+(?:me\s+|us\s+)?(?:all\s+|every\s+|any\s+)?(?:of\s+)?(?:the\s+)?(?:\w+[\s-]+)?{_RESTRICTED}\s+(?:\w+\s+)?{_DOCS}\b",
        0.5,
        0.0,
    ),
    _p(
        "priv.from_restricted_docs",
        "privilege_claim",
        rf"\b(?:from|in|inside|out\s+of)\s+(?:the\s+|your\s+)?(?:\w+-)?{_RESTRICTED}\s+(?:\w+\s+)?{_DOCS}\b",
        0.5,
        0.0,
    ),
    _p(
        "priv.regardless_of_access",
        "privilege_claim",
        r"\b(?:regardless\s+of|irrespective\s+of|ignoring|without\s+(?:checking|regard\s+to|applying))\s+(?:my\s+|the\s+|their\s+|any\s+|user\s+)*(?:access(?:\s+(?:tier|level|rights|control|restrictions?))?|permissions?|clearance|acls?|authori[sz]ation|security\s+(?:tier|level|classification)|(?:access\s+)?tiers?)\b",
        0.5,
        0.0,
    ),
    _p(
        "priv.show_regardless_of_access",
        "privilege_claim",
        r"\b(?:show|give|list|display|reveal|print|dump|return|send|fetch|provide|tell|include|search)\b[^.?!\n]{0,60}?\b(?:regardless\s+of|irrespective\s+of|ignoring|bypassing)\s+(?:my\s+|the\s+|their\s+|any\s+|user\s+)*(?:access|permissions?|clearance|acls?|authori[sz]ation|security\s+(?:tier|level)|tiers?)\b",
        1.0,
        0.0,
    ),
    _p(
        "priv.dump_knowledge_base",
        "privilege_claim",
        r"\b(?:show|list|give|dump|return|print|display|enumerate|export|output)\s+(?:me\s+)?(?:all|every|each|the\s+(?:full|complete|entire|whole))\s+(?:of\s+the\s+)?(?:documents?|files?|chunks|records|sources|titles|passages|contents?)\s+(?:in|from|of|stored\s+in)\s+(?:the\s+|your\s+)?(?:knowledge\s*base|kb|database|index|corpus|vector\s+store|system|collection)",
        0.5,
        0.0,
    ),
    _p(
        "priv.bypass_access_control",
        "privilege_claim",
        r"\b(?:bypass|circumvent|get\s+around|work\s+around|sidestep|evade|skip|ignore|disable|override|turn\s+off|switch\s+off|lift|suspend)\s+(?:the\s+|your\s+|my\s+|all\s+|any\s+|these\s+)*(?:document\s+|kb\s+)?(?:access[\s-]?control(?:s|\s+lists?)?|acls?|permissions?(?:\s+checks?)?|authori[sz]ation(?:\s+checks?)?|access\s+(?:restrictions?|checks?|rules|levels?|tiers?)|(?:security|clearance)\s+(?:checks?|filters?|restrictions?|levels?))(?:\s+(?:filters?|checks?|rules?|lists?|restrictions?|layer))?\s+(?:and|to|so\s+(?:that\s+)?(?:i|you)\s+can|for\s+(?:me|this\s+(?:request|session|user|question)))\b",
        1.0,
        0.5,
    ),
    _p(
        "priv.disable_guardrails",
        "privilege_claim",
        r"\b(?:bypass|circumvent|ignore|disable|override|turn\s+off|switch\s+off|remove|deactivate|drop|suspend)\s+(?:all\s+)?(?:your|the\s+(?:assistant'?s?|ai'?s?|model'?s?|bot'?s?))\s+(?:\w+\s+)?(?:filters?|filtering|guard\s?rails?|safety(?:\s+(?:filters?|checks?|guidelines|features|settings))?|restrictions|content\s+polic(?:y|ies)|censorship|moderation|access\s+controls?|security\s+(?:checks?|rules))\b",
        1.0,
        1.0,
    ),
    _p(
        "priv.as_admin_demand",
        "privilege_claim",
        rf"\b(?:as|since|because)\s+(?:i\s+am|i'm|im)\s+(?:the\s+|an\s+|a\s+|your\s+)?{_ADMIN_ROLE}\s*,?\s+(?:you\s+(?:must|should|can|will|have\s+to)|i\s+(?:am\s+allowed|have\s+the\s+right|need\s+you|demand|order|command|can\s+see)|show|give|list|reveal|grant|let\s+me|ignore|bypass|override)\b",
        1.0,
        0.0,
    ),
    _p(
        "priv.elevate_me",
        "privilege_claim",
        r"\b(?:grant|give|elevate|escalate|upgrade|promote)\s+(?:me|my\s+(?:account|user|session|access|role))\s+(?:to\s+)?(?:admin(?:istrator)?|root|superuser|full|elevated|unrestricted|unlimited|confidential|restricted|top[\s-]?secret)(?:\s+(?:access|privileges?|rights|permissions?|clearance|tier|level))?\b",
        0.5,
        0.0,
    ),
    # --- hidden text ---------------------------------------------------------------------------------------
    _p(
        "hidden.html_comment_instruction",
        "hidden_text",
        HtmlCommentCue(
            rf"\b(?:{_AI})\b|system\s+prompt|\bignore\s+(?:all|previous|prior|the\s+above|your)\b|\bdisregard\b|do\s+not\s+(?:tell|reveal|mention)|you\s+are\s+now"
        ),
        1.0,
        1.0,
    ),
    _p(
        "hidden.html_comment_imperative",
        "hidden_text",
        HtmlCommentCue(
            r"\b(?:you\s+(?:must|should|will)|always\s+(?:say|answer|respond)|respond\s+with|instructions?\s*:)"
        ),
        0.5,
        0.0,
    ),
    _p(
        "hidden.markdown_comment_instruction",
        "hidden_text",
        # the cue after the opening quote is consumed rather than looked ahead to (RE2 has no look-ahead)
        rf"^\s*\[(?://|comment|hidden)\]\s*:\s*#\s*[\"'(][^\n]*(?:\b(?:{_AI})\b|system\s+prompt|ignore|disregard|instructions)",
        1.0,
        1.0,
    ),
    _p(
        "hidden.css_hidden_text",
        "hidden_text",
        r"style\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|pt|em|rem)?\b|opacity\s*:\s*0(?:\.0+)?\b|color\s*:\s*(?:white|#fff(?:fff)?|transparent)\b)",
        0.5,
        0.0,
    ),
    # --- obfuscation instructions --------------------------------------------------------------------------
    _p(
        "encoded.decode_and_follow",
        "encoded",
        r"\b(?:decode|base64[\s-]?decode|rot-?13|decipher|decrypt|unscramble|reverse|translate)\s+(?:this|the\s+following|it|the\s+(?:string|text|message|payload))?\s*(?:\([^)]{0,20}\)\s*)?(?:and|then|,)\s+(?:then\s+)?(?:follow|execute|run|obey|do\s+(?:what|as)|apply|carry\s+out|act\s+on)\b",
        1.0,
        0.5,
    ),
    # --- multilingual: "ignore previous instructions" / "reveal the system prompt" ------------------------
    # French
    _p(
        "multi.fr.ignore_instructions",
        "multilingual",
        r"\b(?:ignore[rz]?|oublie[rz]?|néglige[rz]?|ne\s+tiens\s+pas\s+compte\s+(?:de|des))\s+(?:toutes?\s+)?(?:les\s+|tes\s+|vos\s+|des\s+)?(?:instructions|consignes|directives)\s*(?:précédentes|antérieures|ci-dessus|d'avant|initiales|système)?",
        1.0,
        0.5,
    ),
    _p(
        "multi.fr.reveal_prompt",
        "multilingual",
        r"\b(?:révèle[rz]?|revele[rz]?|montre[rz]?|affiche[rz]?|donne[rz]?|répète[rz]?|dis)(?:-moi)?\s+(?:moi\s+)?(?:ton|votre|le|tes|vos|les)\s+(?:prompt|invite|instructions|consignes)\s+(?:système|systeme|initial(?:es)?|cachée?s?|secrète?s?)",
        1.0,
        0.5,
    ),
    # German
    _p(
        "multi.de.ignore_instructions",
        "multilingual",
        r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen\s+sie|missachte|übergehe)\s+(?:alle\s+|sämtliche\s+)?(?:deine\s+|ihre\s+|die\s+)?(?:vorherigen|bisherigen|vorigen|obigen|früheren|vorangegangenen|ursprünglichen)?\s*(?:anweisungen|instruktionen|vorgaben|anordnungen)",
        1.0,
        0.5,
    ),
    _p(
        "multi.de.reveal_prompt",
        "multilingual",
        r"\b(?:zeige?|zeigen\s+sie|verrate|verraten\s+sie|gib|geben\s+sie|nenne|wiederhole|enthülle)\s+(?:mir\s+)?(?:deinen|ihren|den|deine|ihre|die)\s+(?:system-?\s?prompt|systemaufforderung|systemanweisungen|versteckten\s+anweisungen|anfangsanweisungen)",
        1.0,
        0.5,
    ),
    # Spanish
    _p(
        "multi.es.ignore_instructions",
        "multilingual",
        r"\b(?:ignora|ignore|ignorar|ignoren|olvida|olvide|olvidar|olviden|descarta|haz\s+caso\s+omiso\s+de)\s+(?:todas\s+)?(?:las\s+|tus\s+|sus\s+)?(?:instrucciones|indicaciones|directrices)\s*(?:anteriores|previas|de\s+arriba|iniciales|del\s+sistema)?",
        1.0,
        0.5,
    ),
    _p(
        "multi.es.reveal_prompt",
        "multilingual",
        r"\b(?:revela|revele|muestra|muéstrame|muestrame|dime|repite|enséñame|imprime)\s+(?:me\s+)?(?:tu|su|el|las|tus)\s+(?:prompt|mensaje|indicaciones|instrucciones)\s+(?:del\s+|de\s+)?(?:sistema|ocultas|iniciales|secretas)",
        1.0,
        0.5,
    ),
    # Italian
    _p(
        "multi.it.ignore_instructions",
        "multilingual",
        r"\b(?:ignora|ignori|ignorare|dimentica|dimentichi|trascura|non\s+considerare)\s+(?:tutte\s+)?(?:le\s+|tue\s+|sue\s+)?(?:istruzioni|indicazioni|direttive)\s*(?:precedenti|di\s+prima|sopra|iniziali|di\s+sistema)?",
        1.0,
        0.5,
    ),
    _p(
        "multi.it.reveal_prompt",
        "multilingual",
        r"\b(?:rivela|mostra|mostrami|dimmi|ripeti|stampa)\s+(?:il\s+tuo\s+|il\s+suo\s+|il\s+|le\s+tue\s+|le\s+)?(?:prompt|istruzioni|messaggio)\s+(?:di\s+|del\s+)?(?:sistema|nascoste|iniziali|segrete)",
        1.0,
        0.5,
    ),
    # Portuguese
    _p(
        "multi.pt.ignore_instructions",
        "multilingual",
        r"\b(?:ignore|ignora|ignorar|ignorem|esqueça|esqueca|esquece|esquecer|desconsidere|desconsidera)\s+(?:todas\s+)?(?:as\s+|suas\s+|tuas\s+)?(?:instruções|instrucoes|orientações|diretrizes)\s*(?:anteriores|prévias|previas|acima|iniciais|do\s+sistema)?",
        1.0,
        0.5,
    ),
    _p(
        "multi.pt.reveal_prompt",
        "multilingual",
        r"\b(?:revele|revela|mostre|mostra|mostre-me|diga|diz|repita|imprima)\s+(?:me\s+)?(?:o\s+seu\s+|o\s+teu\s+|seu\s+|teu\s+|o\s+|as\s+suas\s+|as\s+)?(?:prompt|instruções|instrucoes|mensagem)\s+(?:do\s+|de\s+)?(?:sistema|ocultas|iniciais|secretas)",
        1.0,
        0.5,
    ),
    # Dutch
    _p(
        "multi.nl.ignore_instructions",
        "multilingual",
        r"\b(?:negeer|negeren|vergeet|vergeten|veronachtzaam)\s+(?:alle\s+)?(?:je\s+|jouw\s+|uw\s+|de\s+)?(?:vorige|eerdere|voorgaande|bovenstaande|oorspronkelijke)?\s*(?:instructies|aanwijzingen|richtlijnen)",
        1.0,
        0.5,
    ),
    _p(
        "multi.nl.reveal_prompt",
        "multilingual",
        r"\b(?:toon|laat|geef|onthul|herhaal|vertel)\s+(?:me\s+|mij\s+)?(?:je|jouw|uw|de)\s+(?:systeem-?\s?prompt|systeeminstructies|verborgen\s+instructies|systeemopdracht)",
        1.0,
        0.5,
    ),
    # Russian
    _p(
        "multi.ru.ignore_instructions",
        "multilingual",
        r"(?:игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не\s+обращай(?:те)?\s+внимания\s+на|отбрось(?:те)?)\s+(?:все\s+)?(?:свои\s+|твои\s+|ваши\s+)?(?:предыдущие|прошлые|прежние|вышеуказанные|вышеизложенные|исходные|системные)?\s*(?:инструкции|указания|директивы)",
        1.0,
        0.5,
    ),
    _p(
        "multi.ru.reveal_prompt",
        "multilingual",
        r"(?:покажи(?:те)?|раскрой(?:те)?|выведи(?:те)?|повтори(?:те)?|напиши(?:те)?|скажи(?:те)?)\s+(?:мне\s+)?(?:свой\s+|твой\s+|ваш\s+)?(?:системный\s+(?:промпт|промт|запрос|подсказку)|(?:промпт|промт)\s+системы|скрытые\s+инструкции|исходные\s+инструкции)",
        1.0,
        0.5,
    ),
    # Chinese (simplified and traditional)
    _p(
        "multi.zh.ignore_instructions",
        "multilingual",
        r"(?:忽略|忽视|無視|无视|忘记|忘記|不要理会|不要理會|丢弃|丟棄)\s*(?:你|您)?\s*(?:之前|以前|先前|以上|之上|此前|上面|上述|前面|所有|全部|早先|原来|原來|原有)(?:的)?\s*(?:所有|全部)?(?:的)?\s*(?:指令|指示|说明|說明|提示)",
        1.0,
        0.5,
    ),
    _p(
        "multi.zh.reveal_prompt",
        "multilingual",
        r"(?:显示|顯示|透露|泄露|洩露|告诉我|告訴我|输出|輸出|打印|展示|重复|重複|给我看|給我看)\s*(?:一下)?\s*(?:你的|您的|你|该|該)?\s*(?:系统|系統)\s*(?:提示词|提示詞|提示|指令|消息|訊息)",
        1.0,
        0.5,
    ),
    # Japanese
    _p(
        "multi.ja.ignore_instructions",
        "multilingual",
        r"(?:以前|前|上記|これまで|先|最初|元|既存|全て|すべて)\s*の\s*(?:指示|命令|指令|プロンプト)\s*(?:を|は)?\s*(?:すべて|全て|全部)?\s*(?:無視|忘れ|破棄)",
        1.0,
        0.5,
    ),
    _p(
        "multi.ja.reveal_prompt",
        "multilingual",
        r"システム\s*プロンプト\s*(?:を|の内容を)?\s*(?:表示|教え|見せ|出力|開示|公開|繰り返|書き出)",
        1.0,
        0.5,
    ),
    # Korean and Polish: cheap extra coverage for two more frequently attacked languages.
    _p(
        "multi.ko.ignore_instructions",
        "multilingual",
        r"(?:이전|앞의|위의|기존|모든)\s*(?:의\s*)?(?:지시|지침|명령|지시사항)(?:을|를|은|는)?\s*(?:모두\s*)?무시",
        1.0,
        0.5,
    ),
    _p(
        "multi.pl.ignore_instructions",
        "multilingual",
        r"\b(?:zignoruj|ignoruj|zapomnij)\s+(?:o\s+)?(?:wszystkie\s+|wszystkich\s+)?(?:poprzednie|wcześniejsze|powyższe|poprzednich|wcześniejszych)\s+(?:instrukcje|polecenia|instrukcjach|poleceniach)",
        1.0,
        0.5,
    ),
)


# Letter-spaced text ("i g n o r e a l l p r e v i o u s ...") collapses into one run with no word breaks;
# these patterns match such runs. They cannot fire on ordinary prose, which has spaces between words.
PATTERNS += (
    _p(
        "override.compact_ignore_previous",
        "instruction_override",
        r"(?:ignore|disregard|forget)(?:all|any|every)?(?:of)?(?:the|your|my)?(?:previous|prior|above|earlier|preceding)(?:instructions?|prompts?|rules|directives|guidelines)",
        1.0,
        1.0,
    ),
    _p(
        "exfil.compact_reveal_prompt",
        "prompt_exfiltration",
        r"(?:reveal|print|show|repeat|display|output|tellme|giveme)(?:me)?(?:your|the)(?:system|hidden|secret|initial|original)(?:prompt|instructions)",
        1.0,
        1.0,
    ),
)

_AI_WORDS = ("ai", "a.i.", "artificial", "assistant", "chat", "bot", "language model", "llm", "gpt", "model")
_IGN_WORDS = ("ignor", "disregard", "forget", "neglect", "skip", "abandon", "discard", "overrid", "overwrit",
              "bypass", "drop", "erase", "delete", "clear")  # fmt: skip
_INSTR_WORDS = ("guidance", "instruction", "prompt", "directive", "direction", "guideline", "rule", "order",
                "context", "programming", "constraint", "guardrail", "restriction", "polic", "message",
                "conversation", "command")  # fmt: skip
_RESTRICTED_WORDS = ("restricted", "confidential", "classified", "secret", "internal", "private", "hidden",
                     "protected", "sensitive", "locked", "privileged", "other")  # fmt: skip
_PROMPTISH = ("prompt", "instruction", "rule", "guideline", "directive", "programming", "message", "configuration",
              "context")  # fmt: skip
_TRIGGERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "override.ignore_previous_instructions": (_IGN_WORDS, _INSTR_WORDS),
    "override.ignore_previous_rules": (_IGN_WORDS, _INSTR_WORDS),
    "override.ignore_all_previous_instructions": (
        _IGN_WORDS,
        ("instruction", "prompt", "directive", "guideline"),
    ),
    "override.ignore_your_instructions": (_IGN_WORDS, ("your",)),
    "override.ignore_instructions_above": (_IGN_WORDS, _INSTR_WORDS),
    "override.ignore_everything_above": (_IGN_WORDS, ("everything", "anything", "all")),
    "override.forget_what_you_were_told": (
        ("ignor", "disregard", "forget", "discard"),
        ("you", "i said", "i told", "was said"),
    ),
    "exfil.instructions_you_received": (
        ("instruction", "prompt", "rule", "guideline", "directive", "message"),
        ("you ",),
    ),
    "priv.from_restricted_docs": (_RESTRICTED_WORDS,),
    "override.pretend_no_rules": (
        ("pretend", "imagine", "assume", "suppose", "as if"),
        ("rule", "restriction", "filter", "polic", "guideline", "limit", "access control", "guardrail"),
    ),  # fmt: skip
    "priv.show_regardless_of_access": (
        ("regardless", "irrespective", "ignoring", "bypassing"),
        ("access", "permission", "clearance", "acl", "authori", "security", "tier"),
    ),  # fmt: skip
    "override.renamed_persona": (("you are", "you're", "your"), ("no longer", "called", "named", "name is")),
    "exfil.whats_in_your_prompt": (("what",), ("your",)),
    "role.override_prefix": (
        (":",),
        ("override", "sudo", "admin mode", "debug mode", "god mode", "maintenance mode"),
    ),
    "priv.config_assignment": (
        ("=", ":"),
        ("confidential", "restricted", "admin", "root", "true", "secret", "superuser", "all", "unrestricted"),
    ),  # fmt: skip
    "priv.regardless_of_access": (
        ("regardless", "irrespective", "ignoring", "without"),
        ("access", "permission", "clearance", "acl", "authori", "security", "tier"),
    ),  # fmt: skip
    "override.ignore_the_above_and": (("ignor", "disregard", "forget"),),
    "override.do_not_follow_instructions": (("follow", "obey", "adhere", "comply", "respect"), _PROMPTISH),
    "override.new_instructions_header": (("instruction", "directive", "task", "orders", "rules"),),
    "override.instructions_void": (
        ("void", "null", "cancel", "obsolete", "revoked", "supersed", "replaced", "deprecated", "no longer"),
        ("instruction", "prompt", "rule", "directive", "guideline"),
    ),
    "override.your_new_task": (
        ("your",),
        (
            "task",
            "instruction",
            "goal",
            "objective",
            "purpose",
            "role",
            "job",
            "mission",
            "directive",
            "persona",
            "identity",
            "name",
        ),
    ),  # fmt: skip
    "override.from_now_on": (("from now on", "from this point", "henceforth", "rest of th"),),
    "override.you_are_now": (("you are", "you're"), ("now", "no longer", "henceforth")),
    "override.act_as_ai": (
        ("act", "behave", "respond", "answer", "operate", "function"),
        (
            "unrestrict",
            "unfilter",
            "uncensor",
            "jailbr",
            "evil",
            "rogue",
            "different",
            "new",
            "malicious",
            "amoral",
            "unethical",
            "unaligned",
            "free",
            "limitless",
            "hacked",
            "compromised",
        ),
    ),  # fmt: skip
    "override.act_as_if_no_rules": (("as if", "as though"),),
    "override.act_as_dan": (("dan", "stan", "dude", "aim", "kevin", "apophis"),),
    "override.pretend": (("pretend",),),
    "override.switch_persona": (
        ("switch", "change", "transform", "turn"),
        ("persona", "character", "role", "personality", "identity", "assistant", "ai", "mode"),
    ),  # fmt: skip
    "override.simulate_unrestricted": (
        (
            "unrestrict",
            "unfilter",
            "uncensor",
            "jailbr",
            "evil",
            "rogue",
            "malicious",
            "amoral",
            "unaligned",
            "hypothetical",
        ),
    ),  # fmt: skip
    "jailbreak.dan": (("dan", "do anything now", "stay in character"),),
    "jailbreak.keyword": (("jail",),),
    "jailbreak.prompt": (("jail",),),
    "jailbreak.developer_mode": ((" mode",),),
    "jailbreak.no_restrictions": (
        ("no ", "free", "released", "liberated"),
        (
            "restriction",
            "rule",
            "limit",
            "filter",
            "guideline",
            "boundar",
            "constraint",
            "polic",
            "moral",
            "ethic",
            "programming",
        ),
    ),  # fmt: skip
    "jailbreak.unfiltered_ai": (("unfilter", "uncensor", "unrestrict", "unalign", "amoral"),),
    "jailbreak.god_mode": ((" mode",),),
    "jailbreak.refusal_suppression": (
        (
            "refus",
            "declin",
            "reject",
            "deny",
            "warning",
            "disclaimer",
            "caveat",
            "moraliz",
            "moralis",
            "ethical",
            "filter",
            "censor",
            "restriction",
            "limit",
            "rule",
        ),
    ),  # fmt: skip
    "jailbreak.grandma": (("grandm",),),
    "jailbreak.roleplay_game": (("let's", "lets", "hypothetical", "fictional"),),
    "exfil.reveal_your_prompt": (("your", "yer", "ur "), _PROMPTISH + ("window",)),
    "exfil.reveal_system_prompt": (
        ("prompt", "instruction", "message", "directive", "guideline", "rule", "configuration"),
    ),
    "exfil.system_prompt_mention": (("prompt",),),
    "exfil.repeat_above": (
        ("above", "before", "preceding", "prior"),
        ("repeat", "print", "output", "copy", "echo", "recite", "write", "type", "reproduce"),
    ),  # fmt: skip
    "exfil.verbatim_instructions": (("verbatim", "word for word", "exactly as", "in full"),),
    "exfil.initial_prompt": (
        ("first", "initial", "original", "opening"),
        ("prompt", "instruction", "message", "text", "thing"),
    ),
    "exfil.tool_descriptions": (
        ("tool", "function", "plugin", "api", "capabilit", "action"),
        ("your", "description", "definition", "schema", "specification"),
    ),  # fmt: skip
    "exfil.conversation_start": (
        ("before", "above", "beginning", "start"),
        ("message", "question", "conversation", "prompt", "chat", "context"),
    ),  # fmt: skip
    "exfil.how_were_you_instructed": (
        ("you",),
        ("instructed", "programmed", "prompted", "configured", "told", "instructions", "rules", "guidelines"),
    ),  # fmt: skip
    "exfil.compact_reveal_prompt": (("prompt", "instruction"),),
    "override.compact_ignore_previous": (("ignor", "disregard", "forget"),),
    "ai_cue.if_you_are_an_ai": (_AI_WORDS,),
    "ai_cue.as_an_ai": (("as a", "as an", "you are a", "you're a"), _AI_WORDS),
    "ai_cue.addressing_model": (
        _AI_WORDS + ("claude", "copilot", "gemini", "bard", "llama"),
        (":", ",", "!"),
    ),
    "ai_cue.the_model_must": (
        _AI_WORDS,
        ("must", "should", "shall", "will now", "required", "instructed", "ordered", "has to"),
    ),
    "ai_cue.hide_from_user": (("the user",),),
    "ai_cue.say_exact_phrase": (("pwn", "hacked", "owned", "access granted"),),
    "ai_cue.instead_do": (
        ("instead", "now", "only"),
        (
            "say",
            "print",
            "output",
            "respond",
            "reply",
            "write",
            "tell",
            "reveal",
            "repeat",
            "answer",
            "translate",
        ),
    ),  # fmt: skip
    "ai_cue.override_then_directive": (
        ("ignor", "disregard", "forget"),
        (
            "say",
            "print",
            "output",
            "respond",
            "reply",
            "answer",
            "reveal",
            "tell",
            "write",
            "repeat",
            "act",
            "pretend",
        ),
    ),
    "ai_cue.respond_only_with": (("only", "solely", "exclusively"), ("respond", "reply", "answer")),
    "ai_cue.this_is_for_the_model": (_AI_WORDS, ("instruction", "message", "note", "directive", "command")),
    "ai_cue.summary_manipulation": (("when",), ("asked", "summari", "answering", "responding", "questioned")),
    "role.chatml_token": (("|>",),),
    "role.llama_inst": (("inst]",),),
    "role.llama_sys": (("sys>>",),),
    "role.sentence_tags": (("</s>", "<s>"),),
    "role.bare_eos_tag": (("</s>", "<|endoftext|>"),),
    "role.markdown_role_header": (("##",),),
    "role.fake_assistant_turn": ((":",), ("assistant", "chatbot", "gpt", "model", "bot")),
    "role.fake_system_turn": ((":",), ("system", "developer", "admin", "root", "sys")),
    "role.fake_system_turn_ai": ((":",), ("system", "developer")),
    "role.turn_sequence": (("human", "user"), ("assistant", "ai", "bot")),
    "role.json_role": (("role",),),
    "role.prompt_xml_tag": (
        ("<",),
        ("prompt", "instructions", "im_start", "assistant_response", "user_query"),
    ),
    "role.generic_xml_tag": (("<",), ("system", "instruction", "sys", "admin", "developer")),
    "role.bracket_system": (("system", "admin", "developer", "sys", "root", "operator"),),
    "role.end_of_prompt": (("end of", "begin", "end "),),
    "exfil_data.send_to_sink": (
        (
            "send",
            "post",
            "upload",
            "forward",
            "transmit",
            "exfiltrat",
            "leak",
            "submit",
            "beacon",
            "report",
            "copy",
            "append",
            "attach",
            "encode",
            "embed",
            "mail",
            "pass",
            "smuggle",
        ),
        (
            "http",
            "ftp://",
            "www.",
            "@",
            "url",
            "link",
            "endpoint",
            "webhook",
            "server",
            "address",
            "domain",
            "mail",
            "inbox",
        ),
    ),  # fmt: skip
    "exfil_data.markdown_image_beacon": (("![",),),
    "exfil_data.html_image_beacon": (("<img",),),
    "exfil_data.render_image_instruction": (("image", "img", "pixel"),),
    "exfil_data.data_in_url": (
        ("url", "link", "query", "parameter", "src"),
        ("append", "add", "include", "insert", "put", "encode", "place"),
    ),  # fmt: skip
    "exfil_data.fetch_and_follow": (
        ("follow", "execute", "obey", "carry out", "do what", "apply"),
        ("instruction", "command", "direction", "it says"),
    ),  # fmt: skip
    "exfil_data.tool_abuse": (
        ("tool", "function", "plugin", "action"),
        ("send", "mail", "post", "upload", "delete", "forward", "transfer", "exfiltrat", "leak"),
    ),  # fmt: skip
    "priv.claim_role": (("i am", "i'm", "im ", "this is", "speaking as"),),
    "priv.claim_authorized": (
        ("authori", "cleared", "permitted", "allowed", "entitled", "approved", "whitelisted", "granted"),
    ),  # fmt: skip
    "priv.claim_clearance": (("clearance", "access", "permission", "privilege", "right", "role"),),
    "priv.request_restricted_docs": (_RESTRICTED_WORDS,),
    "priv.dump_knowledge_base": (
        ("knowledge", "kb", "database", "index", "corpus", "vector", "system", "collection"),
        ("all", "every", "each", "full", "complete", "entire", "whole"),
    ),  # fmt: skip
    "priv.bypass_access_control": (("access", "acl", "permission", "authori", "security", "clearance"),),
    "priv.disable_guardrails": (
        ("your", "assistant", "ai", "model", "bot"),
        (
            "filter",
            "guard",
            "safety",
            "restriction",
            "polic",
            "censor",
            "moderation",
            "access control",
            "security",
        ),
    ),  # fmt: skip
    "priv.as_admin_demand": (("i am", "i'm", "im "),),
    "priv.elevate_me": (
        ("me ", "my "),
        (
            "admin",
            "root",
            "superuser",
            "full",
            "elevated",
            "unrestricted",
            "unlimited",
            "confidential",
            "restricted",
            "secret",
        ),
    ),  # fmt: skip
    "hidden.html_comment_instruction": (("<!--",),),
    "hidden.html_comment_imperative": (("<!--",),),
    "hidden.markdown_comment_instruction": (("[//]", "[comment]", "[hidden]"),),
    "hidden.css_hidden_text": (("style",),),
    "encoded.decode_and_follow": (
        ("decode", "base64", "rot", "decipher", "decrypt", "unscramble", "reverse", "translate"),
    ),  # fmt: skip
    "multi.fr.ignore_instructions": (("instruction", "consigne", "directive", "règle"),),
    "multi.fr.reveal_prompt": (("prompt", "invite", "instruction", "consigne"),),
    "multi.de.ignore_instructions": (
        ("anweisung", "instruktion", "befehl", "regel", "vorgabe", "anordnung"),
    ),
    "multi.de.reveal_prompt": (("prompt", "aufforderung", "anweisung"),),
    "multi.es.ignore_instructions": (("instruccion", "indicacion", "órden", "regla", "directri"),),
    "multi.es.reveal_prompt": (("prompt", "mensaje", "indicacion", "instruccion"),),
    "multi.it.ignore_instructions": (("istruzion", "indicazion", "direttiv", "regol"),),
    "multi.it.reveal_prompt": (("prompt", "istruzion", "messaggio"),),
    "multi.pt.ignore_instructions": (("instruç", "instruc", "orientaç", "ordens", "regras", "diretriz"),),
    "multi.pt.reveal_prompt": (("prompt", "instruç", "instruc", "mensagem"),),
    "multi.nl.ignore_instructions": (("instructie", "opdracht", "aanwijzing", "regels", "richtlijn"),),
    "multi.nl.reveal_prompt": (("systeem", "verborgen"),),
    "multi.ru.ignore_instructions": (("инструкц", "указани", "команд", "правил", "директив"),),
    "multi.ru.reveal_prompt": (("промпт", "промт", "запрос", "подсказк", "инструкц"),),
    "multi.zh.ignore_instructions": (
        ("指令", "指示", "说明", "說明", "提示", "规则", "規則", "命令", "要求"),
    ),
    "multi.zh.reveal_prompt": (("系统", "系統"),),
    "multi.ja.ignore_instructions": (("無視", "忘れ", "破棄"),),
    "multi.ja.reveal_prompt": (("プロンプト",),),
    "multi.ko.ignore_instructions": (("무시",),),
    "multi.pl.ignore_instructions": (("instrukcj", "poleceni", "zasady"),),
}
_UNLESS: dict[str, re.Pattern[str]] = {
    "jailbreak.developer_mode": re.compile(
        r"\b(?:windows|android|ios|iphone|ipad|phone|tablet|device|chrome|browser|edge|firefox|laptop|pc|settings|"
        r"registry|computer|sideload\w*|xcode|visual\s+studio|sdk|adb|usb\s+debugging|bios|uefi|firmware|mdm|intune)\b",
        re.I,
    ),
    "exfil.reveal_system_prompt": re.compile(
        r"\b(?:ps[12]|bash|zsh|shell|terminal|console|tty|login|cli|modem|pppd|expect|chat\s+script|pinentry|"
        r"passphrase|gpg|dialog|gui|password\s+prompt)\b",
        re.I,
    ),
    "exfil.system_prompt_mention": re.compile(
        r"\b(?:ps[12]|bash|zsh|shell|terminal|console|tty|login|cli|modem|pppd|expect|chat\s+script|pinentry|"
        r"passphrase|gpg|dialog|gui|password\s+prompt)\b",
        re.I,
    ),
}
PATTERNS = tuple(replace(p, triggers=_TRIGGERS.get(p.name, ()), unless=_UNLESS.get(p.name)) for p in PATTERNS)
_ALL_TRIGGER_WORDS = tuple(
    sorted({word for groups in _TRIGGERS.values() for group in groups for word in group})
)
_WS_RE = re.compile(r"\s+")


def trigger_words_present(text: str) -> frozenset[str]:
    """The trigger words found in ``text`` (lower-cased, whitespace collapsed), tested once per view."""
    lowered = _WS_RE.sub(" ", text.lower())
    return frozenset(word for word in _ALL_TRIGGER_WORDS if word in lowered)


# ---------------------------------------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------------------------------------
ZERO_WIDTH_CHARS = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e\u034f\u061c\u115f\u1160\u17b4\u17b5\u3164\uffa0"
)
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_TAG_RANGE = range(0xE0000, 0xE0080)
_INVISIBLE_RE = re.compile(
    "[" + "".join(sorted(ZERO_WIDTH_CHARS | _BIDI_CONTROLS)) + "\U000e0000-\U000e007f]"
)
_QUOTES = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201b": "'", "\u201c": '"', "\u201d": '"', "\u2032": "'"}
)
_HSPACE_RE = re.compile(r"[^\S\n]+")

# Letters from other scripts that look like Latin ones. NFKC does not fold these (they are distinct
# letters), so "іgnоrе" written with Cyrillic і/о/е would otherwise sail past every English pattern.
_CONFUSABLES = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "ɡ": "g", "ԛ": "q",
    "ԝ": "w", "ү": "y", "һ": "h", "ӏ": "l", "ո": "n", "ս": "u", "ց": "g",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D", "Ү": "Y", "Һ": "H", "Ӏ": "I",
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes and IPA letters
    "ı": "i", "ɩ": "i", "ɪ": "i", "ℓ": "l", "ɑ": "a", "ɐ": "a", "ɒ": "o", "ɛ": "e", "ɵ": "o", "ʀ": "r",
    "ʏ": "y", "ɴ": "n", "ᴍ": "m", "ᴛ": "t", "ᴋ": "k", "ᴄ": "c", "ᴏ": "o", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w",
    "ᴢ": "z", "ſ": "s", "ƅ": "b", "ǀ": "l",
}  # fmt: skip
_CONFUSABLE_TABLE = str.maketrans(_CONFUSABLES)
_NON_LATIN_LOOKALIKE = frozenset(
    c for c in _CONFUSABLES if unicodedata.name(c, "").split()[0] in {"CYRILLIC", "GREEK", "ARMENIAN"}
)

_LEET_MAP = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g", "@": "a", "$": "s", "!": "i", "|": "l", "€": "e", "+": "t"}  # fmt: skip
_LEET_TABLE = str.maketrans(_LEET_MAP)
# "1" stands for both "i" and "l" in leetspeak ("ru1es"); a second table covers the other reading.
_LEET_TABLE_L = str.maketrans({**_LEET_MAP, "1": "l"})
# Leet tokens: runs of letters, digits and the symbols used as letters, at least three long and with a
# letter in them, so "41,42.otf", "A1:" and port numbers stay as they are.
# (Runs are matched whole and the letter test is made on the match: a look-ahead for the letter rescanned
# the rest of the run from every position, quadratic on a long run of digits.)
_LEET_TOKEN_RE = re.compile(r"[A-Za-z0-9@$!|€+]{3,}")
_SPACED_LETTERS_RE = re.compile(r"(?<![\w])(?:[a-zA-Z][ .\-_*]){3,}[a-zA-Z](?![\w])")


def normalize_text(text: str) -> str:
    """NFKC-normalise, drop invisible characters and unify quotes and horizontal whitespace.

    Args:
        text: raw input.

    Returns:
        A string suitable for pattern matching; newlines are preserved because role patterns anchor on them.
    """
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE_RE.sub("", text)
    text = text.translate(_QUOTES)
    return _HSPACE_RE.sub(" ", text)


def fold_confusables(text: str) -> str:
    """Replace Cyrillic/Greek/IPA letters that look Latin with their Latin counterparts."""
    return text.translate(_CONFUSABLE_TABLE)


def deleet(text: str, *, one_as_l: bool = False) -> str:
    """Undo leetspeak in tokens that mix letters with digits or symbols ("1gn0r3" -> "ignore").

    Args:
        text: normalised text.
        one_as_l: read "1" as "l" instead of "i".

    Returns:
        The text with leet tokens translated; pure-number tokens (versions, ports, addresses) untouched.
    """
    table = _LEET_TABLE_L if one_as_l else _LEET_TABLE

    def fix(match: re.Match[str]) -> str:
        token = match.group(0)
        # Keep trailing sentence punctuation; "!" inside a word is leet, at the end it is punctuation.
        core = token.rstrip("!.,;:?")
        translated = core.translate(table)
        # no leet character, or no letter at all (the only cased characters of a token are A-Z, a-z)
        if translated == core or token.lower() == token.upper():
            return token
        return translated + token[len(core) :]

    return _LEET_TOKEN_RE.sub(fix, text)


def collapse_spaced_letters(text: str) -> str:
    """Join runs of single letters separated by spaces or dots ("i g n o r e" -> "ignore")."""
    return _SPACED_LETTERS_RE.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group(0)), text)


def mixed_script_words(text: str) -> int:
    """Count words mixing Latin letters with Cyrillic/Greek look-alikes (a homoglyph attack signal)."""
    count = 0
    for word in re.findall(r"\w{2,}", text):
        has_latin = any("a" <= ch.lower() <= "z" for ch in word)
        if has_latin and any(ch in _NON_LATIN_LOOKALIKE for ch in word):
            count += 1
    return count


def invisible_char_counts(text: str) -> tuple[int, int, int]:
    """Return (zero-width chars adjacent to letters, bidi controls, Unicode tag chars) in raw text."""
    zero_width = sum(
        1
        for i, ch in enumerate(text)
        if ch in ZERO_WIDTH_CHARS
        and ch != "\ufeff"  # a leading BOM is common in files; mid-word ones are counted by neighbours
        and i > 0
        and i + 1 < len(text)
        and (text[i - 1].isalpha() or text[i + 1].isalpha())
    )
    bidi = sum(1 for ch in text if ch in _BIDI_CONTROLS)
    tags = sum(1 for ch in text if ord(ch) in _TAG_RANGE)
    return zero_width, bidi, tags


# ---------------------------------------------------------------------------------------------------------
# Encoded payloads
# ---------------------------------------------------------------------------------------------------------
_B64_RE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
_HEX_RE = re.compile(r"(?<![0-9A-Fa-f])(?:0x)?(?:[0-9A-Fa-f]{2}[ :]?){10,}(?![0-9A-Fa-f])")
_ESCAPED_HEX_RE = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){4,}")
_ESCAPED_UNICODE_RE = re.compile(r"(?:\\u[0-9A-Fa-f]{4}){4,}")
_URL_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_HTML_ENTITY_RE = re.compile(r"&#(?:x[0-9A-Fa-f]+|\d+);")
_MAX_CANDIDATES = 16
_MAX_CANDIDATE_CHARS = 4096


def _printable_text(raw: bytes) -> str | None:
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(decoded) < 6:
        return None
    printable = sum(1 for ch in decoded if ch.isprintable() or ch in "\n\t")
    letters = sum(1 for ch in decoded if ch.isalpha())
    # Certificates, keys and hashes decode to binary; only text that reads like words can carry instructions.
    if printable / len(decoded) < 0.95 or letters / len(decoded) < 0.5:
        return None
    return decoded


def _decode_base64(candidate: str) -> str | None:
    if not re.search(r"[a-z]", candidate) or not re.search(r"[A-Z0-9]", candidate):
        return None  # plain words or identifiers, not an encoding
    for altchars in (None, b"-_"):
        padded = candidate + "=" * (-len(candidate) % 4)
        try:
            raw = base64.b64decode(padded, altchars=altchars, validate=altchars is None)
        except (binascii.Error, ValueError):
            continue
        text = _printable_text(raw)
        if text:
            return text
    return None


def _decode_hex(candidate: str) -> str | None:
    digits = re.sub(r"[^0-9A-Fa-f]", "", candidate.removeprefix("0x"))
    if len(digits) % 2:
        return None
    try:
        return _printable_text(bytes.fromhex(digits))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class TextView:
    """One rendering of the input that patterns are matched against; ``via`` names the transformation."""

    via: str
    text: str


def decoded_views(text: str) -> list[TextView]:
    """Decode embedded payloads (base64, hex, escapes, URL-encoding, HTML entities, tag chars, rot13, reversed).

    Args:
        text: the NFKC-normalised text (tag characters must be decoded from the raw text; see ``text_views``).

    Returns:
        One view per decoded payload that looks like human-readable text.
    """
    views: list[TextView] = []
    for match in _B64_RE.findall(text)[:_MAX_CANDIDATES]:
        decoded = _decode_base64(match[:_MAX_CANDIDATE_CHARS])
        if decoded:
            views.append(TextView("base64", decoded))
    for match in _HEX_RE.findall(text)[:_MAX_CANDIDATES]:
        decoded = _decode_hex(match[:_MAX_CANDIDATE_CHARS])
        if decoded:
            views.append(TextView("hex", decoded))
    for match in _ESCAPED_HEX_RE.findall(text)[:_MAX_CANDIDATES]:
        decoded = _decode_hex(match.replace("\\x", ""))
        if decoded:
            views.append(TextView("hex", decoded))
    if _ESCAPED_UNICODE_RE.search(text):
        try:
            views.append(
                TextView("unicode_escape", codecs.decode(text.encode("ascii", "ignore"), "unicode_escape"))
            )
        except (UnicodeDecodeError, ValueError):
            pass
    if len(_URL_ESCAPE_RE.findall(text)) >= 3:
        views.append(TextView("url", unquote_plus(text)))
    if len(_HTML_ENTITY_RE.findall(text)) >= 3:
        views.append(TextView("html_entities", html.unescape(text)))
    if _ENOUGH_LETTERS_RE.search(text):
        views.append(TextView("rot13", codecs.encode(text, "rot13")))
        views.append(TextView("reversed", text[::-1]))
    return views


# at least 12 letters (stops at the twelfth instead of counting every character of a long text)
_ENOUGH_LETTERS_RE = re.compile(r"(?:[^\W\d_][\W\d_]*){12}")
_TAG_CHARS_RE = re.compile("[\U000e0000-\U000e007f]+")


def _tag_payload(raw: str) -> str:
    # Unicode "tag" characters mirror ASCII at U+E0000; they render invisibly and smuggle text.
    return "".join(chr(ord(ch) - 0xE0000) for run in _TAG_CHARS_RE.findall(raw) for ch in run)


def text_views(raw: str, *, depth: int = 0) -> list[TextView]:
    """All renderings of ``raw`` to match: plain, confusable-folded, de-leeted, de-spaced, decoded payloads.

    Args:
        raw: the text exactly as received.
        depth: recursion depth for nested encodings (a base64 of rot13 text is decoded twice, no further).

    Returns:
        Distinct views; the first is always the plain normalised text (``via == "plain"``).
    """
    plain = normalize_text(raw)
    views = [TextView("plain", plain)]
    seen = {plain}

    def add(via: str, text: str) -> None:
        if text not in seen:
            seen.add(text)
            views.append(TextView(via, text))

    folded = fold_confusables(plain)
    add("confusables", folded)
    leet = deleet(folded)
    add("leet", leet)
    add("leet", deleet(folded, one_as_l=True))
    add("spaced", collapse_spaced_letters(folded))
    add("spaced", collapse_spaced_letters(leet))
    smuggled = _tag_payload(raw)
    if smuggled:
        add("tag_chars", normalize_text(smuggled))
    if depth < 2:
        for view in decoded_views(plain):
            if view.via in {"rot13", "reversed"}:
                # These two apply to every text; matching their plain rendering is enough and keeps
                # ingest scanning cheap.
                add(view.via, view.text)
                continue
            for inner in text_views(view.text, depth=depth + 1):
                via = view.via if inner.via == "plain" else f"{view.via}+{inner.via}"
                add(via, inner.text)
    return views
