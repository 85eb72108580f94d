"""The asker's own context around a question ("Ticket INC-48213.", "(on host core-rtr-01)", "We hit this on
web-07 last night.") is left out of what is searched and judged.

A ticket or change number, a numbered host name or an environment name belongs to the asker's setup: no
document is expected to hold it, and it says nothing about whether the documents answer the question. Searched
with the question, such a name was a term no chunk holds (the question was turned away as being about a topic
the knowledge base lacks) or an uncovered term of the highest idf and a shift of the question's embedding (a
lower P(answerable)), so the same question was answered bare and abstained on with the asker's context.

A name is taken for the asker's own only by its shape (`own_reference_shape`) AND when no chunk the asker may
read holds it: a name with digits that is a topic ("http2", "x509", "ssh-ed25519", "rfc-1918", "CVE-2024-1234",
"raid-10") has none of the shapes, and a host or ticket that the documents do name is a topic of theirs. What is
left out: a sentence that asks nothing and says nothing else than such names, everyday words, times and dates;
a parenthesis of the same; a name introduced by a preposition inside the asking sentence ("... on
web-07?"); and a ticket named as one ("ticket INC-48213") wherever it stands. A name elsewhere in the asking sentence ("How do I drain web-07?") is kept: there it may be the
very thing asked about.

Two more kinds of the asker's own text are left out the same way: lines pasted from a terminal or a log
(`without_pasted_lines`: time stamps, hosts, PIDs, prompts, a command's output), and the situation told after
the question when it names only what the knowledge base lacks (`situation_removed`: a platform, a user, a
weekday, a path of the asker's). The sentences that tell only the asker's setup before or after what they
ask (a release, a platform, a numbered host, a path, an account), and lines of their configuration or output
pasted around a question that names its own topic, are left out too (`environment_removed`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection

from athena.principals import Principal
from knowledge.text import IDENTIFIER_PREFIX, analyze

# ticket and change numbers of the common service desks: INC0012345, CHG-48213, RITM0012345
_DESK_TICKET = r"(?:INC|CHG|CR|RITM|REQ|PRB|TASK|SCTASK|SR|CS|TKT)-?\d{4,}"
# an issue tracker's key (OPS-4412); standards and algorithms are written so too (RFC-1918, SHA-256), so a key
# of theirs counts only after a word that says it is a ticket
_TRACKER_KEY = re.compile(r"[A-Z][A-Z0-9]{1,9}-\d{2,}")
_STANDARD_KEYS = frozenset(
    [
        "RFC",
        "ISO",
        "IEC",
        "IEEE",
        "SHA",
        "AES",
        "DES",
        "MD",
        "CVE",
        "CWE",
        "UTF",
        "TLS",
        "SSL",
        "PCI",
        "NIST",
        "SP",
        "FIPS",
        "ECMA",
        "ANSI",
        "ITU",
        "CIS",
        "RAID",
        "DDR",
        "USB",
        "HTTP",
        "X",
        "EN",
        "DIN",
        "BS",
        "SMB",
    ]
)
_TICKET_WORDS = r"(?:ticket|incident|inc|case|change|chg|cr|issue|bug|jira|request|req|problem|ref|reference)"
# a host: name parts and a numbered suffix (web-07, core-rtr-01, db-03a), optionally with its domain; a
# number without a leading zero only after a word that says it is a host ("raid-10", "port-channel-10")
_HOST = re.compile(r"[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-(\d{1,3})[a-z]?(?:\.[a-z][a-z0-9-]*)*", re.IGNORECASE)
# a host written without a dash (web07, db01): only after a word that says it is a host
_HOST_UNDASHED = re.compile(r"[a-z]{2,}\d{1,3}[a-z]?", re.IGNORECASE)
_HOST_WORDS = r"(?:host|hostname|server|node|box|vm|machine|instance|router|switch|firewall)"
_ENVIRONMENT = (
    r"(?:prod|production|staging|stage|stg|dev|qa|uat|preprod|pre-prod|sandbox|lab|dr|nonprod|non-prod)"
)
# an environment alone or with its region or number ("prod-east", "staging-2", "eu-prod"); not "libc6-dev",
# "dev-dbm1": a package or a device
_REGION = r"(?:east|west|north|south|central|eu|us|uk|ap|apac|emea|amer|\d{1,2})"
_ENVIRONMENT_NAME = re.compile(
    rf"(?:{_REGION}-)*{_ENVIRONMENT}(?:-{_REGION})*",
    re.IGNORECASE,
)
# times and dates in a context sentence ("since 02:00", "on 2026-03-14", "at 3am")
_TIME_OR_DATE = re.compile(
    r"\d{1,2}:\d{2}(?::\d{2})?(?:am|pm|z)?|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|\d{1,2}(?:am|pm)",
    re.IGNORECASE,
)
# a token: what lies between spaces, without the punctuation around it
_TOKEN = re.compile(r"[#\w][\w.:/#-]*\w|[#\w]")


def own_reference_shape(token: str, previous: str = "") -> bool:
    """`token` is written like a reference to the asker's own setup: a ticket or change number ("INC-48213",
    "CHG0012345", "#48213", "OPS-4412" after "ticket"), a numbered host ("web-07", "core-rtr-01"; "db01" after
    "host") or an environment ("prod-east", "staging"). `previous`: the word before it, lower-cased.

    Names with digits that are topics have none of these shapes: one name part and an unpadded number
    ("raid-10", "utf-8", "sha-256"), digits that are not a suffix ("ipv6", "x509", "ssh-ed25519"), a number of
    four digits ("rfc-1918", "CVE-2024-1234")."""
    ticket_word = re.fullmatch(_TICKET_WORDS, previous) is not None
    if re.fullmatch(_DESK_TICKET, token, re.IGNORECASE):
        return True
    key = _TRACKER_KEY.fullmatch(token)
    if key and (
        ticket_word or (len(token.split("-", 1)[1]) >= 3 and token.split("-")[0] not in _STANDARD_KEYS)
    ):
        return True
    if re.fullmatch(r"#\d{3,}", token) or (ticket_word and re.fullmatch(r"#?\d{3,}", token)):
        return True
    host_word = re.fullmatch(_HOST_WORDS, previous) is not None
    host = _HOST.fullmatch(token)
    if host:
        padded = host.group(1).startswith("0") and len(host.group(1)) > 1
        if padded or host_word:
            return True
    if host_word and _HOST_UNDASHED.fullmatch(token):
        return True
    return _ENVIRONMENT_NAME.fullmatch(token) is not None


def own_references(text: str, principal: Principal) -> set[str]:
    """The tokens of `text` that are references to the asker's own setup: shaped so (`own_reference_shape`)
    and held by no chunk the principal may read (as an identifier when the token is one)."""

    tokens = _TOKEN.findall(text)
    shaped = {
        token
        for previous, token in zip(["", *tokens], tokens, strict=False)
        if own_reference_shape(token, previous.lower())
    }
    if not shaped:
        return set()
    return {token for token in shaped if _key_terms(token)} - named_in_readable_chunks(shaped, principal)


def named_in_readable_chunks(names: Collection[str], principal: Principal) -> set[str]:
    """Those of `names` that a chunk the principal may read holds (as an identifier when the name is one)."""
    from knowledge.index_selectors import terms_readable

    keys = {name: _key_terms(name) for name in names}
    readable = terms_readable({t for found in keys.values() for t in found}, principal)
    return {name for name, found in keys.items() if set(found) & readable}


def _key_terms(token: str) -> list[str]:
    terms = analyze(token)
    whole = [t for t in terms if t.startswith(IDENTIFIER_PREFIX)]
    return whole or terms


# what a log line starts with: a syslog or journal time stamp, the host, and the program (and its PID) that
# logged it ("Dec  7 03:12:44 edge-rtr01 keepalived[2231]: ", "2026-12-07T02:19:05.026+01:00 ntp01 chronyd[37]: "),
# then a kernel's uptime stamp ("[54123.007812] "); or that stamp alone (dmesg)
_STAMP = (
    r"(?:[A-Z][a-z]{2}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)"
)
_LOG_PREFIX = re.compile(
    rf"^\s*(?:<\d{{1,3}}>\d?\s*)?{_STAMP}(?:\s+[\w.-]+)?\s+[\w./()@-]+(?:\[\d+\])?:\s+(?:\[\s*\d+\.\d+\]\s*)?"
    r"|^\s*\[\s*\d+\.\d+\]\s+"
)
# a shell prompt: user@host and the working directory, then $ or # ("root@dns02:~# ", "[ops@web01 ~]$ ")
_PROMPT = re.compile(r"^\s*\[?[\w.-]+@[\w.-]+(?:[: ][^\s#$\]]*)?\]?\s?[#$%]\s+(?=\S)")
# a line of the asker's own that points back at what they pasted ("what does this mean?")
_POINTS_BACK = re.compile(r"\b(?:this|these|above)\b", re.IGNORECASE)
# a line that asks: it ends with a question mark, or opens with a question word or a request ("walk me
# through ...", "explain ..."); output may hold a "?" elsewhere ("^? 10.10.0.5")
_ASKS = re.compile(
    r"\?\s*$|^\W*(?:how|what|why|when|where|which|who|can|could|does|do|did|is|are|should|would|will|"
    r"explain|describe|tell|show|walk|help|give)\b",
    re.IGNORECASE,
)
# the fewest words of a question that stands on its own without naming anything
_STANDS_ALONE = 6


def without_pasted_lines(question: str) -> str:
    """`question` without what the asker pasted into it from a terminal or a log, when their own lines ask a
    question of their own: log lines (`_LOG_PREFIX`), commands typed at a shell prompt (`_PROMPT`) and the
    output that follows a command up to the next line that asks, and lines quoted from the message answered
    ("> we changed nothing since Friday"). Their time stamps, host names, PIDs, user names and output read as
    terms no document holds (a topic the knowledge base lacks: every such question was turned away) and
    lowered P(answerable). Where the asker's lines name no topic of their own ("what does this mean?") or point
    back at the paste ("why does keepalived log this?"), the paste is what is asked about: it is kept, without
    its time stamps, hosts and prompts (`kept_paste`). `question` itself when nothing is pasted."""
    return pasted_read(question)[0]


def kept_paste(question: str) -> tuple[str, ...]:
    """The lines pasted into `question` that `without_pasted_lines` keeps because they are what is asked about,
    as it writes them (stripped, without time stamps, hosts and prompts); () when none is kept. They are quoted
    text: later steps read them as typed (`agents.steps.rewrite.written_out`)."""
    return pasted_read(question)[1]


def pasted_read(question: str) -> tuple[str, tuple[str, ...]]:
    """`without_pasted_lines(question)` and `kept_paste(question)`, the lines read once for both."""
    pasted, own = _pasted_and_own(question)
    if not pasted:
        return question, ()
    if not _paste_asked(own):
        return " ".join(own), ()
    kept = tuple(line.strip() for line in pasted if line.strip())
    return "\n".join([*kept, *(line for line in own if line)]), kept


def _pasted_and_own(question: str) -> tuple[list[str], list[str]]:
    """The lines of `question` pasted from a terminal or a log (without their stamps and prompts), and the
    asker's own lines (stripped)."""
    lines = [line for line in question.splitlines() if line.strip()]
    pasted, own = [], []
    after_command = False
    for line in lines:
        prompt, stamp = _PROMPT.match(line), _LOG_PREFIX.match(line)
        if line.lstrip().startswith(">"):  # quoted from the message answered ("> we changed nothing")
            pasted.append(line.lstrip().lstrip(">").strip())
            after_command = False
        elif prompt:
            pasted.append(line[prompt.end() :])
            after_command = True
        elif stamp:  # a log line on its own or in a command's output
            pasted.append(line[stamp.end() :])
        elif after_command and not _ASKS.search(line):
            pasted.append(line)
        else:
            after_command = False
            own.append(line.strip())
    return pasted, own


