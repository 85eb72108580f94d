"""Where an answer sentence keeps its passage's line breaks.

The sentence splitter joins a passage's lines into sentences, so a configuration snippet or a command comes out
as one line ("$SpoolDir /var/spool/relay # queued files $RetryCount -1 # retry forever"): hard to read,
and wrong to copy (the first "#" comments out the rest). `laid_out` finds the sentence in its passage and
gives back its code lines as lines of their own, each indented by CODE_INDENT after a blank line (a Markdown
code block; the chat page shows them as one), and the prose around them as it was. Only whitespace changes:
the words, and so any answer matched against them, stay the same.

A line counts as code by the marks prose lacks (`code_line`, a listing's line numbers aside): a shell
prompt, a "$Directive" or "key = value" setting, a manual's syntax rule ("UNIT := second | minute"), an
opening or closing brace, a statement's semicolon or a comment after the code (where the code part reads as
no prose), a backslash continuing the line, a call "name(...)", a file named before its lines
("/etc/relay/main.conf:"), or, in a manual page, the page's own command at the start of an example line
("probe -c 3 gw1"), and a command right under a lead-in ending in ':' ("... by doing:" above "relayctl stats
--all"). The lines between such lines that read as no prose ("timeout 16", "mode active", "}"), comment
lines, and the lines inside a brace the block opened go with them. A line that the document's own format marks
as code (an HTML <pre>, a Markdown code block: `Evidence.code_lines`) is code whatever it reads as ("router bgp
64510"), and a marked line that is a sentence of its own is shown alone unless it is unfinished or a lone
comment mark.

`command_line` tells a sentence that is a line of code on its own in the passage, and gives it back as the
line is written (the splitter collapses its spacing): a code line; a command under a lead-in, a line ending in
':' that reads as prose (under it directly, or under commands that are; under one word, "Example:", only a
command with an argument only a command has, a path or an option); a command that carries an option or
a substitution ("kill -HUP `cat /run/relay.pid`"); or a root shell's command, whose '#' prompt the splitter
drops as a heading mark ("... make it by running the lines below (as root):" above "# mkdir /run/relay"). A '#'
line counts as a command only under a lead-in with nothing but such commands between, with no setting ("#
retries = 3" is one commented out) and no code under it (a comment annotates the line below it); a line
under a '#' line is a command's output or the line a comment annotates, and the rest of a command continued
with '\\' is no command alone. Table rows, lines that end as prose does, a manual's list entries ("gre - GRE
encapsulation", "relay_limit (100)"), manual page references and a command left unfinished on its line (a
here-document, a trailing pipe) are never shown alone as code. The answer shows such a line as a one-line
code block, and `next_line` tells when two of them are consecutive lines of the passage, so that they show as
one block.

`record_set_off` shows a record's "Label: value" lines ("Phone: ...", "E-mail: ...") one per line, as they stand in
the passage. `term_set_off` reads a definition list's term line ("-q, --quiet" above "Print nothing but errors.")
as "-q, --quiet: Print nothing ...", as a heading on its own line is set off.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import NamedTuple

from knowledge.text import LABEL_LINE, PROSE, TERM_ITEM, TWO_WORDS

CODE_INDENT = "    "
# a "key = value" setting (not an option's "--name=VALUE"), and a file named before its lines
# ("/etc/relay/main.conf:"): marks of code on their own, and kept apart by the tests of a line alone
SETTING_PATTERN = r"(?!-)[\w./:-]+\s*=\s*\S"
FILE_PATTERN = r"/[\w./-]+:"
SETTING = re.compile(SETTING_PATTERN)
FILE_NAMED = re.compile(FILE_PATTERN)
# a line that only code has
STRONG_CODE = re.compile(
    r"""^(?:
        [$%>]\s+\S                          # a shell prompt
      | [\w.-]+@[\w.-]+:\S*[$\#]\s          # user@host:~$ prompt
      | \$[A-Za-z]\w*\b                     # a "$Directive" setting
      | """
    + SETTING_PATTERN
    + r"""                                  # key = value
      | [A-Z_][A-Z0-9_-]*\s+:=\s(?!.*[a-z]\.$)  # a manual's syntax rule ("TIME_UNIT := second | minute"), not a
                                          # legend ("Q := Quiet Retry flag.")
      | """
    + FILE_PATTERN
    + r"""$                                 # a file named before its lines
      | [\w.-]+\(.*\)\s*;?$                 # a call
      | [}\])]+\s*;?$                       # a closing brace
    )
    | [{\\]$                                # a brace opened, a line continued
    """,
    re.VERBOSE,
)
# the number a listing puts before each of its lines, aligned apart from them ("4       listen = 8080"); not
# a value list's key ("0 = cold start") nor a number in prose ("1 character = 1 byte")
LINE_NUMBER = re.compile(r"^\d{1,4}\s{2,}(?=[^\s=])")
# a listing's numbered line that names a file in the first column ("1 /etc/relay/main.conf:")
NUMBERED_FILE = re.compile(r"\d{1,4}\s+" + FILE_PATTERN)
# manual page references ("relayd(8), relay.conf(5)", "lbctl(8)"), which the call pattern would take for code: a
# section is one digit, with letters perhaps ("3pcap"); a call's argument is no such thing ("int2hex(61)")
MAN_REFERENCES = re.compile(r"[\w.+-]+\([1-9][a-z]*\)(?:,?\s+[\w.+-]+\([1-9][a-z]*\))*[,.]?", re.IGNORECASE)
# a comment after the code ("script check.sh  # every 5 seconds"); with a statement's ";" at the end, a mark
# that prose can carry too ("... the ticket;", "lines that begin with # are ignored"), so it counts only where
# the code part does not read as prose
AFTER_CODE_COMMENT = re.compile(r"\S\s+#\s")
# a comment line of code or configuration ("# every 5 seconds", "/* ... */", "! pool"): code
# between code lines, not code on its own
COMMENT = re.compile(r"^(?:#|//|/\*|\*/|;|!\s)")
# a command and its arguments ("relayctl stats --all", "cat /run/<pid>/quota")
COMMAND_WITH_ARGUMENTS = re.compile(r"^[a-z][\w.+-]*\s+\S")
# a parameter and its default in parentheses ("relay_limit (100)", "queue_dir (see 'relayctl -d' output)"):
# an entry of a manual's list, not a line to paste (a call's arguments have '=' or quotes: 'template (name="x")')
NOTED_PARAMETER = re.compile(r"^[a-z][\w.-]*\s+\([^=\"()<>]*\)$")
# the most words a term line above its description holds (term_set_off, record_set_off)
TERM_WORDS = 8
# a root shell's prompt ("# mkdir /run/relay"), or a comment's mark: the sentence splitter drops it
ROOT_PROMPT = re.compile(r"^#\s+(?=\S)")
# a capitalised word that opens a sentence ("Print nothing ..."), not a label ("Note: ...") or a name in capitals
STARTS_SENTENCE = re.compile(r"[A-Z][a-z]+(?:[\s,]|$)")
SENTENCE_END = (".", ":", ";", ",", "?", "!")


def code_line(line: str, command: str = "") -> bool:
    """Does `line` (stripped) read as code or configuration? `command` is a manual page's own command (its
    example lines start with it; "cmd add - add a link" is its synopsis with prose). A listing's line number
    ("14    timeout = 16") does not hide that the line is code."""
    if MAN_REFERENCES.fullmatch(line):
        return False
    unnumbered = LINE_NUMBER.sub("", line)
    if (unnumbered != line and code_line(unnumbered, command)) or NUMBERED_FILE.fullmatch(line):
        return True
    if STRONG_CODE.search(line):
        return True
    comment = AFTER_CODE_COMMENT.search(line)
    code = line[: comment.start() + 1] if comment else line.removesuffix(";")
    if (comment or line.endswith(";")) and not PROSE.search(code):
        return True
    return bool(command) and line.startswith(f"{command} ") and not line.endswith(".") and " - " not in line


def _between_code(line: str) -> bool:
    """May `line` sit between code lines: a comment, or no sentence's end, no prose and no capitalised word
    first ("Examples")?"""
    if COMMENT.match(line):
        return True
    return not line.endswith(SENTENCE_END) and not PROSE.search(line) and not re.match(r"[A-Z][a-z]", line)


def _span(sentence: str, passage: str) -> re.Match[str] | None:
    words = sentence.split()
    if len(words) < 2:
        return None
    return re.search(r"\s+".join(re.escape(word) for word in words), passage)


class _Found(NamedTuple):
    """Where a sentence stands in its passage over two lines or more (`_fragments`)."""

    lines: tuple[tuple[str, str], ...]  # (indentation, text) of each of its lines
    starts_line: bool  # whether it starts its first line
    start: int  # where it starts in the passage


@lru_cache(maxsize=256)
def _fragments(sentence: str, passage: str) -> _Found | None:
    """The sentence's lines in the passage as (indentation, text), whether it starts its first line, and where
    it starts; None when it stands on one line or is not found as written. The first line's indentation is the
    passage line's where the sentence starts it ("" otherwise). Cached: `laid_out`, `record_set_off` and
    `term_set_off` each ask for every sentence an answer shows."""
    match = _span(sentence, passage)
    if match is None or "\n" not in match.group(0):
        return None
    head = passage[passage.rfind("\n", 0, match.start()) + 1 : match.start()]
    starts_line = not head.strip()
    lines = match.group(0).split("\n")
    out = [(head if starts_line else "", lines[0].strip())]
    out += [(line[: len(line) - len(line.lstrip())], line.strip()) for line in lines[1:]]
    fragments = tuple((indent.replace("\t", CODE_INDENT), text) for indent, text in out if text)
    return _Found(fragments, starts_line, match.start())


def _code_at(
    fragments: Sequence[tuple[str, str]], at: int, command: str, marked: Collection[str] = ()
) -> bool:
    """Is the line at `at` code: a line of code the passage's format marks as code (`marked`), a code line, or
    a command right under a lead-in ("... by doing:" above "relayctl stats --all"): a word in lower case and
    its arguments, no prose and no sentence's end?"""
    text = fragments[at][1]
    if text in marked or code_line(text, command):
        return True
    return (
        at > 0
        and fragments[at - 1][1].endswith(":")
        and COMMAND_WITH_ARGUMENTS.match(text) is not None
        and not PROSE.search(text)
        and not text.endswith(SENTENCE_END)
        and not NOTED_PARAMETER.match(text)
    )


