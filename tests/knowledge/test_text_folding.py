"""Unit tests for knowledge.text.folding through the analyser: one word, however it was typeset or typed, gives
the same terms at ingestion and at query time; ASCII text is analysed as before."""

from __future__ import annotations

import unicodedata

import pytest

from knowledge.text import analyze, identifiers, match_form, query_terms, surface_words
from knowledge.text.folding import fold_accents, fold_text, typesetting_unfold

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("typeset", "plain"),
    [
        (
            "the con\ufb01guration \ufb02ag of the o\ufb03ce",
            "the configuration flag of the office",
        ),  # PDF ligatures
        ("e\ufb00ective \ufb00 \ufb04 \ufb06", "effective ff ffl st"),
        ("config\u00aduration", "configuration"),  # soft hyphen
        ("config\u200buration", "configuration"),  # zero-width space
        ("config\u200curation con\u200dfig", "configuration config"),  # zero-width non-joiner, joiner
        ("config\u2060uration \ufeffserver", "configuration server"),  # word joiner, a BOM in the text
        ("\uff43\uff4f\uff4e\uff46\uff49\uff47 \uff2d\uff21\uff38\uff3f\uff37\uff21\uff2c", "config MAX_WAL"),
        ("\u2013\u2013verbose \u2014verbose \u2013enable-foo", "--verbose --verbose --enable-foo"),
        ("\u2212v \u2010n \u2013v \uff0d\uff0dforce", "-v -n -v --force"),
    ],
)
def test_typesetting_variants_analyse_as_the_plain_text(typeset, plain):
    assert analyze(typeset) == analyze(plain)


def test_option_written_with_a_typographic_dash_is_the_option():
    # as Sphinx renders "./configure --enable-omfoo" in a vendor's HTML manual
    assert "=--enable-omfoo" in analyze("./configure \u2013enable-omfoo \u2026")
    assert identifiers("git checkout \u2013track -b beta") == ["--track", "-b"]


def test_dashes_between_words_and_numbers_are_not_options():
    assert analyze("pages 10\u201320 well\u2014known a \u2013 b") == analyze("pages 10 20 well known a b")
    assert not [t for t in analyze("well\u2014known, 10\u201320") if t.startswith("=-")]


@pytest.mark.parametrize(
    "word",
    [
        "caf\u00e9",
        "r\u00e9sum\u00e9",
        "na\u00efve",
        "J\u00f6rg",
        "Bj\u00f8rn",
        "\u0141\u00f3d\u017a",
        "Fran\u00e7ais",
    ],
)
def test_composed_and_decomposed_accents_and_no_accents_are_one_word(word):
    nfc = unicodedata.normalize("NFC", word)
    nfd = unicodedata.normalize("NFD", word)
    assert analyze(nfc) == analyze(nfd)
    assert len(analyze(nfd)) == 1  # a combining accent does not cut the word in two
    bare = {"Bj\u00f8rn": "Bjorn", "\u0141\u00f3d\u017a": "Lodz"}.get(word) or "".join(
        c for c in nfd if not unicodedata.combining(c)
    )
    assert analyze(bare) == analyze(word)


def test_case_folding_beyond_ascii():
    assert analyze("Stra\u00dfe") == analyze("STRASSE") == analyze("strasse")
    assert analyze("\u0130stanbul") == analyze("ISTANBUL") == analyze("istanbul")
    assert (
        analyze("\u039f\u0394\u039f\u03a3")
        == analyze("\u03bf\u03b4\u03bf\u03c2")
        == analyze("\u03bf\u03b4\u03cc\u03c2")
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e", 2),  # Devanagari
        ("\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35", 1),  # Thai
        (
            "\u041d\u0430\u0441\u0442\u0440\u043e\u0439\u043a\u0430 \u0441\u0435\u0440\u0432\u0435\u0440\u0430",
            2,
        ),
    ],
)
def test_words_of_scripts_written_with_combining_marks_stay_whole(text, words):
    assert len(analyze(text)) == words
    assert all(len(term) > 1 for term in analyze(text))


def test_hebrew_and_arabic_vowel_points_are_optional():
    assert analyze("\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd") == analyze("\u05e9\u05dc\u05d5\u05dd")
    assert analyze("\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627") == analyze(
        "\u0645\u0631\u062d\u0628\u0627"
    )


def test_cyrillic_letters_keep_their_marks():
    # "й" is a letter of its own, not an accented "и" (as "ё" is not "е")
    assert fold_accents("\u0439\u0451") == "\u0439\u0451"
    assert fold_accents("\u00e9\u03ac") == "e\u03b1"


def test_ascii_text_is_not_changed_by_folding():
    text = "Set max_wal_size --enable-foo -v (RFC 4271) for 10-20 routers' configuration."
    assert fold_text(text) is text
    assert typesetting_unfold(text) is text
    assert match_form(text) == text.lower()