def _paste_asked(own: list[str]) -> bool:
    """Whether the asker's own lines ask about what they pasted: there are none, they name no topic and are too
    short to stand alone, or they point back at the paste."""
    asked = " ".join(own)
    stands_alone = _names_a_topic(asked) or len(asked.split()) >= _STANDS_ALONE
    return not (own and stands_alone and not _POINTS_BACK.search(asked))


def _names_a_topic(text: str) -> bool:
    """Whether `text` holds a search term that is not an everyday word: a name, an option, a setting."""
    from agents.steps.retrieve import everyday_terms

    return bool(set(analyze(text)) - everyday_terms(text))


# a sentence ends at . ! ? ; or a colon, before a space
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_ASKING = re.compile(
    r"\?|^\W*(?:how|what|why|when|where|which|who|whom|whose|can|could|does|do|did|is|are|was|were|should|"
    r"would|will|may|shall)\b",
    re.IGNORECASE,
)
_PARENTHESIS = re.compile(r"\s*\(([^()]*)\)")
_LEAD = r"(?:on|at|from|for|in|across)"


def without_own_context(question: str, principal: Principal) -> str:
    """`question` without the asker's own context (see the module's docstring) and without the situation told
    after it that names something the knowledge base lacks and nothing it holds (`situation_removed`);
    `question` itself when too little would be left (under two words)."""
    question = links_removed(question, principal) or question
    own = own_references(question, principal)
    text = (context_removed(question, own) or question) if own else question
    text = situation_removed(text, own, principal) or text
    return environment_removed(text, own, principal) or text


