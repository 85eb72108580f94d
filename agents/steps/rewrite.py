"""A follow-up ("and how do I roll it back?") is rewritten with the conversation's earlier turns; a greeting or
thanks around the question is left out of what is searched, and so is the asker's own context around it (a
ticket number, a numbered host, an environment: agents/steps/context.py); shorthand typed in a hurry ("dflt",
"w/o") is written out (`written_out`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from agents.steps.state import AnswerState
from athena.principals import Principal

# What people put around a question in a chat ("hi, ...", "quick q: ...", "... thanks!", "... pls?"). Searched
# with it, "hi", "thanks" and "pls" were terms no evidence holds and moved the question's embedding, and the
# same question was answered bare but abstained on with a greeting (or the other way round).
# A greeting is taken off only with punctuation or a spaced dash after it ("hello," "hi team - "), or, for the
# words that name nothing in a network's documents, a space ("hi what is ..."): "hello" alone opens "Hello
# interval on OSPF?". An aside ("quick q:") needs its punctuation too, and a bare "q" a colon ("Q-in-Q").
_GREETING = r"(?:hi|hey|hello|hiya|howdy|good\s+(?:morning|afternoon|evening))(?:\s+(?:all|there|team|folks|guys|everyone))?"
_BARE_GREETING = r"(?:hi|hey|hiya|howdy)"
_SEPARATOR = r"(?:\s*[,!.:;]+\s*|\s+[-\u2013\u2014]+\s+|\s*[\u2013\u2014]+\s*)"
_ASIDE = r"(?:(?:a\s+)?(?:quick|short|simple|small|dumb|silly|newbie)\s+(?:q|qn|question|one){sep}|(?:q|question)\s*:\s*)"
# An urgency label before the question ("URGENT:", "[P1]", "sev2 outage - ", "ASAP!"), and words that only start
# talking ("ok so", "um,"; one word alone before a question word only, so that "So-called ..." and "Well known
# ports" keep theirs): train questions after "P1 outage - ", answered 114 -> 97 of 116
_URGENCY_WORD = r"(?:urgent|asap|emergency|critical|important|p[0-4]|sev\s?-?[0-4]|prio(?:rity)?\s?-?[0-4])"
_URGENCY = (
    rf"(?:\[{_URGENCY_WORD}\]\s*|{_URGENCY_WORD}(?:\s+(?:outage|incident|issue|alert|problem))?{_SEPARATOR})"
)
_FILLER = (
    r"(?:(?:ok(?:ay)?|alright|right)[\s,]+so\b[\s,]*"
    r"|(?:ok(?:ay)?|so|um+|uh+|hm+|alright|right)(?:\s*,\s*|\s+(?=(?:ok(?:ay)?|so|what|how|which|why|where|when|"
    r"who|is|are|does|do|did|can|could|should|would|will)\b)))"
)
_OPENING = re.compile(
    rf"^\s*{_URGENCY}*(?:{_GREETING}{_SEPARATOR}|{_BARE_GREETING}\s+)?{_FILLER}*"
    + _ASIDE.format(sep=_SEPARATOR)
    + r"?(?:(?:please|pls|plz)\s*,?\s+)?",
    re.IGNORECASE,
)
_THANKS = r"(?:thanks|thank\s+you|thx|thnx|ty|tia|cheers|please|pls|plz)"
_CLOSING = re.compile(
    rf"(?:\s*[,!.:;\u2013\u2014-])*\s*\b{_THANKS}(?:\s+(?:a\s+lot|so\s+much|very\s+much|in\s+advance|all|team|guys|everyone))?"
    rf"[\s!.]*(\?*)\s*$",
    re.IGNORECASE,
)
# a reply that says nothing but thanks or a greeting ("ok thanks", "great, thanks!", "cheers", "hi")
_COURTESY_ONLY = re.compile(
    rf"^\s*(?:(?:ok|okay|great|cool|nice|perfect|got\s+it|awesome|{_THANKS}|{_GREETING})[\s,!.:;]*)+$",
    re.IGNORECASE,
)


# Shorthand typed in a hurry, written out. Clipped words only: each is read as its word only where the documents
# the asker may read write that word out more often than they use the clipping (`written_out`), so a clipping a
# corpus uses itself ("addr" in `ip addr`, "src" and "dev" in a route) stays as typed. Left out: clippings of
# more than one word the documents name ("proc" for /proc or a process, "rec" for a record or recursion, "prob"
# for a problem or a probability), and those whose word is a stop word ("u" for "you"), which would search for
# nothing
SHORTHAND: dict[str, str] = {
    "dflt": "default",
    "dflts": "defaults",
    "dest": "destination",
    "tbl": "table",
    "tbls": "tables",
    "num": "number",
    "rt": "route",
    "rts": "routes",
    "cmd": "command",
    "cmds": "commands",
    "conn": "connection",
    "conns": "connections",
    "maint": "maintenance",
    "dbg": "debug",
    "req": "request",
    "reqs": "requests",
    "resp": "response",
    "pkt": "packet",
    "pkts": "packets",
    "msg": "message",
    "msgs": "messages",
    "iface": "interface",
    "ifaces": "interfaces",
    "intf": "interface",
    "srv": "server",
    "svr": "server",
    "svrs": "servers",
    "srvs": "servers",
    "svc": "service",
    "svcs": "services",
    "fwd": "forward",
    "fwder": "forwarder",
    "val": "value",
    "vals": "values",
    "opt": "option",
    "opts": "options",
    "param": "parameter",
    "params": "parameters",
    "err": "error",
    "errs": "errors",
    "avail": "available",
    "sess": "session",
    "secs": "seconds",
    "mins": "minutes",
    "hrs": "hours",
    "stmt": "statement",
    "cfg": "configuration",
    "bkp": "backup",
    "ver": "version",
    "mgmt": "management",
    "mgr": "manager",
    "perms": "permissions",
    "thru": "through",
    "bcast": "broadcast",
    "dyn": "dynamic",
    "equiv": "equivalent",
    "chk": "check",
    "col": "column",
    "sig": "signal",
    "prio": "priority",
    "dir": "directory",
    "dirs": "directories",
}
# written the same way everywhere: no document names a thing so
_CONNECTIVES = {"w/o": "without", "w/": "with", "b/w": "between", "b/c": "because", "&": "and"}
_CLIPPED = re.compile(
    r"(?<![\w\-./=$@`'])(" + "|".join(sorted(SHORTHAND, key=len, reverse=True)) + r")(?![\w\-/=@`']|\.\w)",
    re.IGNORECASE,
)
_CONNECTIVE = re.compile(r"(?<!\S)(w/o|w/|b/w|b/c|&)(?!\S)", re.IGNORECASE)
# readable chunks counted per term, at most: past it both words are common and the clipping stays
_SHORTHAND_DF_CAP = 500


def written_out(question: str, principal: Principal, quoted: Collection[str] = ()) -> str:
    """`question` with its shorthand written out (`shorthand_written_out`)."""
    return shorthand_written_out(question, principal, quoted)[0]


def shorthand_written_out(
    question: str, principal: Principal, quoted: Collection[str] = ()
) -> tuple[str, dict[str, str]]:
    """`question` with its shorthand written out: "w/o", "b/w" and "&" between spaces always, a clipped word of
    SHORTHAND ("dflt", "tbl", "pkts") where the chunks the asker may read hold its word in more chunks than the
    clipping itself. Code spans are left as typed, and so is each line of `quoted` (lines the asker pasted and
    asks about, `agents.steps.context.kept_paste`): a log line says "pkts" where the program wrote it so.

    A clipping is a rare term: searched and judged as typed it weighed most in what the evidence must cover, and
    the sentence that states the answer in full words covered the question least (train questions with one to
    three words clipped: answered 132 -> 115 of 134).

    Returns:
        the question written out, and each word written out for a clipping (lower case) -> the clipping as
        typed, so that what the asker is shown names what they typed ("dflt (read as default)").
    """
    from agents.steps.retrieve import CODE_SPAN
    from knowledge.index_selectors import terms_readable_df
    from knowledge.text import query_terms

    # the code spans and quoted lines at the odd places, the prose around them at the even ones
    literal = [CODE_SPAN.pattern] + [rf"^[ \t]*{re.escape(line)}[ \t]*$" for line in quoted if line]
    parts = re.split(f"({'|'.join(literal)})", question, flags=re.MULTILINE)
    clipped = {m.group(1).lower() for prose in parts[::2] for m in _CLIPPED.finditer(prose)}
    terms = {word: (query_terms(word), query_terms(SHORTHAND[word])) for word in clipped}
    counted = [t for own, full in terms.values() for t in (*own, *full)]
    df = terms_readable_df(counted, principal, cap=_SHORTHAND_DF_CAP) if counted else {}
    spelled = {
        word
        for word, (own, full) in terms.items()
        if full and min(df.get(t, 0) for t in full) > max((df.get(t, 0) for t in own), default=0)
    }

    typed: dict[str, str] = {}

    def prose_written_out(prose: str) -> str:
        def clipping(match: re.Match[str]) -> str:
            word = match.group(1)
            if word.lower() not in spelled:
                return word
            typed.setdefault(SHORTHAND[word.lower()], word)
            return SHORTHAND[word.lower()]

        prose = _CLIPPED.sub(clipping, prose)
        return _CONNECTIVE.sub(lambda m: _CONNECTIVES[m.group(1).lower()], prose)

    parts[::2] = [prose_written_out(prose) for prose in parts[::2]]
    return "".join(parts), typed


# the emphasis a chat client's markup adds around words ("**why** does ...", "__all__ of them", "*not* set"):
# strong emphasis of anything but a name with underscores ("__init__" names a method), single asterisks around a
# phrase only (a lone word between asterisks is a glob: "*backup*")
_EMPHASIS = re.compile(
    r"(?<![\w*])\*\*(?=\S)([^*\n]+?)(?<=\S)\*\*(?![\w*])"
    r"|(?<![\w_])__(?=\S)([^_\n]*\s[^_\n]*?)(?<=\S)__(?![\w_])"
    r"|(?<![\w*])\*(?=[^\W\d_])([^*\n]*\s[^*\n]*?)(?<=[\w?.!)])\*(?![\w*])"
)


def _outside_code(question: str, change: Callable[[str], str]) -> str:
    """`change` applied to `question` with each code span held out as a numbered mark, so that what stands
    around a code span is seen whole ("**In `ip`, ...**")."""
    from agents.steps.retrieve import CODE_SPAN

    if "\x00" in question:  # the marks could not be told from the asker's own text: nothing is changed
        return question
    spans = CODE_SPAN.findall(question)
    numbers = iter(range(len(spans)))
    text = change(CODE_SPAN.sub(lambda m: f"\x00{next(numbers)}\x00", question))
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], text)


def without_emphasis(question: str) -> str:
    """`question` without the markup of emphasis around its words (`_EMPHASIS`); code spans stay as typed. Kept,
    "**What does ...?**" no longer ended on its question mark, and its first and last words read as other
    terms (train questions set in bold: 52 of 116 answers changed, the gold answer lost in 5)."""
    return _outside_code(
        question,
        lambda text: _EMPHASIS.sub(lambda m: next(group for group in m.groups() if group is not None), text),
    )


# What a chat message carries besides its question: a mention of whom it is addressed to ("@athena", "@netops-
# oncall:") before it or copied after it ("cc @jane"); emoji, as characters or as a client's codes (":pray:");
# a list marker ("- ", "2. ") from notes it was copied out of; "??" or "?!" for one question mark; a signature
# on a line of its own ("-- Jane"). A handle read as a term no document holds and turned every question away
# (train questions after "@netops-oncall": answered 114 -> 0 of 116); the rest moved answers.
_HANDLE = re.compile(r"@([\w.-]*\w)")
_MENTIONS_BEFORE = re.compile(r"^\s*(?:@[\w.-]*\w[\s,:;]*)+(?=\S)")
_MENTIONS_AFTER = re.compile(r"(?:[\s,;]*\bcc\b:?)?(?:[\s,;]+@[\w.-]*\w)+[\s.!]*$", re.IGNORECASE)
_EMOJI = re.compile(
    r"[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2B55\uFE0F\u200D]+|(?<!\S):[a-z][a-z0-9_+-]*:(?!\S)"
)
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+(?=\S)")
_MARKS = re.compile(r"[?!]{2,}")
# a signature: a name of up to three words after "--", a long dash or "~", or a first name alone after "-" (a
# last list item of capitalised words, "- Restart Nginx", is no signature)
_SIGNATURE = re.compile(
    r"\n\s*(?:(?:--|[\u2013\u2014~])\s*[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,2}|-\s*[A-Z][a-z'-]+)\s*$"
)


def without_chat_marks(question: str, principal: Principal) -> str:
    """`question` without what a chat message carries besides it (mentions, emoji, a list marker, a signature;
    repeated question marks as one); code spans stay as typed. A handle that a chunk the principal may read
    holds stays where it is ("@reboot" in a crontab, "@include" in a configuration). `question` itself
    (stripped) when nothing would be left."""
    from agents.steps.context import named_in_readable_chunks

    handles = set(_HANDLE.findall(question))
    foreign = handles - named_in_readable_chunks(handles, principal) if handles else set()

    def mentions(match: re.Match[str]) -> str:
        return "" if set(_HANDLE.findall(match.group(0))) <= foreign else match.group(0)

    def unmarked(text: str) -> str:
        text = _SIGNATURE.sub("", text)
        text = _MENTIONS_AFTER.sub(mentions, _MENTIONS_BEFORE.sub(mentions, text))
        text = _LIST_MARKER.sub("", _EMOJI.sub(" ", text))
        text = _MARKS.sub(lambda m: "?" if "?" in m.group(0) else "!", text)
        return re.sub(r"[ \t]{2,}", " ", text).strip()

    return _outside_code(question, unmarked) or question.strip()


# a question typed without its question mark: its last clause opens with a question word ("... - which delay
# distribution is used", "what does `ss -K` do")
_UNMARKED_QUESTION = re.compile(
    r"(?:^|[.:;!]\s+|\s[-\u2013\u2014]+\s+|,\s+)(?:how|what|why|when|where|which|who|whom|whose|can|could|does|do|"
    r"did|is|are|was|were|should|would|will|has|have)\b[^\n.?!:;]*[\w)`'\"]$",
    re.IGNORECASE,
)


def with_question_mark(question: str) -> str:
    """`question` with the question mark its asker left off (`_UNMARKED_QUESTION`). Without it the question was
    embedded as another text: 29 of 116 train questions got another answer, and 2 lost the gold."""
    text = question.rstrip()
    return f"{text}?" if _UNMARKED_QUESTION.search(text) else question


def without_courtesy(question: str) -> str:
    """`question` without a greeting or an aside before it ("hi, ", "hey team - ", "quick q: ", "please ") and
    without thanks or a "please" after it ("? thanks!", " pls?" keeps its "?"); `question` itself (stripped)
    when that would leave fewer than two words."""
    text = _OPENING.sub("", question.strip(), count=1)
    while True:
        shorter = _CLOSING.sub(r"\1", text, count=1)
        if shorter == text:
            break
        text = shorter
    text = text.strip()
    return text if len(text.split()) >= 2 else question.strip()


def courtesy_only(question: str) -> bool:
    """Whether `question` says nothing but thanks, a greeting or an acknowledgement ("ok thanks", "cheers")."""
    return bool(_COURTESY_ONLY.match(question))


@dataclass(frozen=True)
class RewriteFollowUp:
    name: str = "follow_up_rewrite"

    def run(self, state: AnswerState) -> AnswerState:
        from agents.memory import rewrite_follow_up
        from agents.steps.context import pasted_read, without_own_context

        # shorthand written out last: the context steps judge the asker's text as typed; what the asker pasted
        # and asks about is quoted, and stays as typed
        question = with_question_mark(
            without_courtesy(without_chat_marks(without_emphasis(state.question), state.principal))
        )
        unpasted, quoted = pasted_read(question)
        asked, clipped = shorthand_written_out(
            without_own_context(unpasted, state.principal), state.principal, quoted=quoted
        )
        if courtesy_only(asked):
            # "thanks!" after an answer asks nothing of the previous question: joined, it was searched as that
            # question again, re-ordered by "thanks", and remembered so for the next follow-up
            return replace(state, asked=asked, follow_up=False, rewritten=asked)
        rewritten, details = rewrite_follow_up(asked, list(state.history))
        return replace(
            state,
            asked=asked,
            follow_up=bool(details.get("follow_up")),
            rewritten=rewritten,
            clipped=tuple(clipped.items()),
        )

    def describe(self, state: AnswerState) -> str:
        return "rewritten" if state.follow_up else "standalone"
