"""knowledge.parsing.html: metadata, page chrome, headings, lists, tables, definitions, code, TOC pages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.parsing import parse_file
from tests.knowledge.parsing.blocks import FIXTURES, by_text, kinds

pytestmark = pytest.mark.unit


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
    assert options.kind == "table" and options.level == 2  # the header row and the rule line under it
    assert options.section_path == ("Resolver Manual", "Options")
    assert options.text == "option | default\n--- | ---\nrecursion | yes\nlisten-on | any"
    assert by_text(doc.blocks, "max-cache-size").text == "max-cache-size\nUpper bound of the cache in bytes."
    assert by_text(doc.blocks, "Restart after").text == "Note\nRestart after changes."
    code = by_text(doc.blocks, "recursion yes;")
    assert code.kind == "code" and code.text == "options {\n    recursion yes;\n};"
    assert code.marked  # a <pre>: the format says it is code
    assert not any(b.marked for b in doc.blocks if b.kind != "code")


def test_html_layout_tables_become_flow_text(tmp_path):
    # reStructuredText option lists (tidesync.8.html) and DocBook admonitions are tables used for layout
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


def test_a_list_of_links_into_the_page_is_a_table_of_contents(tmp_path):
    # no class names it a table of contents: its items, each a link to a section of the page, do
    path = tmp_path / "stress.html"
    path.write_text(
        "<html><body><h1>Stress</h1><p>Sections on this page:</p>"
        '<ul><li><a href="#symptoms">Symptoms of overload</a></li><li><a href="#auto">Automatic mode</a>'
        '<ul><li><a href="#auto-on">Forcing it on</a></li></ul></li></ul>'
        '<h2 id="symptoms">Symptoms of overload</h2><p>Mail queues up. Topics in this section:</p>'
        '<ul><li><a href="#slow">Slow clients</a></li><li><a href="#many">Many clients</a></li></ul>'
        "<p>The signs are these:</p>"
        '<ul><li><a href="#symptoms">Symptoms</a> come first</li><li><a href="#auto">Automatic mode</a></li></ul>'
        '<ul><li><a href="#auto">Automatic mode</a><ul><li>Turn it on</li></ul></li><li><a href="#a">A</a></li></ul>'
        '<ul><li><a href="elsewhere.html">Other page</a></li><li><a href="more.html">More</a></li></ul>'
        '<ul><li><a href="#symptoms">Symptoms</a></li></ul>'
        "</body></html>",
        encoding="utf-8",
    )
    doc = parse_file(path)
    assert [(b.kind, b.text) for b in doc.blocks if b.kind != "title"] == [
        # the one sentence that announces a table of contents goes with it; a paragraph that says more stays
        ("text", "Mail queues up. Topics in this section:"),
        ("text", "The signs are these:"),
        # an item with words outside its link, or a list inside with other text, or another page's links,
        # or a single link: not a table of contents
        ("list_item", "Symptoms come first"),
        ("list_item", "Automatic mode"),
        ("list_item", "Automatic mode"),
        ("list_item", "Turn it on"),
        ("list_item", "A"),
        ("list_item", "Other page"),
        ("list_item", "More"),
        ("list_item", "Symptoms"),
    ]


def test_a_man_page_rendered_in_a_pre_is_not_marked_as_code(tmp_path):
    path = tmp_path / "relayd.8.html"
    page = (
        "RELAYD(8)            Relay Operator's Manual            RELAYD(8)\n\n"
        "NAME\n       relayd - relay daemon\n\n"
        "DESCRIPTION\n       relayd forwards audit events to the collector.\n\n"
        "                          2024-01-01                     RELAYD(8)"
    )
    path.write_text(f"<html><head><title>relayd</title></head><body><pre>{page}</pre></body></html>")
    doc = parse_file(path)
    held = by_text(doc.blocks, "forwards audit events")
    assert held.kind == "code" and not held.marked


def test_prose_set_in_a_pre_is_not_marked_as_code(tmp_path):
    # a mail in a list archive: its lines are prose, wrapped where the writer's editor wrapped them
    mail = (
        "Hi all,\n\n"
        "After upgrading the edge routers to the new release last week we\n"
        "see the BGP sessions to both transit providers flap every few\n"
        "minutes during the busy hours of the day, always on the same\n"
        "interface.\n\nThanks,\nBob"
    )
    path = tmp_path / "archive.html"
    path.write_text(
        f"<html><head><title>flaps</title></head><body><pre>{mail}</pre>"
        "<pre>router bgp 64510\n timers bgp 30 90\n neighbor 198.51.100.1 fall-over bfd</pre></body></html>"
    )
    doc = parse_file(path)
    assert not by_text(doc.blocks, "After upgrading").marked
    assert by_text(doc.blocks, "router bgp").marked


@pytest.mark.parametrize(
    ("pre", "marked"),
    [
        # a manual that sets its reference text in <pre>s: hyphenated words, "can't", a paragraph's short last
        # line, and a sentence or two on their own are prose
        (
            "You can offload the relay check to another target, so you can make one place\n"
            "managing status and weights of relays defined in Quillgate in case you can't\n"
            "make self-aware and self-managing services. You can give an address or\n"
            "a hostname, we look it up.",
            False,
        ),
        ("Sets the time between individual keepalive probes on the relay side.", False),
        # code with comments in prose, a console session and a log excerpt stay code
        (
            "static int relay_handler(request_rec *r)\n{\n    /* To begin, we must find out whether this request is\n"
            "     * meant for the relay handler, and if so, we take it and do the work */\n    return OK;\n}",
            True,
        ),
        (
            "function relay(r)\n    -- The opening yield tells the host that the relay can now take the parcels.\n"
            "    -- Ahead of that yield, we may prepare our state and look for preconditions.\n    coroutine.yield()\nend",
            True,
        ),
        ("$ relayctl search ldap\np librelay-ldap - relay module that looks names up in an LDAP tree", True),
        (
            "warning: relay unix:spool.sock: can't parse frame length: Unknown error\n"
            "warning: relay unix:spool.sock: can't parse frame length: Success",
            True,
        ),
        ("external-check command /bin/true", True),
    ],
)
def test_prose_in_a_pre_is_told_from_code_with_comments(tmp_path, pre, marked):  # type: ignore[no-untyped-def]
    path = tmp_path / "manual.html"
    path.write_text(f"<html><head><title>relay</title></head><body><pre>{pre}</pre></body></html>")
    (block,) = [b for b in parse_file(path).blocks if b.kind == "code"]
    assert block.marked is marked


def test_a_pages_catalogue_fields_in_meta_tags_are_its_metadata(tmp_path):
    path = tmp_path / "sop-relay-upgrade.html"
    path.write_text(
        "<html><head><title>Relay upgrade</title>"
        '<meta name="doc_type" content="sop"><meta name="department" content="noc">'
        '<meta name="vendor" content="Quillgate"><meta name="review-by" content="2027-03-25">'
        '<meta name="superseded_by" content="sop-relay-upgrade-v2.html">'
        '<meta name="generator" content="an editor">'
        "</head><body><p>Drain the relay before the upgrade.</p></body></html>",
        encoding="utf-8",
    )
    doc = parse_file(path)
    assert doc.metadata == {
        "format": "html",
        "doc_type": "sop",
        "department": "noc",
        "vendor": "Quillgate",
        "review_by": "2027-03-25",
        "superseded_by": "sop-relay-upgrade-v2.html",
    }


def test_a_zero_width_space_inside_a_word_is_not_a_space(tmp_path) -> None:
    # browsers break long words at it; it is no space in the word
    path = tmp_path / "zw.html"
    path.write_text(
        "<html><head><title>Router con&#8203;figuration</title></head><body><h1>Router con&#8203;figuration"
        "</h1><p>Set the max&#8203;_wal&#8203;_size and the con&#173;figuration \ufb01le.</p></body></html>",
        encoding="utf-8",
    )
    parsed = parse_file(path)
    assert parsed.title == "Router configuration"
    assert [b.text for b in parsed.blocks if b.kind != "title"] == [
        "Set the max_wal_size and the configuration file."
    ]