# a link the asker pastes to a page of their own (a wiki page, a ticket, a chat thread), with the word that leads
# it in ("re", "see", "per") and the dash or colon that sets it off: "re https://wiki.corp.example/x/AbC12 - how
# do I ...", "... (see https://...)"; its last character is no end punctuation
_LINK = re.compile(r"(?:(?:https?|ftp)://|www\.)[^\s<>()\[\]{}\"'`]*[^\s<>()\[\]{}\"'`.,;:!?]", re.IGNORECASE)
_LINK_LEAD = (
    r"(?:re|see|per|from|on|in|at|via|cf\.?|according\s+to|as\s+in|following|link|page|wiki|doc|docs)"
)


def links_removed(question: str, principal: Principal) -> str:
    """`question` without the links it holds that no chunk the principal may read holds, each with the word
    that leads it in and the separator after it, or with the parenthesis around it: a page of the asker's own,
    which the service cannot read. The address was one term no document holds, so the question was turned away
    as about a topic the knowledge base lacks (train questions after "re <link> - ": answered 114 -> 9 of 116).
    A link a readable document writes out stays, and so does every link when the rest would not stand as a
    question of its own (it names no topic and has under `_STANDS_ALONE` words: "what is at <link>?"). "" when
    nothing is left out."""
    links = _LINK.findall(question)
    if not links:
        return ""
    # a link is one identifier to the index, as a document that writes it out indexes it
    held = named_in_readable_chunks(links, principal)
    foreign = [link for link in links if link not in held]
    if not foreign:
        return ""
    names = "|".join(re.escape(link) for link in sorted(foreign, key=len, reverse=True))
    pattern = re.compile(
        rf"(?:(?<=\s)[-\u2013\u2014:,;]+\s+)?(?:\b{_LINK_LEAD}\s*:?\s+)?(?:{names})(?:\s*[-\u2013\u2014:,;]+(?=\s))?",
        re.IGNORECASE,
    )
    # a parenthesis around the link is the asker's aside ("(our wiki page <link> didn't say)"), gone with it
    text = re.sub(rf"\s*\([^()]*(?:{names})[^()]*\)", " ", question)
    text = pattern.sub(" ", text)
    text = re.sub(r"[ \t]*([?.!,;:])(?=\s|$)", r"\1", re.sub(r"[ \t]+", " ", text))
    text = re.sub(r"([?!])[.,;:]+(?=\s|$)", r"\1", text).strip()  # "...? see <link>." ends on its "?"
    if not (_names_a_topic(text) or len(text.split()) >= _STANDS_ALONE):
        return ""
    return text