def _code_runs(
    fragments: Sequence[tuple[str, str]], command: str, marked: Collection[str] = ()
) -> list[tuple[int, int]]:
    """[start, end) of each run of lines that holds code: a code line with the lines that may sit between code
    lines next to it, and every line inside a brace or parenthesis the run opened or indented deeper than the
    run's first line (an example's long statement)."""
    code = [_code_at(fragments, at, command, marked) for at in range(len(fragments))]
    runs: list[tuple[int, int]] = []
    start: int | None = None
    depth = base = 0
    for at in range(len(fragments) + 1):
        indent, text = fragments[at] if at < len(fragments) else ("", "")
        inside = start is not None and (depth > 0 or len(indent) > base)
        part = at < len(fragments) and (inside or code[at] or _between_code(text))
        if part:
            if start is None:
                start, depth, base = at, 0, len(indent)
            depth = max(0, depth + text.count("{") + text.count("(") - text.count("}") - text.count(")"))
        elif start is not None:
            if any(code[start:at]):
                runs.append((start, at))
            start = None
    return runs


def laid_out(sentence: str, passage: str, command: str = "", marked: Collection[str] = ()) -> str | None:
    """The sentence with its code lines on lines of their own (see the module's docstring), or None when it
    holds no code that spans lines. `marked`: the passage's lines that its format marks as code (an HTML
    `<pre>`, a Markdown code block), code whatever they read as ("router bgp 64510"). A blank line goes before
    each block (as Markdown wants it); a sentence that opens with code starts with it, and one that ends with
    code ends on its last code line."""
    found = _fragments(sentence, passage)
    if found is None:
        return None
    fragments = found.lines
    texts = [text for _, text in fragments]
    runs = _code_runs(fragments, command, marked)
    if not runs:
        return None
    out, at = "", 0
    for start, end in runs:
        out += _prose(texts[at:start])
        base = min(len(fragments[k][0]) for k in range(start, end))
        if start == 0 and found.starts_line:
            base = min(base, _listing_base(passage[: found.start], command, marked))
        block = "\n".join(CODE_INDENT + fragments[k][0][base:] + texts[k] for k in range(start, end))
        out += "\n\n" + block + "\n"
        at = end
    return (out + _prose(texts[at:])).rstrip("\n")


