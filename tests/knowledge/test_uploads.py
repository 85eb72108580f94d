"""Upload limits: size enforced while the body streams, per-user quota and rate, DOCX decompression limits."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import FileUploadHandler

from athena import throttling
from audit.models import AuditEvent
from knowledge.parsing import ParseError, parse_file
from knowledge.uploads import SizeLimitUploadHandler, UploadTooLarge
from tests.api import client_for, make_user

pytestmark = pytest.mark.integration

URL = "/api/v1/documents/upload"
RECEIVED: list[int] = []


class RecordingHandler(FileUploadHandler):
    """Placed after the size handler: records how many file bytes reached the handlers that store them."""

    def new_file(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().new_file(*args, **kwargs)
        RECEIVED.append(0)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        RECEIVED[-1] += len(raw_data)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def _bomb_docx(inflated: int) -> bytes:
    """A DOCX-shaped ZIP whose one member inflates `inflated` zero bytes (about 1000x compression)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(inflated // len(block)):
                member.write(block)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "size",
    [
        5_000_000,  # the declared Content-Length is over the limit: refused before any of the body is read
        150_000,  # declared length within the multipart allowance: refused once the counted bytes cross it
    ],
)
def test_oversized_body_is_refused_while_streaming(uploader, settings, size) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_MAX_UPLOAD_BYTES = 100_000
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1000  # anything received would go to a temporary file
    settings.FILE_UPLOAD_HANDLERS = [
        "knowledge.uploads.SizeLimitUploadHandler",
        "tests.knowledge.test_uploads.RecordingHandler",
        "django.core.files.uploadhandler.TemporaryFileUploadHandler",
    ]
    RECEIVED.clear()
    big = SimpleUploadedFile("big.txt", b"x" * size, content_type="text/plain")
    response = client_for(uploader).post(URL, {"file": big}, format="multipart")
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] == "too_large"
    # nothing past the limit reached the storing handlers, and nothing was stored
    assert sum(RECEIVED) <= settings.ATHENA_MAX_UPLOAD_BYTES
    assert (sum(RECEIVED) > 0) == (size == 150_000)  # the second case really was cut mid-stream
    assert not (settings.MEDIA_ROOT / "uploads").exists()
    event = AuditEvent.objects.get(kind="upload_refused")
    assert event.actor == "uploader" and event.payload["code"] == "too_large"