def situation_removed(question: str, own: Collection[str], principal: Principal) -> str:
    """`question` without the sentences after its last asking one, and the parentheses with a path anywhere in
    it, that name something the knowledge base lacks (`distinctive_unknown_terms`: the question would be turned
    away) and nothing a chunk the principal may read holds beyond the asking part's own terms, everyday words
    and the asker's own references `own`: the situation told after the question ("Running on core-sw-gw, a VM on
    our Proxmox cluster; nobody touched it since the migration last week.", "(our config is at
    /srv/ops/netplan/50-uplink.yaml)"). Its names are the asker's (a virtualisation platform, a release, a user,
    a path of their own), read as topics the knowledge base lacks, and it cannot help find the answer. An
    identifier counts as a whole ("/srv/ops/netplan/50-uplink.yaml", not "srv"). A sentence before the question
    is kept here: it may set the question up ("My laptop cannot reach the internet through the tunnel. Which
    setting fixes it?"; `environment_removed` leaves out the one that only tells the setup), and so is one
    after it that names a topic of the documents ("... This is for keepalived.") or names nothing the knowledge
    base lacks ("... I need it before the change window": it turns nothing away, and may say what is meant). ""
    when nothing is left out or too little would be left."""
    from agents.steps.retrieve import distinctive_unknown_terms
    from knowledge.index_selectors import terms_readable

    sentences = [s for s in _SENTENCE_END.split(question.strip()) if s]
    last_ask = max((i for i, s in enumerate(sentences) if _ASKING.search(s)), default=-1)
    if last_ask < 0:
        return ""
    owned = {t for name in own for t in _key_terms(name)}

    def adds_nothing(text: str) -> bool:
        everyday = _everyday_in(text)
        # one that names nothing the unknown-term check reads as a topic the knowledge base lacks is kept: it
        # turns no question away, and its words may say what is meant ("I need it before the change window")
        if not distinctive_unknown_terms(analyze(text), principal, everyday=everyday):
            return False
        named = {t for token in _TOKEN.findall(text) for t in _key_terms(token) if len(t.lstrip("=")) > 2}
        return not terms_readable(named - asked_terms - everyday - owned, principal)

    def situation(match: re.Match[str]) -> str:
        # a parenthesis inside the question is as often a name it asks about ("(ip helper-address)"): only one
        # that gives a path of the asker's is their situation ("(our config is at /srv/ops/edge.nft)")
        inside = match.group(1)
        return "" if "/" in inside and adds_nothing(inside) else match.group(0)

    asked_terms = set(analyze(" ".join(_PARENTHESIS.sub("", s) for s in sentences[: last_ask + 1])))
    kept = sentences[: last_ask + 1] + [s for s in sentences[last_ask + 1 :] if not adds_nothing(s)]
    text = _PARENTHESIS.sub(situation, " ".join(kept)).strip()
    if text == question.strip() or len(text.split()) < 2:
        return ""
    return text