def _listing_base(above: str, command: str, marked: Collection[str]) -> int:
    """The least indentation of the code lines at the end of `above` (the passage up to the sentence), across
    blank lines (a listing that a blank line splits into two sentences: "backend web" / "  mode http" above
    "  server s1 10.7.0.1:80"), so that the sentence's lines keep their indentation within the listing; a
    large number when no code line is right above. A marked line that reads as prose (a manual that sets its
    text in the same `<pre>` as its examples) ends the listing."""
    base = 1 << 16
    for line in reversed(above.split("\n")[:-1]):
        text = line.strip()
        if not text:
            continue
        if not code_line(text, command) and (text not in marked or PROSE.search(text)):
            break  # (prose that a document sets in its listing's block is no part of the listing)
        base = min(base, len(line[: len(line) - len(line.lstrip())].replace("\t", CODE_INDENT)))
    return base


def _prose(lines: Sequence[str]) -> str:
    """Lines of prose as the sentence has them: one space between words (a manual's justified text has more)."""
    return " ".join(" ".join(lines).split())


def _lines(passage: str) -> tuple[tuple[str, str], ...]:
    """The passage's lines that hold text: (whitespace collapsed, as written but stripped)."""
    return tuple((" ".join(line.split()), line.strip()) for line in passage.splitlines() if line.strip())


