"""The text-analysis core: one module per concern, no Django, the same code at ingestion and at answering.

* :mod:`~knowledge.text.folding` — typographic and Unicode variants of a character made one before analysis
  (ligatures, soft hyphens, NFC, fullwidth forms, typographic option dashes, accents, case folding);
* :mod:`~knowledge.text.tokenizer` — raw tokens, punctuation stripping, compound pieces;
* :mod:`~knowledge.text.stopwords` — the stopword and interrogative lists;
* :mod:`~knowledge.text.spelling` — British spellings mapped to American ones;
* :mod:`~knowledge.text.stemmer` — Porter stemming (PyStemmer);
* :mod:`~knowledge.text.identifier_lane` — identifiers indexed verbatim (``=max_wal_size``);
* :mod:`~knowledge.text.analyzer` — the composed analyser (:func:`analyze`, :func:`query_terms`,
  :func:`identifiers`) and :data:`ANALYZER_VERSION`;
* :mod:`~knowledge.text.sentence_splitter` — :func:`locate_sentences` (each sentence and its span; chunking
  cuts and overlaps chunks at them) and :func:`sentences` (the same sentences, as answering reads them);
* :mod:`~knowledge.text.passages` — a chunk's answer sentences and their spans in its text;
* :mod:`~knowledge.text.distance` — :func:`edit_distance`.

Chunking, indexing (knowledge), search (retrieval) and answering (agents) import from here.
"""

from knowledge.text.analyzer import (
    ANALYZER_VERSION,
    analyze,
    identifiers,
    query_terms,
    surface_word_of,
    surface_words,
)
from knowledge.text.distance import edit_distance
from knowledge.text.folding import match_form
from knowledge.text.identifier_lane import ATTACHED_VALUE, IDENTIFIER_PREFIX
from knowledge.text.line_shapes import CAPTION, LABEL_LINE, PROSE, TERM_ITEM, TWO_WORDS
from knowledge.text.passages import passage_sentences, sentence_spans
from knowledge.text.sentence_splitter import (
    SentenceSpan,
    column_names,
    is_caps_heading,
    is_numbered_heading,
    is_table_rule,
    lines_holding,
    locate_sentences,
    opens_list_item,
    sentences,
    table_cells,
)
from knowledge.text.spelling import american
from knowledge.text.stemmer import stem
from knowledge.text.stopwords import STOPWORDS

__all__ = [
    "ANALYZER_VERSION",
    "ATTACHED_VALUE",
    "CAPTION",
    "IDENTIFIER_PREFIX",
    "LABEL_LINE",
    "PROSE",
    "STOPWORDS",
    "TERM_ITEM",
    "TWO_WORDS",
    "SentenceSpan",
    "american",
    "analyze",
    "column_names",
    "edit_distance",
    "identifiers",
    "is_caps_heading",
    "is_numbered_heading",
    "is_table_rule",
    "lines_holding",
    "locate_sentences",
    "match_form",
    "opens_list_item",
    "passage_sentences",
    "query_terms",
    "sentence_spans",
    "sentences",
    "stem",
    "surface_word_of",
    "surface_words",
    "table_cells",
]