# a sentence or a line of its own: where what the asker tells of their setup stands apart from what they ask
_SEGMENT_END = re.compile(r"\s*\n\s*|(?<=[.!?])\s+")
# a word that points back at something said before it ("How do I set its MTU?", "Which option stops that?")
_POINTS_AT = re.compile(r"(?:this|these|those|it|its|they|them|their|such|same)", re.IGNORECASE)
# how many sentences before it an asking one may lean on ("Chrony steps the clock at boot. The VMs are new.
# Which setting stops it?")
_LEANS_ON = 2


def environment_removed(question: str, own: Collection[str], principal: Principal) -> str:
    """`question` without what the asker tells of their setup before or after what they ask: the sentences that
    ask nothing and whose names that the knowledge base lacks (`distinctive_unknown_terms`) all name the setup
    (`_names_setup`: a release, a version, a model, a numbered host, a path, a platform: "We're on Ubuntu 22.04
    with kernel 6.1.", "The box is a Supermicro X11 with an X550 NIC.", "I edited /etc/ops/edge.conf on
    fw-dmz1."), and, where what is asked names a topic the documents hold (`_asked_parts`), the lines pasted
    among others around it that name anything the knowledge base lacks (their configuration or output). Read
    with the question, each such name was a topic the knowledge base lacks and the question was turned away
    whatever the documents say of what it asks (train questions with the asker's platform told after them:
    answered 114 -> 56 of 116).

    Kept: the sentences just before an asking one that names no topic of its own or points back ("We run
    Ubuntu 22.04 on the edge. How do I upgrade it?"), and a sentence that names a product the documents lack
    ("The VPN between the offices is Tinc. Which option sets the keepalive interval?"): the topic may then be
    what the knowledge base lacks, and the question is still turned away. "" when nothing is left out."""
    from agents.steps.retrieve import distinctive_unknown_terms
    from knowledge.index_selectors import terms_readable

    segments = [s for s in _SEGMENT_END.split(question.strip()) if s]
    asking = [i for i, s in enumerate(segments) if _ASKS_SEGMENT.search(s)]
    if not asking or len(asking) == len(segments):
        return ""
    # which of the message's terms the asker may read, looked up once for every sentence and line of it
    every = {t for s in segments for t in analyze(s)}
    every |= {t for s in segments for token in _TOKEN.findall(s) for t in _key_terms(token)}
    readable = terms_readable(every, principal)
    asked = _asked_parts(segments, asking, readable)
    # what an asking sentence that names no topic of its own may be about: the sentences just before it
    leaned = {j for i in asking if i not in asked for j in range(max(i - _LEANS_ON, 0), i)}
    owned = {t for name in own for t in _key_terms(name)}
    lines = "\n" in question.strip()

    def environment(segment: str) -> bool:
        terms = [t for t in analyze(segment) if t not in owned]
        unknown = distinctive_unknown_terms(
            terms, principal, everyday=_everyday_in(segment), readable=readable & set(terms)
        )
        if not unknown:
            return False
        if lines and asked:
            return True  # a line of their configuration or output, pasted around a question of its own
        # the parts of a numbered host, a path or an address name the setup as the whole does ("jump" of
        # "jump-fra1"), and so does an account named as one ("as user jdoe")
        tokens = _TOKEN.findall(segment)
        setup = {
            t
            for previous, token in zip(["", *tokens], tokens, strict=False)
            if _names_setup(token.lower()) or _ACCOUNT_WORDS.fullmatch(previous)
            for t in analyze(token)
        }
        return all(term in setup or _names_setup(term) for term in unknown)

    kept = [s for i, s in enumerate(segments) if i in asked or i in leaned or not environment(s)]
    if len(kept) == len(segments):
        return ""
    return "\n".join(kept) if lines else " ".join(kept)