def test_size_handler_counts_chunks_without_a_declared_length(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_MAX_UPLOAD_BYTES = 150_000
    handler = SizeLimitUploadHandler()
    handler.handle_raw_input(None, {}, 0, b"b")  # chunked body: no Content-Length to judge by
    chunk = b"x" * 65_536
    assert handler.receive_data_chunk(chunk, 0) == chunk
    assert handler.receive_data_chunk(chunk, 65_536) == chunk
    with pytest.raises(UploadTooLarge):
        handler.receive_data_chunk(chunk, 131_072)


def test_upload_quota_per_user(uploader, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_UPLOAD_QUOTA_BYTES = 1500
    client = client_for(uploader)
    first = SimpleUploadedFile("one.md", b"# One\n\n" + b"coffee beans " * 70, content_type="text/markdown")
    assert client.post(URL, {"file": first}, format="multipart").status_code == 201
    second = SimpleUploadedFile("two.md", b"# Two\n\n" + b"tea leaves " * 80, content_type="text/markdown")
    response = client.post(URL, {"file": second}, format="multipart")
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] == "quota_exceeded"
    assert not (settings.MEDIA_ROOT / "uploads" / str(uploader.pk) / "two.md").exists()
    # replacing the same file does not count its old copy against the quota
    again = SimpleUploadedFile("one.md", b"# One\n\n" + b"coffee roast " * 70, content_type="text/markdown")
    assert client.post(URL, {"file": again}, format="multipart").status_code == 201
    assert AuditEvent.objects.filter(kind="upload_refused", payload__code="quota_exceeded").count() == 1


def test_a_file_left_part_written_by_a_killed_upload_is_removed_not_counted(uploader, settings) -> None:  # type: ignore[no-untyped-def]
    """An upload is written under a hidden part name and renamed once whole: a web process killed meanwhile
    leaves the part behind. The user's next upload (under their upload lock, so no part is being written)
    removes it instead of counting it against their quota for ever."""
    settings.ATHENA_UPLOAD_QUOTA_BYTES = 1500
    folder = settings.MEDIA_ROOT / "uploads" / str(uploader.pk)
    folder.mkdir(parents=True)
    leftover = folder / ".3f2a9c.part"
    leftover.write_bytes(b"x" * 1200)
    upload = SimpleUploadedFile("one.md", b"# One\n\n" + b"coffee beans " * 70, content_type="text/markdown")
    response = client_for(uploader).post(URL, {"file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    assert not leftover.exists() and [p.name for p in folder.iterdir()] == ["one.md"]


def test_upload_rate_per_user(uploader, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_UPLOADS_PER_HOUR = 2
    client = client_for(uploader)
    for n in range(2):
        upload = SimpleUploadedFile(f"n{n}.md", b"# Note\n\nsome text here", content_type="text/markdown")
        assert client.post(URL, {"file": upload}, format="multipart").status_code == 201
    upload = SimpleUploadedFile("n3.md", b"# Note\n\nsome text here", content_type="text/markdown")
    response = client.post(URL, {"file": upload}, format="multipart")
    assert response.status_code == 429 and response.json()["error"]["code"] == "throttled"
    assert AuditEvent.objects.filter(kind="upload_refused", payload__code="throttled").exists()
    # another user is not affected
    other = make_user("other-uploader", "employees")
    throttling.user_counters_clear(other)
    upload = SimpleUploadedFile("n.md", b"# Note\n\nsome text here", content_type="text/markdown")
    assert client_for(other).post(URL, {"file": upload}, format="multipart").status_code == 201
    throttling.user_counters_clear(other)


def test_zip_bomb_docx_upload_is_refused_before_storing(uploader, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATHENA_MAX_UNCOMPRESSED_BYTES = 20_000_000
    bomb = _bomb_docx(64 << 20)  # 64 MiB of zeros in about 64 kB
    assert len(bomb) < 200_000
    upload = SimpleUploadedFile("bomb.docx", bomb, content_type="application/octet-stream")
    response = client_for(uploader).post(URL, {"file": upload}, format="multipart")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "unsafe_archive"
    assert not (settings.MEDIA_ROOT / "uploads").exists()
    assert AuditEvent.objects.filter(kind="upload_refused", payload__code="unsafe_archive").exists()


def test_parser_refuses_zip_bomb_by_size_and_ratio(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bomb.docx"
    path.write_bytes(_bomb_docx(8 << 20))
    with pytest.raises(ParseError) as by_size:
        parse_file(path, max_uncompressed=4 << 20)
    assert by_size.value.code == "too_large" and "uncompressed" in by_size.value.message
    with pytest.raises(ParseError) as by_ratio:
        parse_file(path)  # under the default size limit, but about 1000x compressed
    assert by_ratio.value.code == "too_large" and "zip bomb" in by_ratio.value.message


def _bomb_pdf(inflated: int) -> bytes:
    """A PDF whose one Flate content stream inflates `inflated` zero bytes."""
    import zlib

    packed = zlib.compress(b"\0" * inflated, 9)
    return (
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
        b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
        b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R>>endobj\n"
        + f"4 0 obj<</Length {len(packed)}/Filter/FlateDecode>>stream\n".encode()
        + packed
        + b"\nendstream\nendobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
    )


def test_parser_refuses_pdf_whose_streams_inflate_past_the_limit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bomb.pdf"
    path.write_bytes(_bomb_pdf(16 << 20))
    with pytest.raises(ParseError) as refused:
        parse_file(path, max_uncompressed=4 << 20)
    assert refused.value.code == "too_large" and "uncompressed" in refused.value.message


def test_two_files_in_one_upload_are_refused(uploader) -> None:  # type: ignore[no-untyped-def]
    """Two `file` parts: the serializer read the last alone and stored it under a 201."""
    parts = [
        SimpleUploadedFile(f"{name}.md", b"# Note\n\nsome text here", content_type="text/markdown")
        for name in ("a", "b")
    ]
    response = client_for(uploader).post(URL, {"file": parts}, format="multipart")
    assert response.status_code == 400 and "one file per upload, got 2" in response.json()["error"]["message"]
    assert not AuditEvent.objects.filter(kind="upload").exists()


@pytest.mark.parametrize(
    "name",
    [
        "\u8a2d\u5b9a" * 50 + ".md",  # 104 characters of Japanese: 303 bytes of UTF-8
        "\u00e9" * 150 + ".md",  # accented letters: 303 bytes
    ],
)
def test_a_name_too_long_in_bytes_is_refused_not_a_server_error(uploader, settings, name) -> None:  # type: ignore[no-untyped-def]
    """The file system limits a name to 255 bytes; the 200-character limit let longer ones through to the rename,
    which failed with ENAMETOOLONG (500)."""
    file = SimpleUploadedFile(name, b"# Note\n\nsome text here", content_type="text/markdown")
    response = client_for(uploader).post(URL, {"file": file}, format="multipart")
    assert response.status_code == 400, response.content
    assert "255 bytes" in response.json()["error"]["message"]
    assert not list((settings.MEDIA_ROOT / "uploads").rglob("*.md"))


def test_a_decomposed_name_is_the_composed_one(uploader, settings) -> None:  # type: ignore[no-untyped-def]
    """A browser on macOS sends "Résumé.md" decomposed (e + U+0301): it names the same document as the composed
    name, and the file is stored under the composed one."""
    client = client_for(uploader)
    for name in ("Re\u0301sume\u0301.md", "R\u00e9sum\u00e9.md"):
        file = SimpleUploadedFile(name, b"# Note\n\nsome text here", content_type="text/markdown")
        response = client.post(URL, {"file": file}, format="multipart")
        assert response.status_code == 201, response.content
        assert response.json()["source"] == f"uploads/{uploader.pk}/R\u00e9sum\u00e9.md"
    assert [p.name for p in (settings.MEDIA_ROOT / "uploads" / str(uploader.pk)).iterdir()] == [
        "R\u00e9sum\u00e9.md"
    ]


def test_a_private_upload_is_readable_by_the_services_account_only(uploader, settings) -> None:  # type: ignore[no-untyped-def]
    """A private upload is stored for its owner alone, but its file was written 0644 in folders 0755 (the process
    umask): every local account of the host could read every user's uploads in the media folder."""
    import os
    import stat

    old = os.umask(0o022)  # the usual umask, whatever the test run's
    try:
        upload = SimpleUploadedFile(
            "mine.md", b"# Mine\n\nthe vault code is 4417\n", content_type="text/markdown"
        )
        response = client_for(uploader).post(URL, {"file": upload}, format="multipart")
    finally:
        os.umask(old)
    assert response.status_code == 201, response.content
    uploads = settings.MEDIA_ROOT / "uploads"
    modes = {
        path.relative_to(uploads).as_posix(): stat.S_IMODE(path.stat().st_mode)
        for path in [uploads, *uploads.rglob("*")]
    }
    assert modes == {".": 0o700, str(uploader.pk): 0o700, f"{uploader.pk}/mine.md": 0o600}, {
        name: oct(mode) for name, mode in modes.items()
    }
