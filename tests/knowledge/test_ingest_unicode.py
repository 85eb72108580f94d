"""Documents and questions that are not plain ASCII English, ingested into the real PostgreSQL and searched
with BM25 as a question would be: typesetting characters, Unicode normalisation forms, case folding beyond
ASCII and other scripts."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from athena.principals import Principal
from knowledge.models import Chunk, Document
from knowledge.services import IngestOptions, files_ingest, folder_scan
from knowledge.text import query_terms
from retrieval.stages import bm25_search
from retrieval.types import Filters

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VENDOR_PDF_TEXT = (
    "# Flow exporter con\ufb01guration\n\n"
    "The con\u00ad\ufb01guration of the \ufb02ow exporter is kept in the o\ufb03ce copy of "
    "/etc/\ufb02owd.conf. Build the exporter with ./configure \u2013enable-flowtap \u2026 and restart it.\n"
)
DOCS = {
    "vendor-flow.md": VENDOR_PDF_TEXT,
    # the option's words without the option: the option itself must rank the vendor's page first
    "flowtap-notes.md": "# Collector notes\n\nEnable flowtap on the collector after the weekly maintenance window "
    "of the site.\n",
    "cafe.md": unicodedata.normalize(
        "NFD",
        "# Caf\u00e9 r\u00e9sum\u00e9\n\nThe caf\u00e9 network r\u00e9sum\u00e9 lists "
        "the bistro access points.\n",
    ),
    "stra\u00dfen.md": "# Stra\u00dfenverzeichnis\n\nDie Stra\u00dfe der Zentrale hat zwei Zug\u00e4nge.\n",
    "\u043d\u0430\u0441\u0442\u0440\u043e\u0439\u043a\u0430.txt": "\u041d\u0430\u0441\u0442\u0440\u043e\u0439\u043a\u0430 "
    "\u043c\u0430\u0440\u0448\u0440\u0443\u0442\u0438\u0437\u0430\u0442\u043e\u0440\u0430 \u0432 "
    "\u0444\u0438\u043b\u0438\u0430\u043b\u0435.\n",
    "\u30eb\u30fc\u30bf\u30fc\u8a2d\u5b9a.md": "# \u30eb\u30fc\u30bf\u30fc\u8a2d\u5b9a\n\n\u30eb\u30fc\u30bf\u30fc\u306e"
    "\u8a2d\u5b9a\u306f\u7ba1\u7406\u753b\u9762\u304b\u3089\u5909\u66f4\u3057\u307e\u3059\u3002\n",
    "hindi.md": "# \u0928\u0947\u091f\u0935\u0930\u094d\u0915 \u0938\u0947\u091f\u093f\u0902\u0917\n\n"
    "\u0930\u093e\u0909\u091f\u0930 \u0915\u0940 \u0938\u0947\u091f\u093f\u0902\u0917 \u092f\u0939\u093e\u0901 "
    "\u0939\u0948\u0964\n",
}


def ingest(root: Path) -> None:
    files = [(rel, str(path)) for rel, path in folder_scan(root)]
    files_ingest(root=str(root), files=files, options=IngestOptions())


def top_document(question: str) -> str | None:
    run = bm25_search(
        [(t, 1.0) for t in query_terms(question)], Principal(None, "x"), Filters(), max_df_ratio=1.0
    )
    if not run:
        return None
    return Chunk.objects.select_related("document").get(id=run[0].id).document.source


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.django_db(transaction=True)
def test_typeset_pdf_text_is_stored_and_found_as_plain_words(corpus):
    ingest(corpus)
    document = Document.objects.get(source="vendor-flow.md")
    assert document.title == "Flow exporter configuration"
    text = " ".join(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert "configuration of the flow exporter is kept in the office copy of /etc/flowd.conf" in text
    assert "\u2013enable-flowtap" in text  # dashes are shown as written
    assert top_document("Where is the flow exporter configuration kept?") == "vendor-flow.md"
    assert top_document("What does --enable-flowtap do?") == "vendor-flow.md"
    assert top_document("flowd.conf") == "vendor-flow.md"


@pytest.mark.django_db(transaction=True)
def test_accents_normalisation_forms_and_case_folding_match(corpus):
    ingest(corpus)
    for question in ("caf\u00e9 r\u00e9sum\u00e9", "cafe resume", "CAF\u00c9 R\u00c9SUM\u00c9"):
        assert top_document(question) == "cafe.md", question
    assert top_document(unicodedata.normalize("NFD", "Caf\u00e9")) == "cafe.md"
    for question in ("STRASSE", "Stra\u00dfe", "strasse"):
        assert top_document(question) == "stra\u00dfen.md", question


@pytest.mark.django_db(transaction=True)
def test_other_scripts_are_found_by_their_words_and_titles(corpus):
    ingest(corpus)
    assert top_document(
        "\u043c\u0430\u0440\u0448\u0440\u0443\u0442\u0438\u0437\u0430\u0442\u043e\u0440\u0430"
    ) == ("\u043d\u0430\u0441\u0442\u0440\u043e\u0439\u043a\u0430.txt")
    # the Russian page says "маршрутизатора"; a question's plural "маршрутизаторы" is the same stem
    assert top_document(
        "\u043c\u0430\u0440\u0448\u0440\u0443\u0442\u0438\u0437\u0430\u0442\u043e\u0440\u044b"
    ) == ("\u043d\u0430\u0441\u0442\u0440\u043e\u0439\u043a\u0430.txt")
    assert Document.objects.get(source="hindi.md").title == (
        "\u0928\u0947\u091f\u0935\u0930\u094d\u0915 \u0938\u0947\u091f\u093f\u0902\u0917"
    )
    # a Devanagari word with vowel signs is one term, so it finds the document that has it, not every
    # document sharing one of its letters
    assert top_document("\u0938\u0947\u091f\u093f\u0902\u0917") == "hindi.md"
    assert query_terms("\u0938\u0947\u091f\u093f\u0902\u0917") == ["\u0938\u0947\u091f\u093f\u0902\u0917"]


@pytest.mark.django_db(transaction=True)
def test_a_japanese_document_is_found_by_a_word_of_a_question(corpus):
    ingest(corpus)
    # "Where do I change the router settings?": no spaces, the words run into the particles around them
    question = (
        "\u30eb\u30fc\u30bf\u30fc\u306e\u8a2d\u5b9a\u306f\u3069\u3053\u3067\u5909\u3048\u307e\u3059\u304b"
    )
    assert top_document(question) == "\u30eb\u30fc\u30bf\u30fc\u8a2d\u5b9a.md"
    assert top_document("\u8a2d\u5b9a") == "\u30eb\u30fc\u30bf\u30fc\u8a2d\u5b9a.md"