# a sentence or a line that asks: it ends with a question mark, or opens with a question word or a request
# (a "?" inside a line of configuration or output asks nothing: "*.* ?PerHost")
_ASKS_SEGMENT = re.compile(
    r"\?\W*$|^\W*(?:how|what|why|when|where|which|who|whom|whose|can|could|does|do|did|is|are|was|were|should|"
    r"would|will|may|shall|explain|describe|tell|show|walk|help|give)\b",
    re.IGNORECASE,
)


def _asked_parts(segments: list[str], asking: list[int], readable: Collection[str]) -> set[int]:
    """The indexes of the segments that make up what is asked where it names its own topic: each asking segment
    (`asking`) with the ones before it that it leans on (up to `_LEANS_ON`), where the first of them names a
    term of a chunk the principal may read that is not an everyday word before any word that points back (an
    asking segment that points back anywhere leans on what came before: "How do I change the MTU of its
    tunnel?"). An asking segment that names no topic so is left out. `readable`: the segments' terms that a
    chunk the asker may read holds."""
    parts: set[int] = set()
    for i in asking:
        for start in range(i, max(i - _LEANS_ON, 0) - 1, -1):
            if start == i and _points_back(segments[i]):
                continue
            if _names_before_pointing(" ".join(segments[start : i + 1]), readable):
                parts.update(range(start, i + 1))
                break
    return parts


def _points_back(text: str) -> bool:
    return any(_POINTS_AT.fullmatch(token) for token in _TOKEN.findall(text)) or bool(
        _ENDS_ON_THAT.search(text)
    )


# "that" points back where it ends what is asked ("Which option stops that?"), not where it joins a clause
_ENDS_ON_THAT = re.compile(r"\bthat\W*$", re.IGNORECASE)

# what names the asker's platform rather than a topic: operating systems and their releases, hypervisors and
# clouds, server and board makers (lower case, as the index reads them)
_PLATFORM_WORDS = (
    "debian ubuntu rhel redhat centos rocky alma almalinux fedora suse opensuse sles alpine gentoo raspbian "
    "bookworm bullseye buster trixie jammy focal noble bionic windows macos freebsd openbsd kvm qemu proxmox "
    "vmware esxi vsphere hyperv hyper-v xen xenserver xcp-ng virtualbox nutanix ahv lxc lxd docker podman "
    "kubernetes k8s openstack aws ec2 azure gcp hetzner ovh digitalocean linode dell poweredge hpe proliant "
    "lenovo thinkpad thinksystem supermicro intel amd epyc xeon mellanox realtek raspberry nuc virtio vcpu vcpus "
    "bare-metal baremetal"
)


# the words that say the next one is an account's name ("as user jdoe", "login netadm")
_ACCOUNT_WORDS = re.compile(r"(?:user|username|login|account)", re.IGNORECASE)


def _names_setup(term: str) -> bool:
    """Whether an index term names the asker's setup rather than a topic: a release, a version, a model or a
    numbered host (it holds a digit: "22.04", "6.1", "r640", "lbint1"), a path or a mail address, or a platform
    (`_PLATFORM_WORDS`). Only a term that no chunk the asker may read holds is asked about: a name with digits
    that the documents hold ("ipv6", "x509") is a topic of theirs and never reaches here."""
    bare = term.lstrip("=")
    return any(c.isdigit() for c in bare) or any(c in bare for c in "/@") or bare in _platform_terms()


@functools.cache
def _platform_terms() -> frozenset[str]:
    return frozenset(t.lstrip("=") for word in _PLATFORM_WORDS.split() for t in analyze(word))


