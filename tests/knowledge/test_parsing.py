"""knowledge.parsing: formats, structure, metadata and typed errors (pure; no database)."""

from __future__ import annotations

import codecs
import os
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from knowledge.parsing import Block, ParseError, parse_file

FIXTURES = Path(__file__).parent / "fixtures"
DEVCORPUS = Path(os.environ.get("ATHENA_DEVCORPUS", "/work/devcorpus"))

pytestmark = pytest.mark.unit


def kinds(blocks: list[Block]) -> list[str]:
    return [b.kind for b in blocks]


def by_text(blocks: list[Block], needle: str) -> Block:
    return next(b for b in blocks if needle in b.text)


# ---------------------------------------------------------------------------------------------- markdown


def test_markdown_front_matter_becomes_metadata_and_leaves_the_text():
    doc = parse_file(FIXTURES / "sop-dns-failover.md")
    assert doc.title == "DNS Failover SOP"
    assert doc.author == "Network Operations"
    assert doc.updated_at == datetime(2024, 3, 1, tzinfo=UTC)
    for key, value in {
        "doc_type": "sop",
        "department": "netops",
        "vendor": "ISC",
        "review_by": "2025-01-31",
        "access_tier": "internal",
        "tags": ["dns", "failover"],
    }.items():
        assert doc.metadata[key] == value
    assert doc.metadata["format"] == "markdown"
    assert not any("doc_type" in b.text or "---" in b.text for b in doc.blocks)


def test_markdown_structure_links_steps_table_code():
    doc = parse_file(FIXTURES / "sop-dns-failover.md")
    assert doc.links == ["keepalived-guide.md", "https://www.isc.org/bind/"]
    steps = [b for b in doc.blocks if b.kind == "list_item" and b.section_path[-1] == "Procedure"]
    assert [s.text[:3] for s in steps] == ["1. ", "2. ", "3. "]
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text.splitlines()[0] == "Check | Expected"
    assert table.level == 1  # one header row
    assert table.section_path == ("DNS failover", "Procedure", "Verification")
    code = next(b for b in doc.blocks if b.kind == "code")
    assert code.text.startswith("$ dig +short")
    # a level-2 heading after a level-3 one pops the trail back
    rollback = by_text(doc.blocks, "Start keepalived")
    assert rollback.section_path == ("DNS failover", "Rollback")


