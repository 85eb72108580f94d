"""Adversarial input never gives a server error nor a silently wrong result: values the database cannot hold
(NUL, lone surrogates, non-finite numbers), wrong JSON types, repeated parameters, numbers past the database's
range, and operator commands given bad files. Each case is a 4xx (or a CommandError) with a clear message, and
what must be audited still is."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from athena import throttling
from audit.models import AuditEvent
from tests.api import client_for, make_user

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture()
def uploader(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"
    user = make_user("uploader", "employees")
    throttling.user_counters_clear(user)
    yield user
    throttling.user_counters_clear(user)


def _multipart(disposition: str, content: bytes = b"hello there") -> tuple[bytes, str]:
    boundary = "athena-test-boundary"
    body = (
        f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: text/plain\r\n\r\n".encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


# --- the audit log keeps a refusal whatever characters the request quoted ------------------------------------


def test_an_upload_field_named_with_a_nul_is_refused_and_the_refusal_audited(uploader) -> None:  # type: ignore[no-untyped-def]
    # the refusal quotes the unknown field's name; PostgreSQL's JSONB cannot hold its NUL, and writing the
    # upload_refused event failed: a 500, and the refusal went unaudited
    body, content_type = _multipart('form-data; name="fi\x00le"; filename="notes.txt"')
    client = client_for(uploader)
    client.raise_request_exception = False
    response = client.generic("POST", "/api/v1/documents/upload", body, content_type=content_type)
    assert response.status_code == 400, response.content
    assert "unknown field" in response.json()["error"]["message"]
    (event,) = AuditEvent.objects.filter(kind="upload_refused", actor="uploader")
    assert event.payload["message"] == "unknown field(s): fi\ufffdle"


def test_an_audit_event_keeps_what_the_database_cannot_hold_readable() -> None:
    from audit.services import audit_record, audit_verify

    event = audit_record(
        kind="test_event",
        actor="op\x00erator",
        verdict="re\ud800fused",
        documents=["a\x00.md"],
        payload={"k\x00ey": ["v\x00", "\udcff", float("nan")], "n": float("inf")},
    )
    event.refresh_from_db()
    assert event.actor == "op\ufffderator" and event.verdict == "re\ufffdfused"
    assert event.documents == ["a\ufffd.md"]
    assert event.payload == {"k\ufffdey": ["v\ufffd", "\ufffd", "nan"], "n": "inf"}
    assert audit_verify().ok  # hashed as stored


# --- admin-curated JSON: the shape the code reads, and what the database can store ----------------------------


@pytest.fixture()
def admin_browser():  # type: ignore[no-untyped-def]
    from django.test import Client

    user = make_user("curator", "employees", "kb-admins", superuser=True)
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    browser = Client()
    browser.raise_request_exception = False
    assert browser.login(username="curator", password="pw")
    return browser


@pytest.mark.parametrize(
    "aliases",
    [
        '["cisco\\u0000"]',  # NUL: PostgreSQL's JSONB refused it at the INSERT (500)
        '["\\ud800"]',  # a lone surrogate cannot be encoded (500)
        "[1e999]",  # infinity (500)
        "[1]",  # saved, then every question failed: the query analysis calls .lower() on each alias
        '"cisco systems"',  # saved, then each letter was an alias of the vendor
        '{"cisco": 1}',
        '[""]',
    ],
)
def test_vendor_aliases_must_be_a_list_of_storable_names(admin_browser, aliases) -> None:  # type: ignore[no-untyped-def]
    from knowledge.models import Vendor

    response = admin_browser.post(
        "/admin/knowledge/vendor/add/", {"name": "Acme", "kind": "vendor", "aliases": aliases}
    )
    assert response.status_code == 200, (response.status_code, response.get("Location"))
    assert b"errorlist" in response.content and b"aliases" in response.content
    assert not Vendor.objects.filter(name="Acme").exists()


@pytest.mark.parametrize("expansions", ['"keepalive"', '["hello\\u0000"]', "[5, true]", '{"a": "b"}'])
def test_synonym_expansions_must_be_a_list_of_storable_terms(admin_browser, expansions) -> None:  # type: ignore[no-untyped-def]
    from knowledge.models import Synonym

    response = admin_browser.post("/admin/knowledge/synonym/add/", {"term": "hb", "expansions": expansions})
    assert response.status_code == 200, (response.status_code, response.get("Location"))
    assert b"errorlist" in response.content
    assert not Synonym.objects.filter(term="hb").exists()


def test_valid_curated_lists_are_still_saved(admin_browser) -> None:  # type: ignore[no-untyped-def]
    from knowledge.models import Synonym, Vendor

    vendor = {"name": "Acme", "kind": "vendor", "aliases": '["acme corp", "acme"]'}
    assert admin_browser.post("/admin/knowledge/vendor/add/", vendor).status_code == 302
    synonym = {"term": "hb", "expansions": '["heartbeat", "hello interval"]'}
    assert admin_browser.post("/admin/knowledge/synonym/add/", synonym).status_code == 302
    assert Vendor.objects.get(name="Acme").aliases == ["acme corp", "acme"]
    assert Synonym.objects.get(term="hb").expansions == ["heartbeat", "hello interval"]


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        ([], "JSON object"),  # a re-ingest merges it as a mapping ({**metadata, ...}) and failed
        ({"owner": "ops\x00"}, "NUL"),
        ({"score": float("nan")}, "cannot be stored"),
    ],
)
def test_document_metadata_edited_in_the_admin_must_be_a_storable_object(metadata, fragment) -> None:  # type: ignore[no-untyped-def]
    from django.core.exceptions import ValidationError

    from knowledge.models import Document

    document = Document(source="runbooks/x.md", metadata=metadata)
    with pytest.raises(ValidationError) as refused:
        document.clean_fields()
    assert fragment in str(refused.value.message_dict["metadata"])
    document.metadata = {"owner": "ops"}
    document.clean_fields()  # a storable object passes


# --- ask: a filter of the wrong type is refused, never read as "no filter" -----------------------------------


@pytest.mark.parametrize(
    ("filters", "fragment"),
    [
        ({"tiers": False}, "filter tiers must be a list of strings"),  # searched every tier
        ({"doc_types": 0}, "filter doc_types must be a list of strings"),
        ({"departments": {}}, "filter departments must be a list of strings"),
        ({"vendors": ""}, "filter vendors must be a list of strings"),
        ({"departments": ["noc", " "]}, "filter departments must be a list of strings"),
        ({"updated_after": False}, "filter updated_after must be a date YYYY-MM-DD"),  # was no date limit
        ({"updated_before": 20260101}, "filter updated_before must be a date YYYY-MM-DD"),
        ({"updated_after": "2026-02-30"}, "filter updated_after must be a date YYYY-MM-DD"),
        ({"updated_after": "0000-01-01"}, "filter updated_after must be a date YYYY-MM-DD"),
        # the database refused these with a message that named no filter
        ({"departments": ["noc\x00"]}, "filter departments: 'noc\\x00' contains a NUL character"),
        ({"vendors": "cis\x00co"}, "filter vendors: 'cis\\x00co' contains a NUL character"),
    ],
)
def test_ask_refuses_filters_of_the_wrong_type_or_unstorable(filters, fragment) -> None:  # type: ignore[no-untyped-def]
    client = client_for(make_user("asker", "employees"))
    response = client.post(
        "/api/v1/ask", {"question": "how do I rotate the VPN keys?", "filters": filters}, format="json"
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and fragment in error["message"], error


# --- a parameter given twice is refused; a page past the database's range is named -------------------------


@pytest.fixture()
def everyone() -> APIClient:
    return client_for(make_user("everyone", "employees", "kb-admins", "compliance"))


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/audit/events?user=alice&user=bob",  # answered for bob alone
        "/api/v1/audit/export.csv?user=alice&user=bob",  # exported bob's events as the answer to both
        "/api/v1/audit/export.jsonl?kind=question&kind=upload",
        "/api/v1/documents?doc_type=sop&doc_type=runbook",
        "/api/v1/documents?limit=1&limit=2",
        "/api/v1/conversations?offset=0&offset=50",
        "/api/v1/curation?resolved=true&resolved=false",
    ],
)
def test_a_query_parameter_given_twice_is_refused(everyone, url) -> None:  # type: ignore[no-untyped-def]
    response = everyone.get(url)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and "given more than once" in error["message"], error
    assert not AuditEvent.objects.filter(kind="audit_export").exists()


@pytest.mark.parametrize("offset", [str(2**63), "9" * 30])
def test_an_audit_search_offset_past_the_database_range_is_named(everyone, offset) -> None:  # type: ignore[no-untyped-def]
    response = everyone.get(f"/api/v1/audit/events?offset={offset}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"].startswith("offset: "), response.content


@pytest.fixture()
def compliance_browser():  # type: ignore[no-untyped-def]
    from django.test import Client

    from audit.services import audit_record

    make_user("carol", "compliance")
    audit_record(kind="question", actor="alice", payload={"question": "q1"})
    audit_record(kind="question", actor="bob", payload={"question": "q2"})
    browser = Client()
    assert browser.login(username="carol", password="pw")
    return browser


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("user=alice&user=bob", "filter(s) given more than once: user"),
        ("offset=abc", "offset must be a whole number from 0 to 1000000"),  # showed the first page
        ("offset=-5", "offset must be a whole number from 0 to 1000000"),
        ("offset=1e309", "offset must be a whole number from 0 to 1000000"),
    ],
)
def test_the_compliance_page_says_what_it_cannot_search(compliance_browser, query, error) -> None:  # type: ignore[no-untyped-def]
    page = compliance_browser.get(f"/compliance/?{query}")
    assert page.status_code == 200
    assert error in page.context["errors"], page.context["errors"]
    assert page.context["total"] == 0 and not page.context["events"]


def test_the_compliance_page_still_pages(compliance_browser) -> None:  # type: ignore[no-untyped-def]
    assert compliance_browser.get("/compliance/?offset=0").context["total"] == 2
    page = compliance_browser.get("/compliance/?user=bob&offset=0")
    assert not page.context["errors"] and page.context["total"] == 1


# --- operator commands: a bad file is a CommandError naming it, never a traceback ----------------------------


def _command_error(*args: str, **options: object) -> str:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError) as refused:
        call_command(*args, **options)
    return str(refused.value)


def test_evaluate_names_the_line_of_a_questions_file_that_is_not_utf8(tmp_path) -> None:  # type: ignore[no-untyped-def]
    make_user("op", "employees")
    questions = tmp_path / "questions.jsonl"
    questions.write_bytes(b'{"id": "q1", "question": "fine"}\n{"id": "q2", "question": "caf\xe9"}\n')
    message = _command_error("evaluate", str(questions), user="op", out=str(tmp_path / "out.jsonl"))
    assert message == f"{questions}:2: not UTF-8 text (byte 0xe9 at offset 62)"
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "does not exist"),  # FileNotFoundError before
        ('{"question": "how do I restart bgp?"}\n', ":1: needs 'template', 'hop'"),  # KeyError before
        ('{"question": "x",\n', ":1: not valid JSON"),  # JSONDecodeError before
        (b'{"question": "\xff", "template": "procedure_sop", "hop": "single"}\n', ":1: not UTF-8 text"),
        ('{"question": "x", "template": "recipe", "hop": "single"}\n', ":1: unknown label 'recipe'"),
    ],
)
def test_train_classifier_refuses_a_bad_examples_file_by_name(tmp_path, content, fragment) -> None:  # type: ignore[no-untyped-def]
    examples = tmp_path / "examples.jsonl"
    if isinstance(content, bytes):
        examples.write_bytes(content)
    elif content is not None:
        examples.write_text(content)
    out = tmp_path / "model.joblib"
    message = _command_error("train_classifier", examples=str(examples), out=str(out))
    assert fragment in message, message
    assert not out.exists()


def test_train_classifier_refuses_an_out_it_cannot_write_before_training(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agents.classify import EXAMPLES_PATH

    message = _command_error("train_classifier", examples=str(EXAMPLES_PATH), out=str(tmp_path))
    assert message == f"{tmp_path} is a directory: give a file name"


# --- a question refused for what it holds is still audited --------------------------------------------------


def _refused_question_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind="question", verdict="invalid"))


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"question": "x" * 1001}, 400, "no more than 1000 characters"),
        ({"question": "why does BGP\x00 flap?"}, 400, "Null characters are not allowed"),
        ({"question": "why does BGP flap?", "user": "admin"}, 400, "unknown field(s): user"),
        ({"question": "why does BGP flap?", "filters": {"tiers": ["secret"]}}, 400, "unknown value(s)"),
        (
            {"question": "why does BGP flap?", "conversation_id": "00000000-0000-0000-0000-000000000001"},
            404,
            "no such conversation",
        ),
    ],
)
def test_a_refused_question_is_audited_with_its_text_withheld(body, status, fragment) -> None:  # type: ignore[no-untyped-def]
    client = client_for(make_user("asker", "employees"))
    response = client.post("/api/v1/ask", body, format="json")
    assert response.status_code == status, response.content
    assert fragment in response.json()["error"]["message"]
    (event,) = _refused_question_events()
    assert event.actor == "asker" and fragment in event.payload["error"]
    assert event.payload["question"] == "[withheld: not screened, refused as invalid]"
    assert "BGP" not in str(event.payload) and "xxxx" not in str(event.payload)
    assert not AuditEvent.objects.filter(kind="question").exclude(verdict="invalid").exists()


def test_a_body_that_is_no_question_is_not_audited_as_one() -> None:
    client = client_for(make_user("asker", "employees"))
    assert client.post("/api/v1/ask", ["why?"], format="json").status_code == 400
    assert client.post("/api/v1/ask", "{", content_type="application/json").status_code == 400
    assert not _refused_question_events()


def test_refused_questions_count_towards_the_hourly_limit(settings) -> None:  # type: ignore[no-untyped-def]
    # each refusal writes an audit event: uncounted, a client could grow the log without bound
    settings.ATHENA_QUESTIONS_PER_HOUR = 2
    client = client_for(make_user("asker", "employees"))
    codes = [
        client.post("/api/v1/ask", {"question": "x" * 1001}, format="json").status_code for _ in range(3)
    ]
    assert codes == [400, 400, 429]
    assert len(_refused_question_events()) == 2


def test_the_ask_command_refuses_a_question_the_database_cannot_hold_and_audits_it() -> None:
    make_user("op", "employees")
    # a command line's bytes that are not UTF-8 reach Python as lone surrogates: a UnicodeEncodeError before
    message = _command_error("ask", "caf\udce9 menu?", user="op")
    assert message == "question contains a lone surrogate (U+DCE9), which is not a character"
    (event,) = _refused_question_events()
    assert event.actor == "op" and event.payload["error"] == message


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        # every document of the run failed with the database's "value too long", and the command exited 0
        (
            "--vendor",
            "v" * 101,
            "vendor 'vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv'... is 101 characters; at most 100",
        ),
        (
            "--department",
            "d" * 150,
            "department 'dddddddddddddddddddddddddddddddddddddddd'... is 150 characters; at most 100",
        ),
        # a command line's bytes that are not UTF-8 (a Latin-1 terminal): a traceback before
        (
            "--department",
            "R\udce9seau",
            "department 'R\\udce9seau' contains a lone surrogate (U+DCE9), which is not a character",
        ),
        (
            "--acl-group",
            "g\udcff",
            "acl group 'g\\udcff' contains a lone surrogate (U+DCFF), which is not a character",
        ),
    ],
)
def test_ingest_refuses_an_option_the_database_cannot_hold_before_the_run(
    tmp_path, option, value, message
) -> None:  # type: ignore[no-untyped-def]
    from knowledge.models import Document, IngestRun

    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "power.md").write_text("# Rack power\n\nEach rack in hall B is limited to 8 kW.\n")
    assert _command_error("ingest", str(folder), "--inline", option, value) == message
    assert not IngestRun.objects.exists() and not Document.objects.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "/api/v1/documents?offset=" + str(2**63),
            "offset: Ensure this value is less than or equal to 1000000.",
        ),
        (
            "/api/v1/documents/lookup?source=vpn%00.md",
            "query parameter 'source' contains a NUL character (0x00)",
        ),
        (
            "/api/v1/documents/lookup?source=a.md&source=b.md",
            "parameter(s) given more than once: source; each takes one value",
        ),
        ("/api/v1/documents/lookup?source=a.md&sorce=b.md", "unknown field(s): sorce"),
    ],
)
def test_document_lookups_name_what_they_cannot_search(everyone, url, message) -> None:  # type: ignore[no-untyped-def]
    response = everyone.get(url)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"] == message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"email": "not-an-email"}, "invalid e-mail address 'not-an-email'"),  # stored as given before
        (
            {"email": "ops\x00@example.com"},
            "invalid e-mail address 'ops\\x00@example.com'",
        ),  # DataError before
        ({"groups": ["noc\x00"]}, "invalid group name 'noc\\x00'"),  # DataError before
    ],
)
def test_adduser_refuses_what_it_cannot_store_and_creates_nobody(options, message) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import User

    assert _command_error("adduser", "dana", **options) == message
    assert not User.objects.filter(username="dana").exists()


@pytest.mark.parametrize("command", ["ask", "evaluate"])
@pytest.mark.parametrize("name", ["op\x00", "caf\udce9"])
def test_a_user_name_the_database_cannot_hold_names_no_user(tmp_path, command, name) -> None:  # type: ignore[no-untyped-def]
    # a command line's undecodable bytes become lone surrogates: the lookup failed with a traceback
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"id": "q1", "question": "how do I restart bgp?"}\n')
    args = ("why?",) if command == "ask" else (str(questions),)
    extra = {} if command == "ask" else {"out": str(tmp_path / "out.jsonl")}
    message = _command_error(command, *args, user=name, **extra)
    assert message.startswith(f"no user {name!r}"), message


def test_train_answerer_refuses_a_data_file_it_did_not_write(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "runs.jsonl.gz"
    data.write_text('{"split": "train"}\n')  # not gzipped: BadGzipFile before
    message = _command_error("train_answerer", data=str(data), out=str(tmp_path / "answerer.json"))
    assert message.startswith(f"{data} is not a file written by --collect (gzipped JSON lines): ")
    assert not (tmp_path / "answerer.json").exists()


def test_train_answerer_refuses_an_out_it_cannot_write_before_fitting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import gzip

    data = tmp_path / "runs.jsonl.gz"
    with gzip.open(data, "wt") as handle:
        handle.write('{"split": "train"}\n')
    message = _command_error("train_answerer", data=str(data), out=str(tmp_path))
    assert message == f"{tmp_path} is a directory: give a file name"


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("post", "/api/v1/ask", '{"question": "why does BGP flap?", "question": "what is my SSN?"}'),
        ("post", "/api/v1/answers/1/feedback", '{"vote": "up", "vote": "down"}'),
        (
            "put",
            "/api/v1/documents/1/acl",
            '{"access_tier": "public", "groups": [], "access_tier": "confidential"}',
        ),
        ("post", "/api/v1/ask", '{"question": "ok?", "filters": {"tiers": ["public"], "tiers": []}}'),
    ],
)
def test_a_json_object_naming_a_key_twice_is_refused(everyone, method, url, body) -> None:  # type: ignore[no-untyped-def]
    # Python's JSON keeps the last value: the second question was asked, the last vote recorded
    response = getattr(everyone, method)(url, body, content_type="application/json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "parse_error" and "is given more than once in one object" in error["message"]
    assert not AuditEvent.objects.filter(kind="question").exists()


def test_a_form_field_given_twice_is_refused(everyone) -> None:  # type: ignore[no-untyped-def]
    response = everyone.post(
        "/api/v1/answers/1/feedback", "vote=up&vote=down", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400, response.content
    assert "given more than once: vote" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/v1/documents/1?fields=title"),
        ("get", "/api/v1/documents/1/metadata?version=2"),
        ("get", "/api/v1/passages/1?context=2"),
        ("get", "/api/v1/conversations/00000000-0000-0000-0000-000000000001?turns=5"),
        ("delete", "/api/v1/conversations/00000000-0000-0000-0000-000000000001?soft=true"),
        ("get", "/api/v1/ask/queue?user=bob"),
        ("get", "/api/v1/audit/events/1?format_=csv"),
        ("get", "/api/v1/audit/chain?since=2026-01-01"),  # verified the whole chain as if that was asked
        ("get", "/api/v1/health?worker=false"),  # a typo of workers= took every web server out of service
        ("get", "/api/v1/health?workers=false&workers=true"),
        ("post", "/api/v1/answers/1/feedback?comment=great"),
        ("post", "/api/v1/curation/1/resolve?document_id=3"),
        ("put", "/api/v1/documents/1/acl?groups=noc"),
        ("post", "/api/v1/documents/1/reingest?force=true"),
    ],
)
def test_an_endpoint_refuses_query_parameters_it_does_not_take(everyone, method, url) -> None:  # type: ignore[no-untyped-def]
    response = getattr(everyone, method)(url, {}, format="json")
    assert response.status_code == 400, (url, response.content)
    message = response.json()["error"]["message"]
    assert "unknown field(s)" in message or "given more than once" in message, message


def test_a_conversation_id_in_the_ask_query_string_is_refused_and_audited(everyone) -> None:  # type: ignore[no-untyped-def]
    # the body's question was answered in a new conversation, not the one the query string named
    url = "/api/v1/ask?conversation_id=00000000-0000-0000-0000-000000000001"
    response = everyone.post(url, {"question": "and the second step?"}, format="json")
    assert (
        response.status_code == 400
        and "unknown field(s): conversation_id" in response.json()["error"]["message"]
    )
    assert len(_refused_question_events()) == 1


def test_an_oversized_form_question_sent_with_an_unknown_query_parameter_is_refused_unread(everyone) -> None:  # type: ignore[no-untyped-def]
    # the ask API refuses a body past 64 KiB before reading it (a JSON one in the middleware, a form's in the
    # view); a refused query parameter came first, and the check of whether the refusal was a question (to
    # audit it) then read and parsed the form body whatever its size
    body = "question=" + "x" * (70 * 1024)
    url = "/api/v1/ask?verbose=1"
    response = everyone.post(url, body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] == "too_large"
    assert not _refused_question_events()


def test_an_upload_with_a_query_parameter_is_refused_and_audited(uploader) -> None:  # type: ignore[no-untyped-def]
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("notes.txt", b"rack power is 8 kW", content_type="text/plain")
    response = client_for(uploader).post(
        "/api/v1/documents/upload?ttl_hours=1", {"file": upload}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert AuditEvent.objects.filter(kind="upload_refused", actor="uploader").count() == 1


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"question": "\u200b\u200f"}, "question: This field may not be blank."),  # answered before
        ({"question": "\u202e \u0301\u200d"}, "question: This field may not be blank."),
        ({"question": "why?", "conversation_id": 5}, "conversation_id: Must be a valid UUID."),  # UUID(int=5)
        ({"question": "why?", "conversation_id": True}, "conversation_id: Must be a valid UUID."),
    ],
)
def test_ask_refuses_an_invisible_question_and_a_conversation_id_that_is_no_string(body, fragment) -> None:  # type: ignore[no-untyped-def]
    client = client_for(make_user("asker", "employees"))
    response = client.post("/api/v1/ask", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"] == fragment
    assert len(_refused_question_events()) == 1


def test_a_question_in_any_script_or_with_marks_is_still_asked_not_blank() -> None:
    from agents.apis import QuestionField

    for text in ("\u0915\u094d\u092f\u093e?", "e\u0301t\u00e9 \u200bBGP", "\U0001f525 on r1"):
        assert QuestionField().run_validation(text) == text.strip()


@pytest.mark.parametrize(
    ("port", "why"),
    [
        ("0", "must be at least 1, got 0"),
        ("70000", "must be a port from 1 to 65535, got 70000"),
        ("80x", "must be a whole number, got '80x'"),
    ],
)
def test_the_stack_command_refuses_a_port_that_is_none(port, why) -> None:  # type: ignore[no-untyped-def]
    # 0 was read as "the default port"; 70000 failed only when the web server tried to listen
    assert _command_error("stack", "status", "--port", port) == f"Error: argument --port: {why}"
