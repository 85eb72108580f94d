"""Shapes of a line of text that both the parsers (knowledge.parsing) and answering (agents.layout) read: prose,
a lead-in, a record's label, a caption. One definition each, so that a line the parser keeps apart reads the same way when
an answer shows it."""

from __future__ import annotations

import re

__all__ = ["CAPTION", "CAPTION_LABEL", "LABEL_LINE", "PROSE", "TERM_ITEM", "TWO_WORDS"]

# four plain words in a row: prose, not code ("set the bounding set to be empty" vs "CapabilityBoundingSet=~")
PROSE = re.compile(r"\b[A-Za-z][a-z]*(?:[ ,]+[A-Za-z][a-z]*\b){3}")
# two words of letters in a row: a lead-in that reads as prose ("... run as root:", "client configurations:";
# not "mail.info :relay:")
TWO_WORDS = re.compile(r"[A-Za-z]{2,}[ ,]+[A-Za-z]{2,}")
# a record's "Label: value" line ("Portal account: NW-NOC-ADMIN"), or a name in lower case before its
# description ("relay-common: Data read by each of the relay daemons"; not a setting, "image: nginx")
LABEL_LINE = re.compile(r"^(?:[A-Z][\w/-]*(?: [\w/-]+){0,2}:\s+\S|[a-z][\w.+-]*:\s+[A-Z][\w ])")
# a manual's "term - description" item ("discard - the packet is dropped", "none - Nothing is kept": a hyphen,
# an en dash or an em dash), the term perhaps with placeholders ("probe_count COUNT - set the count of ..."); not
# "relayctl -q - < list", an option and standard input
TERM_ITEM = re.compile(
    r"[a-z][\w-]*(?: (?:[A-Z][A-Z0-9_]*|\[[^\]]*\]|<[^>]*>|\{[^}]*\}))* [-\u2013\u2014] \S"
)
# a table's or figure's caption ("Table 37. spool filter values", "Figure 2. The relay at work"): its label,
# whose period ends no sentence (knowledge.text.sentence_splitter), and the caption as a sentence opens (in the
# splitter's single spaces), which names what comes below it and is no answer sentence (agents.evidence)
CAPTION_LABEL = r"(?:Table|Figure) \d+(?:\.\d+)*"
CAPTION = re.compile(rf"{CAPTION_LABEL}\. ")