def _where(sentence: str, lines: Sequence[tuple[str, str]]) -> list[tuple[int, bool]]:
    """Where `sentence` stands as a whole line: (line number, whether a root prompt opens it)."""
    target = " ".join(sentence.split())
    found = []
    for at, (line, _) in enumerate(lines):
        if line == target:
            found.append((at, False))
        elif ROOT_PROMPT.match(line) and ROOT_PROMPT.sub("", line) == target:
            found.append((at, True))
    return found


def _command_like(text: str) -> bool:
    """A word in lower case and its arguments, with no prose, no sentence's end, no table cells and no manual's
    term item ("relayctl stats --all"; not "dns | name resolution", which a shell pipe cannot be told from, nor
    "gre - GRE encapsulation")."""
    return (
        COMMAND_WITH_ARGUMENTS.match(text) is not None
        and " | " not in text
        and not PROSE.search(text)
        and not text.endswith(SENTENCE_END)
        and not TERM_ITEM.match(text)
        and not NOTED_PARAMETER.match(text)
    )


# a shell prompt and the command after it: a pipe after one is a command's, not a table's cells ("$ | end of
# the string" is a row)
PROMPT = re.compile(r"^(?:[$%>]\s+(?![|(])\S|[\w.-]+@[\w.-]+:\S*[$#]\s)")
# what a command line carries and prose does not: an option ("-USR1", "--all"), a command substituted (`...`,
# "$(...)"); not a pipe, which a table row's cells look like ("word | 0 | no")
SHELL_MARK = re.compile(r"\s--?[A-Za-z]|`|\$\(")


# a bracket or brace holding no other (the innermost)
BRACKETED = re.compile(r"\[[^\[\]]*\]|\{[^{}]*\}")


def _table_row(line: str) -> bool:
    """Does `line` hold a table's cell separators: " | " outside brackets and braces (a synopsis's "{ show |
    flush }" holds alternatives), in no syntax rule ("TTL := 1..255 | inherit") and after no shell prompt?"""
    if ":=" in line or PROMPT.match(line):
        return False
    outside = BRACKETED.sub("", BRACKETED.sub("", line))  # two levels: "[ { a | b } ]"
    return " | " in outside