def _names_before_pointing(text: str, readable: Collection[str]) -> bool:
    """Whether `text` names a topic the documents hold (one of the terms `readable`, those of a chunk the asker
    may read, that is not an everyday word) before any word that points back at what was said before it. A
    question in everyday words alone does not: "Which flag must the program be built with?" asks about the
    program the sentence before it names."""
    everyday, known = _everyday_in(text), set(readable)
    for token in _TOKEN.findall(text):
        if _POINTS_AT.fullmatch(token):
            return False
        if (set(_key_terms(token)) - everyday) & known:
            return True
    return False


def _everyday_in(sentence: str) -> set[str]:
    """The terms of the everyday words of `sentence` (`everyday_terms`); its first word has its capital for the
    sentence's sake ("Running on ..."), not for a name's."""
    from agents.steps.retrieve import everyday_terms

    return everyday_terms(sentence[:1].lower() + sentence[1:])


def context_removed(question: str, own: Collection[str]) -> str:
    """`question` without its context sentences, parentheses and preposition-led names made of the references
    `own` (see the module's docstring); "" when too little would be left."""
    from agents.steps.retrieve import everyday_words, is_everyday

    words = everyday_words()

    def neutral(token: str, first: bool) -> bool:
        if token in own or _TIME_OR_DATE.fullmatch(token) or not analyze(token):
            return True
        # a capitalised word inside a sentence names something ("on our Juniper web-07")
        if token[:1].isupper() and not first:
            return False
        # "we", "on", "is": too short to name a topic, and not all of them are stop words of the index
        return token.isalpha() and (len(token) <= 2 or is_everyday(token.lower(), words))

    def context_only(text: str) -> bool:
        tokens = _TOKEN.findall(text)
        return any(t in own for t in tokens) and all(neutral(t, i == 0) for i, t in enumerate(tokens))

    text = _PARENTHESIS.sub(lambda m: "" if context_only(m.group(1)) else m.group(0), question)
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    kept = [_context_tail_cut(s, context_only) for s in sentences if _ASKING.search(s) or not context_only(s)]
    if not kept:
        return ""
    text = " ".join(kept)
    text = _led_names_removed(text, own)
    text = text.strip()
    return text if len(text.split()) >= 2 else ""


def _context_tail_cut(sentence: str, context_only: Callable[[str], bool]) -> str:
    """`sentence` without a context sentence run on to it: a question typed without its end mark and the
    context after it ("what does it mean We hit this on web-07 last night."), told by the capital letter of
    the context's first word, a word too common to index ("We", "This", "It"; a capitalised word that is
    indexed may be a name: "why does the Juniper on web-07 drop frames")."""
    for start in re.finditer(r"(?<=[a-z0-9])\s+(?=[A-Z][a-z]*\b)", sentence):
        tail = sentence[start.end() :]
        if not analyze(tail.split()[0]) and not _ASKING.search(tail) and context_only(tail):
            return sentence[: start.start()]
    return sentence


def _led_names_removed(text: str, own: Collection[str]) -> str:
    """Each of `own` introduced by a preposition ("on web-07", "in prod-east", "for ticket INC-48213", "on host
    core-rtr-01") taken out with its preposition and the words that say what it is."""
    names = "|".join(re.escape(name) for name in sorted(own, key=len, reverse=True))
    pattern = re.compile(
        rf"\s+{_LEAD}\s+(?:(?:the|our|my|a|an)\s+)?(?:(?:{_HOST_WORDS}|{_TICKET_WORDS}|cluster|environment|env)"
        rf"\s+)?(?:{names})(?![\w-])(?:\s+(?:{_HOST_WORDS}|cluster|environment|env)\b)?",
        re.IGNORECASE,
    )
    text = pattern.sub("", text)
    # a ticket named as one is never the topic, wherever it stands ("what does it mean ticket INC-48213")
    tickets = [
        name for name in own if re.fullmatch(rf"{_DESK_TICKET}|#?\d+", name) or _TRACKER_KEY.fullmatch(name)
    ]
    if not tickets:
        return text
    numbers = "|".join(re.escape(name) for name in sorted(tickets, key=len, reverse=True))
    named_ticket = re.compile(rf"\s*\b{_TICKET_WORDS}\s+(?:{numbers})(?![\w-])", re.IGNORECASE)
    return named_ticket.sub("", text)