def test_markdown_without_front_matter_takes_title_from_first_h1(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("Intro line.\n\n# Real Title\n\nBody text.\n\n## Part\n\nMore.\n", encoding="utf-8")
    doc = parse_file(path)
    assert doc.title == "Real Title"
    assert doc.metadata == {"format": "markdown"}
    assert by_text(doc.blocks, "More.").section_path == ("Real Title", "Part")


def test_markdown_malformed_front_matter_falls_back_to_key_value_lines(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("---\ntitle: Broken: yes\ndepartment: ops\n  - : [\n---\n\nText.\n", encoding="utf-8")
    doc = parse_file(path)
    assert doc.metadata["department"] == "ops"
    assert doc.title == "Broken: yes"


# -------------------------------------------------------------------------------------------------- html


def test_html_metadata_and_chrome_removed():
    doc = parse_file(FIXTURES / "resolver.html")
    assert doc.title == "Resolver Manual"
    assert doc.author == "Jane Admin"
    assert doc.updated_at == datetime(2023, 11, 5, 10, 0, tzinfo=UTC)
    assert doc.metadata["description"] == "How the resolver pair works"
    text = "\n".join(b.text for b in doc.blocks)
    for chrome in ("tracking", "Home", "genindex", "Quick search", "Copyright", "¶", "color: red"):
        assert chrome not in text
    # the table of contents duplicates headings and is dropped; same-page and self links are dropped
    assert sum(1 for b in doc.blocks if b.text == "Installation") == 1
    assert doc.links == ["config.html", "https://example.org/doc"]


def test_html_headings_lists_tables_definitions_code():
    doc = parse_file(FIXTURES / "resolver.html")
    titles = [(b.text, b.level) for b in doc.blocks if b.kind == "title"]
    assert titles == [
        ("Resolver Manual", 1),
        ("Installation", 2),
        ("Packages", 3),
        ("Steps", 3),
        ("Options", 2),
    ]
    assert by_text(doc.blocks, "listens on port 53").text == (
        "The resolver pair answers all internal queries.\nIt listens on port 53."
    )
    nested = by_text(doc.blocks, "provides dig")
    assert (nested.kind, nested.level) == ("list_item", 2)
    assert by_text(doc.blocks, "Enable the service").text == "2. Enable the service."
    options = by_text(doc.blocks, "recursion | yes")
    assert options.kind == "table" and options.level == 1
    assert options.section_path == ("Resolver Manual", "Options")
    assert options.text == "option | default\nrecursion | yes\nlisten-on | any"
    assert by_text(doc.blocks, "max-cache-size").text == "max-cache-size\nUpper bound of the cache in bytes."
    assert by_text(doc.blocks, "Restart after").text == "Note\nRestart after changes."
    code = by_text(doc.blocks, "recursion yes;")
    assert code.kind == "code" and code.text == "options {\n    recursion yes;\n};"


def test_html_layout_tables_become_flow_text(tmp_path):
    # reStructuredText option lists (openvpn.8.html) and DocBook admonitions are tables used for layout
    path = tmp_path / "opts.html"
    path.write_text(
        "<html><head><title>t</title></head><body><h1>Options</h1>"
        '<table class="docutils option-list"><tbody>'
        "<tr><td><kbd>--ping n</kbd></td><td><p>Ping every n seconds.</p><p>Second paragraph.</p></td></tr>"
        '<tr><td colspan="2"><kbd>--verb n</kbd></td></tr><tr><td>&nbsp;</td><td><p>Verbosity.</p></td></tr>'
        "</tbody></table>"
        '<div class="tip"><table><tr><td rowspan="2"><img alt="[Tip]" src="tip.png"></td><th>Tip</th></tr>'
        "<tr><td>Use ping.</td></tr></table></div></body></html>",
        encoding="utf-8",
    )
    doc = parse_file(path)
    assert [b.text for b in doc.blocks[1:]] == [
        "--ping n\nPing every n seconds.",
        "Second paragraph.",
        "--verb n\nVerbosity.",
        "Tip\nUse ping.",
    ]
    assert "table" not in kinds(doc.blocks)


def test_html_toc_only_page_keeps_its_toc(tmp_path):
    path = tmp_path / "index.html"
    path.write_text(
        '<html><body><div class="toc"><ul><li><a href="ch01.html">Chapter 1</a></li></ul></div></body></html>'
    )
    doc = parse_file(path)
    assert [b.text for b in doc.blocks] == ["Chapter 1"]
    assert doc.links == ["ch01.html"]
    assert doc.title == "index"  # no <title>, no heading: the file name


# -------------------------------------------------------------------------------------------------- text


def test_man_page_sections_subsections_and_definitions():
    doc = parse_file(FIXTURES / "ip-demo.8.txt")
    assert doc.title == "ip-demo - demonstration routing table management"
    assert doc.metadata["man_section"] == "8"
    top = [b.text for b in doc.blocks if b.kind == "title" and b.level == 1]
    assert top == ["NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"]
    sub = [b.text for b in doc.blocks if b.kind == "title" and b.level == 2]
    assert sub == ["ip demo add - add a new entry", "ip demo flush - flush entries"]
    table = by_text(doc.blocks, "TABLEID may be")
    assert table.text.startswith("table TABLEID\nthe table to add this route to.")
    assert table.section_path == ("DESCRIPTION", "ip demo add - add a new entry")
    assert by_text(doc.blocks, "dsfield").text == "tos TOS\ndsfield TOS\nthe Type Of Service (TOS) key."
    flush = by_text(doc.blocks, "flushes entries")
    assert flush.section_path == ("DESCRIPTION", "ip demo flush - flush entries")
    # the running header and footer are not content
    assert not any("IP-DEMO(8)" in b.text or "13 Dec 2012" in b.text for b in doc.blocks)


def test_text_header_fields_setext_headings_steps_and_code():
    doc = parse_file(FIXTURES / "runbook-notes.txt")
    assert (doc.title, doc.author) == ("Time Sync Runbook", "Platform Team")
    assert doc.updated_at == datetime(2024, 5, 20, tzinfo=UTC)
    assert not any(b.text.startswith(("Title:", "Author:")) for b in doc.blocks)
    assert [(b.text, b.level) for b in doc.blocks if b.kind == "title"] == [
        ("Overview", 1),
        ("Steps", 2),
        ("Notes", 2),
    ]
    steps = [b.text for b in doc.blocks if b.kind == "list_item" and b.section_path[-1] == "Steps"]
    assert steps[0] == "1. Log in to the host." and len(steps) == 3
    assert by_text(doc.blocks, "ntp1.example.net").kind == "code"
    assert by_text(doc.blocks, "config lives").text == "The config lives in /etc/chrony/chrony.conf."


def test_extensionless_text_and_caps_headings(tmp_path):
    path = tmp_path / "README"
    path.write_text(
        "Some intro text here.\n\nUSAGE\n\nRun the tool with\nno arguments at all.\n", encoding="utf-8"
    )
    doc = parse_file(path)
    assert doc.title == "README"
    assert by_text(doc.blocks, "Run the tool").section_path == ("USAGE",)
    assert by_text(doc.blocks, "Run the tool").text == "Run the tool with no arguments at all."


def test_config_sample_keeps_stanzas_whole(tmp_path):
    path = tmp_path / "keepalived.conf.sample.txt"
    path.write_text(
        "! Configuration\n\nvrrp_instance VI_1 {\n    state MASTER\n\n    priority 100\n}\n", encoding="utf-8"
    )
    doc = parse_file(path)
    assert kinds(doc.blocks) == ["code", "code"]
    assert doc.blocks[1].text == "vrrp_instance VI_1 {\n    state MASTER\n\n    priority 100\n}"


def test_config_comment_block_stays_with_the_setting_below_it(tmp_path):
    path = tmp_path / "chrony.conf.example.txt"
    path.write_text(
        "#" * 40 + "\n### INITIAL CLOCK CORRECTION\n# This option is useful to quickly correct the clock\n"
        "# on start if it's off by a large amount.\n\n! makestep 1.0 3\n\n# A second comment.\n"
        "# Still the second one.\n\n! rtcsync\n\nserver ntp.example.org iburst\n",
        encoding="utf-8",
    )
    doc = parse_file(path)
    assert [b.text for b in doc.blocks] == [
        "### INITIAL CLOCK CORRECTION\n# This option is useful to quickly correct the clock\n"
        "# on start if it's off by a large amount.\n! makestep 1.0 3",  # the rule line is decoration
        "# A second comment.\n# Still the second one.\n! rtcsync",
        "server ntp.example.org iburst",
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("caf\xe9 \x96 na\xefve r\xe9sum\xe9\n".encode("latin-1"), "café – naïve résumé"),  # cp1252 dash
        (codecs.BOM_UTF16_LE + "UTF-16 text here\n".encode("utf-16-le"), "UTF-16 text here"),
        (codecs.BOM_UTF8 + b"BOM text\n", "BOM text"),
    ],
)
def test_text_encodings_fall_back_instead_of_failing(tmp_path, raw, expected):
    path = tmp_path / "enc.txt"
    path.write_bytes(raw)
    assert parse_file(path).blocks[0].text == expected


def test_updated_at_falls_back_to_file_mtime(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text("Just text.\n")
    stamp = datetime(2022, 6, 1, 12, 0, tzinfo=UTC).timestamp()
    os.utime(path, (stamp, stamp))
    assert parse_file(path).updated_at == datetime(2022, 6, 1, 12, 0, tzinfo=UTC)


# ------------------------------------------------------------------------------------------- pdf and docx


def test_pdf_pages_headings_lists_and_info():
    doc = parse_file(FIXTURES / "runbook.pdf")
    assert doc.title == "DNS Failover Runbook"
    assert doc.author == "Network Operations"
    assert doc.updated_at == datetime(2024, 3, 15, 9, 30, tzinfo=timezone(timedelta(hours=1)))
    assert doc.metadata["pages"] == 2
    titles = [(b.text, b.level, b.page) for b in doc.blocks if b.kind == "title"]
    assert titles == [
        ("DNS Failover Runbook", 1, 1),
        ("Preparation", 2, 1),
        ("Failover procedure", 2, 2),
    ]
    items = [b.text for b in doc.blocks if b.kind == "list_item"]
    assert items == [
        "Confirm that keepalived runs on both nodes.",
        "Confirm that VRRP advertisements arrive.",
    ]
    stop = by_text(doc.blocks, "Stop keepalived")
    assert stop.page == 2 and stop.section_path == ("DNS Failover Runbook", "Failover procedure")


@pytest.mark.slow  # unstructured's DOCX partitioner loads its NLP models on first use: ~16 s
def test_docx_core_properties_headings_lists_table():
    doc = parse_file(FIXTURES / "guide.docx")
    assert (doc.title, doc.author) == ("VPN Onboarding Guide", "Ops Team")
    assert doc.updated_at == datetime(2024, 2, 1, 8, 30, tzinfo=UTC)
    assert [(b.text, b.level) for b in doc.blocks if b.kind == "title"] == [
        ("VPN Onboarding Guide", 1),
        ("Requesting access", 2),
        ("Ports", 2),
    ]
    assert [b.kind for b in doc.blocks if "ticket" in b.text or "bundle" in b.text] == ["list_item"] * 2
    table = next(b for b in doc.blocks if b.kind == "table")
    assert table.text == "Port | Use\n1194 | OpenVPN UDP\n443 | TCP fallback"
    assert table.level == 1 and table.section_path == ("VPN Onboarding Guide", "Ports")


# ------------------------------------------------------------------------------------------------ errors


def _error(path: Path, **kwargs) -> str:
    with pytest.raises(ParseError) as info:
        parse_file(path, **kwargs)
    return info.value.code


def test_errors_are_typed(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert _error(empty) == "empty"
    blank = tmp_path / "blank.md"
    blank.write_text("---\ntitle: x\n---\n\n   \n")
    assert _error(blank) == "empty"
    big = tmp_path / "big.txt"
    big.write_text("x" * 200)
    assert _error(big, max_bytes=100) == "too_large"
    nul = tmp_path / "data.txt"
    nul.write_bytes(b"looks like text\x00\x01\x02 but is not")
    assert _error(nul) == "binary"
    png = tmp_path / "image.txt"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 50)
    assert _error(png) == "binary"
    sheet = tmp_path / "table.xlsx"
    sheet.write_bytes(b"PK\x03\x04 whatever")
    assert _error(sheet) == "unsupported"
    assert _error(FIXTURES / "corrupt.pdf") == "corrupt"
    fake_pdf = tmp_path / "fake.pdf"
    fake_pdf.write_text("not a pdf at all")
    assert _error(fake_pdf) == "corrupt"
    fake_docx = tmp_path / "fake.docx"
    fake_docx.write_text("not a zip")
    assert _error(fake_docx) == "corrupt"
    assert _error(tmp_path) == "unsupported"  # a directory


def test_parse_error_rejects_unknown_codes():
    error = ParseError("binary", "x")
    assert error.code == "binary" and "binary" in str(error)
    with pytest.raises(ValueError, match="valid"):
        ParseError("oops", "x")


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        parse_file(tmp_path / "nope.txt")


# --------------------------------------------------------------------------------------- dev-set corpus


@pytest.mark.slow
@pytest.mark.skipif(not (DEVCORPUS / "corpus_manifest.tsv").exists(), reason="dev corpus not built")
def test_devcorpus_parses_fast_and_without_errors():
    files = sorted(p for p in DEVCORPUS.rglob("*") if p.suffix in (".html", ".txt"))
    started = time.perf_counter()
    docs = [parse_file(p) for p in files]
    elapsed = time.perf_counter() - started
    assert len(docs) == len(files) >= 500
    assert all(d.blocks for d in docs)
    assert elapsed < 60, f"parsing the dev corpus took {elapsed:.1f}s"