# what leaves a command unfinished on its line: a here-document's body, a redirection's or a pipe's other end
UNFINISHED = re.compile(r"(?:<<-?\s*['\"]?\w+['\"]?|[|>])$")


def _alone_as_code(line: str) -> bool:
    """May a line standing alone be shown as code at all: no table row ("$name | word | no"), no sentence
    ending as prose does ("... for delivery.", "... each host given:", a file named before its lines aside;
    "... other arguments..." is no sentence's end), no list of manual page references, nothing unfinished?"""
    if _table_row(line):
        return False
    if re.search(r"[^.\s]\.$", line) and not (SETTING.match(line) and not PROSE.search(line)):
        return False
    if line.endswith(":") and not FILE_NAMED.fullmatch(line):
        return False
    return not (MAN_REFERENCES.fullmatch(line) or _unfinished(line))


def _unfinished(line: str) -> bool:
    """Is the command on `line` left unfinished: a here-document, a trailing pipe or redirection, or a line
    continued with '\\' (not all of the command)?"""
    return UNFINISHED.search(line) is not None or line.endswith("\\")


# a lead-in of one word ("Example:", "FreeBSD:"): comments follow it as often as commands
ONE_WORD_LEAD_IN = re.compile(r"[A-Za-z][\w-]*:")
# an argument that only a command has: a path, an option, a number, a setting ("mkdir /run/relay"); a comment in
# lower case ("# no authentication") has none
COMMAND_ARGUMENT = re.compile(r"\s\S*[/=.@:$~0-9-]")


def _lead_in(line: str, commands: Sequence[str]) -> bool:
    """Does `line` announce `commands`, the lines under it: a line of prose ending in ':' ("... make it by running
    the lines below (as root):"), not a file named before its lines, a comment or a code line; one word ("Example:")
    only where each command has an argument only a command has?"""
    if not line.endswith(":") or FILE_NAMED.fullmatch(line) or ROOT_PROMPT.match(line) or code_line(line):
        return False
    if TWO_WORDS.search(line):
        return True
    return ONE_WORD_LEAD_IN.fullmatch(line) is not None and all(COMMAND_ARGUMENT.search(c) for c in commands)


def _prompted_command(lines: Sequence[tuple[str, str]], at: int) -> bool:
    """Is the line at `at`, which a '#' opens, a root shell's command and not a comment? It is a command under a
    lead-in, with only such commands between them ("... as root:" above "# mkdir /run/relay" and "# chown relay
    /run/relay"), no setting ("# retries = 3" is one commented out) and no code of its own under it (a comment
    annotates the line it stands above)."""
    below = lines[at + 1][0] if at + 1 < len(lines) else ""
    if below and not ROOT_PROMPT.match(below) and (code_line(below) or _command_like(below)):
        return False  # (a command continued with '\\' is no line alone: `_alone_as_code`)
    commands: list[str] = []
    while at > 0:
        text = ROOT_PROMPT.sub("", lines[at][0])
        if not (ROOT_PROMPT.match(lines[at][0]) and _command_like(text) and not code_line(text)):
            return False
        commands.append(text)
        if _lead_in(lines[at - 1][0], commands):
            return True
        at -= 1
    return False


def _under_lead_in(lines: Sequence[tuple[str, str]], at: int) -> bool:
    """Is the line at `at` a command (no '#' before it) under a lead-in, directly or under commands that are?
    A line under a '#' line is not: the output of a root shell's command, or the line a comment annotates."""
    commands: list[str] = []
    while at > 0 and not ROOT_PROMPT.match(lines[at][0]) and _command_like(lines[at][0]):
        commands.append(lines[at][0])
        above = lines[at - 1][0]
        if above.endswith("\\"):
            return False  # the rest of a continued command
        if _lead_in(above, commands):
            return True
        at -= 1
    return False


