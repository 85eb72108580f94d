"""knowledge.parsing.docx: core properties, headings, lists, tables, code the document sets as code; damaged
files and zip bombs."""

from __future__ import annotations

import zipfile
from datetime import UTC, datetime

import pytest

from knowledge.parsing import ParseError, archive_limits_check, parse_file
from tests.knowledge.parsing.blocks import FIXTURES

pytestmark = pytest.mark.unit


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
    assert table.text == "Port | Use\n--- | ---\n1194 | OpenVPN UDP\n443 | TCP fallback"
    assert table.level == 2 and table.section_path == ("VPN Onboarding Guide", "Ports")


def _runbook(path, *, body_font: str | None = None):  # type: ignore[no-untyped-def]
    """A DOCX runbook: a router configuration in Courier New runs, one in a "Code" paragraph style, a heading
    set in a monospaced font, prose around them; `body_font` sets the Normal style's font."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE

    document = docx.Document()
    if body_font:
        document.styles["Normal"].font.name = body_font
    code_style = document.styles.add_style("Code", WD_STYLE_TYPE.PARAGRAPH)
    code_style.base_style = document.styles["Normal"]
    mono_heading = document.add_heading("Quillgate relay uplink", 1)
    mono_heading.runs[0].font.name = "Consolas"
    document.add_paragraph("Configure the uplink on each edge router as follows:")
    for line in ["interface Quillgate0/1", " description QG-RELAY-<nn>", " relay-hold 45"]:
        document.add_paragraph().add_run(line).font.name = "Courier New"
    document.add_paragraph("Then the BGP neighbour:")
    document.add_paragraph("router bgp 64510\n neighbor 10.0.0.1 remote-as 64511", style="Code")
    mixed = document.add_paragraph("Run ")
    mixed.add_run("show relay").font.name = "Courier New"
    mixed.add_run(" to check it.")
    document.add_paragraph("Apply it in a change window.")
    document.save(str(path))
    return path


@pytest.mark.slow  # unstructured's DOCX partitioner loads its NLP models on first use
def test_docx_code_set_in_a_monospaced_font_or_a_code_style_is_marked_code(tmp_path):
    doc = parse_file(_runbook(tmp_path / "uplink.docx"))
    code = [b for b in doc.blocks if b.kind == "code"]
    assert [(b.text, b.marked) for b in code] == [
        ("interface Quillgate0/1\n description QG-RELAY-<nn>\n relay-hold 45", True),
        ("router bgp 64510\n neighbor 10.0.0.1 remote-as 64511", True),
    ]
    assert all(b.section_path == ("Quillgate relay uplink",) for b in code)
    # a heading in a monospaced font stays a heading; prose with a command in it stays prose
    assert [b.text for b in doc.blocks if b.kind == "title"] == ["Quillgate relay uplink"]
    assert any(b.kind == "text" and b.text == "Run show relay to check it." for b in doc.blocks)


@pytest.mark.slow
def test_a_docx_set_in_a_monospaced_font_throughout_marks_only_its_code_style(tmp_path):
    """In a typewritten document fonts say nothing: only the paragraph in the "Code" style is code."""
    doc = parse_file(_runbook(tmp_path / "typewritten.docx", body_font="Courier New"))
    assert [b.text for b in doc.blocks if b.marked] == [
        "router bgp 64510\n neighbor 10.0.0.1 remote-as 64511"
    ]
    assert any("Apply it in a change window." in b.text and not b.marked for b in doc.blocks)


@pytest.mark.slow
def test_a_docx_that_is_mostly_configuration_keeps_it_as_code(tmp_path):
    """A configuration guide with a line per paragraph has more code than prose: all of it is still code. A
    script font whose name merely starts with "Mono" is no monospaced font."""
    import docx

    document = docx.Document()
    document.add_heading("Quillgate relay configuration", 1)
    document.add_paragraph("Every relay runs this configuration.")
    lines = [f" relay-peer 10.0.0.{n} hold 45" for n in range(1, 9)]
    for line in ["relay-process 1", *lines]:
        document.add_paragraph().add_run(line).font.name = "Consolas"
    document.add_paragraph().add_run("With best regards from the relay team").font.name = "Monotype Corsiva"
    document.save(str(tmp_path / "relays.docx"))
    doc = parse_file(tmp_path / "relays.docx")
    (code,) = [b for b in doc.blocks if b.marked]
    assert code.text.split("\n") == ["relay-process 1", *lines]
    assert any(b.text == "With best regards from the relay team" and b.kind == "text" for b in doc.blocks)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"not a zip", "corrupt"),
        (b"PK\x03\x04garbage", "corrupt"),
        (b"\xd0\xcf\x11\xe0legacy", "unsupported"),
    ],
)
def test_damaged_or_legacy_docx_is_refused(tmp_path, raw, code):
    path = tmp_path / "fake.docx"
    path.write_bytes(raw)
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert info.value.code == code


def test_archive_limits_refuse_a_zip_bomb(tmp_path):
    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"0" * 5_000_000)  # inflates about 1000x
    with pytest.raises(ParseError) as info:
        archive_limits_check(bomb, name="bomb.docx")
    assert info.value.code == "too_large"
    with pytest.raises(ParseError) as info:
        archive_limits_check(bomb, name="bomb.docx", max_uncompressed=1_000_000)
    assert "limit 1000000 bytes" in info.value.message
    archive_limits_check(FIXTURES / "guide.docx", name="guide.docx")  # a real document passes