def test_identifiers_are_found_in_the_match_form_of_their_text():
    text = "Run ./configure \u2013enable-Fo\u00f6 on Stra\u00dfe-7 with con\ufb01g_\ufb01le"
    folded = match_form(text)
    for identifier in identifiers(text):
        assert identifier in folded, identifier


def test_a_question_typed_with_variants_has_the_documents_terms():
    assert query_terms("What does \u2013\u2013enable-foo do to the con\ufb01guration?") == query_terms(
        "What does --enable-foo do to the configuration?"
    )
    assert surface_words("con\ufb01guration", analyze("configuration")) == ["configuration"]


def test_typesetting_unfold_keeps_what_a_reader_needs():
    # joiners (emoji sequences, Persian words), accents and dashes are text as written
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert typesetting_unfold(family) == family
    assert typesetting_unfold("caf\u00e9 \u2013 r\u00e9sum\u00e9") == "caf\u00e9 \u2013 r\u00e9sum\u00e9"
    assert typesetting_unfold("o\ufb03ce con\u00adfig\u200bure") == "office configure"


def test_a_zero_width_space_joins_a_spaced_word_and_separates_unspaced_ones():
    thai = "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u200b\u0e04\u0e23\u0e31\u0e1a"  # two Thai words
    assert len(analyze(thai)) == 2
    assert typesetting_unfold(thai) == thai  # the separator stays in the stored text
    assert analyze("max\u200b_wal\u200b_size con\u200bfig") == analyze("max_wal_size config")
    assert typesetting_unfold("con\u200bfig\u200b \u200bfile") == "config\u200b \u200bfile"


def test_chinese_japanese_and_korean_runs_are_indexed_as_character_pairs():
    # "router settings" in a Japanese title, and a question about "settings" (設定) in a sentence
    assert analyze("\u30eb\u30fc\u30bf\u30fc\u8a2d\u5b9a") == [
        "\u30eb\u30fc",
        "\u30fc\u30bf",
        "\u30bf\u30fc",
        "\u30fc\u8a2d",
        "\u8a2d\u5b9a",
    ]
    question = query_terms("\u8a2d\u5b9a\u306f\u3069\u3053\u3067\u5909\u66f4\u3057\u307e\u3059\u304b")
    assert "\u8a2d\u5b9a" in question
    assert analyze("\u914d") == ["\u914d"]
    # Latin letters and identifiers inside the run keep their own terms
    assert analyze("BGP\u8a2d\u5b9a sgw-01\u3067\u3059") == [
        "bgp",
        "\u8a2d\u5b9a",
        "sgw",
        "=sgw-01",
        "\u3067\u3059",
    ]
    # halfwidth katakana, voicing marks included, is the ordinary katakana
    assert analyze("\uff76\uff9e\uff72\uff84\uff9e") == analyze("\u30ac\u30a4\u30c9")


def test_cyrillic_greek_and_arabic_words_are_stemmed_by_their_languages_stemmer():
    # "router" (genitive, plural) and "router" in Russian; "road"/"roads" in Greek; "the server" and "server"
    assert analyze(
        "\u043c\u0430\u0440\u0448\u0440\u0443\u0442\u0438\u0437\u0430\u0442\u043e\u0440\u0430"
    ) == analyze("\u041c\u0430\u0440\u0448\u0440\u0443\u0442\u0438\u0437\u0430\u0442\u043e\u0440\u044b")
    assert analyze("\u03b4\u03c1\u03cc\u03bc\u03bf\u03b9") == analyze("\u0394\u03a1\u039f\u039c\u039f\u03a3")
    assert analyze("\u0627\u0644\u062e\u0627\u062f\u0645") == analyze("\u062e\u0627\u062f\u0645")
    # English words are stemmed as before, a word mixing scripts is left as written
    assert analyze("routers") == ["router"]
    assert analyze("\u0441\u0435\u0440\u0432\u0435\u0440abc") == ["\u0441\u0435\u0440\u0432\u0435\u0440abc"]


@pytest.mark.parametrize(
    "text",
    [
        "\u0301 --max-retries",  # a combining accent that lost its letter (PDF extraction), opening a passage
        "\ud7a3\u0301 --max-retries",  # one after a Hangul syllable: cut off from it with the character pair
        "\u3099",  # a voicing mark on nothing
    ],
)
def test_a_combining_mark_on_no_letter_is_dropped_not_a_crash(text):
    # fold_accents looked for the letter before the mark and found none (TypeError): the text failed to index
    # and a question or passage holding it failed to answer
    assert match_form(text) == match_form(text.lstrip("\u0301\u3099"))  # on no letter: dropped
    assert not [term for term in analyze(text) if "\u0301" in term or "\u3099" in term]
    assert identifiers(text) == (["--max-retries"] if "--" in text else [])


@pytest.mark.parametrize("text", ["\u0640", "\u0640\u0640 \u064e", "\u05b8"])
def test_a_token_folded_to_nothing_gives_no_term(text):
    # a lone tatweel or vowel point folds to nothing: it gave the empty identifier "" (term "="), which every
    # text contains
    assert analyze(text) == [] and identifiers(text) == []