@lru_cache(maxsize=256)
def command_line(
    sentence: str, passage: str, command: str = "", marked: frozenset[str] = frozenset()
) -> str | None:
    """The sentence as its line of code on its own in the passage (see the module's docstring): the line's own
    spacing, which the sentence splitter collapses ('awk -F"  "'), without a root prompt; None when the sentence
    is no such line. `marked`: the passage's lines that its format marks as code (see `laid_out`)."""
    lines = _lines(passage)
    for at, prompted in _where(sentence, lines):
        line, written = lines[at]
        if at > 0 and lines[at - 1][0].endswith("\\"):
            continue  # (the rest of a continued command is no line alone either)
        if (
            written in marked
            and not prompted
            and any(ch.isalnum() for ch in written)
            and not _unfinished(line)
        ):
            # (a comment mark alone, "#", is no line to show as a block of its own, nor is an unfinished one)
            return written
        if not _alone_as_code(line):
            continue
        if prompted:
            code = _prompted_command(lines, at)
        else:
            code = (
                code_line(line, command)
                or _under_lead_in(lines, at)
                or (_command_like(line) and SHELL_MARK.search(line) is not None)
            )
        if code:
            return ROOT_PROMPT.sub("", written)
    return None


def next_line(first: str, second: str, passage: str) -> bool:
    """Is `second` the line right after `first` in the passage (blank lines aside; a root prompt dropped)?"""
    lines = _lines(passage)
    after = {at + 1 for at, _ in _where(first, lines)}
    return any(at in after for at, _ in _where(second, lines))


def _own_lines(sentence: str, passage: str) -> list[str] | None:
    """The text of each passage line the sentence spans, when it starts its first line and spans two or more
    (a term above its description, a record's label lines); None otherwise."""
    found = _fragments(sentence, passage)
    if found is None or len(found.lines) < 2 or not found.starts_line:
        return None
    return [text for _, text in found.lines]


def term_set_off(sentence: str, passage: str) -> str | None:
    """ "-q, --quiet Print nothing ..." -> "-q, --quiet: Print nothing ..." when the sentence's first line is a
    term line of its own in the passage (at most TERM_WORDS words, no punctuation at its end) and its next
    line starts a sentence with a capitalised word; None otherwise."""
    texts = _own_lines(sentence, passage)
    if texts is None:
        return None
    term, following = texts[0], texts[1]
    if len(term.split()) > TERM_WORDS or term.endswith(SENTENCE_END) or not STARTS_SENTENCE.match(following):
        return None
    if not sentence.startswith(term):
        return None
    return f"{term}:{sentence[len(term) :]}"


def record_set_off(sentence: str, passage: str) -> str | None:
    """A record's "Label: value" lines, which the sentence splitter reads as one sentence ("Phone: +1-555-0147
    E-mail: desk@example Portal account: QG-ADMIN"), one line each as the passage has them; its first line may
    be a short line without a label above them (the name the details are for) or a lead-in ending with ':'
    ("The package builds these binaries:"). None unless the sentence starts its first line, spans two lines or
    more, and has two label lines or more (`knowledge.text.LABEL_LINE`). Only whitespace changes."""
    texts = _own_lines(sentence, passage)
    if texts is None:
        return None
    labelled = [LABEL_LINE.match(text) is not None for text in texts]
    if sum(1 for text, label in zip(texts, labelled, strict=True) if label and text[:1].islower()) == 1:
        return None  # (a name in lower case is a label only in a list of names: "... "relayd: bind" / "failed: ...")
    first_alone = (
        labelled[0]
        or (len(texts[0].split()) <= TERM_WORDS and not texts[0].endswith(SENTENCE_END))
        or texts[0].endswith(":")  # a lead-in: "... produce the following packages:" above "name: what it is"
    )
    if sum(labelled) < 2 or not all(labelled[1:]) or not first_alone:
        return None
    lines = [_prose([text]) for text in texts]
    return "\n".join(lines) if " ".join(lines) == " ".join(sentence.split()) else None


def manual_command(title: str) -> str:
    """A manual page's own command from its title ("probe - check a path ..." -> "probe", "frob-route - route
    tool" -> "frob": the subcommand's page of a command), "" for other documents."""
    name, dash, _rest = title.partition(" - ")
    name = name.strip()
    if not dash or not re.fullmatch(r"[a-z][\w.+-]*", name):
        return ""
    return name.split("-")[0] if "." not in name else ""
