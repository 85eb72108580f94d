"""The question-file commands refuse bad files and unwritable outputs before any work, with a plain message
(they raised tracebacks, and evaluate only found a bad --out after answering every question)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.api import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

QUESTION = {"id": "q1", "question": "How do I rotate certificates?"}


def _file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], "questions.jsonl:1: not valid JSON"),
        (["", json.dumps(["a"])], "questions.jsonl:2: expected a JSON object, got list"),
        ([json.dumps({"id": "q1"})], "questions.jsonl:1: needs 'question'"),
        ([json.dumps(QUESTION), json.dumps({"question": "x"})], "questions.jsonl:2: needs 'id'"),
    ],
)
def test_evaluate_names_the_bad_line(tmp_path, lines, message) -> None:  # type: ignore[no-untyped-def]
    make_user("alice", "employees")
    with pytest.raises(CommandError, match=message):
        call_command(
            "evaluate", str(_file(tmp_path, *lines)), "--user", "alice", "--out", str(tmp_path / "p")
        )


def test_evaluate_checks_its_arguments_before_answering(tmp_path) -> None:  # type: ignore[no-untyped-def]
    make_user("alice", "employees")
    questions = str(_file(tmp_path, json.dumps(QUESTION)))

    def refused(*args: str) -> str:
        with pytest.raises(CommandError) as caught:
            call_command("evaluate", *args)
        return str(caught.value)

    assert "is a directory" in refused(questions, "--user", "alice", "--out", str(tmp_path))
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert "cannot create" in refused(questions, "--user", "alice", "--out", str(blocked / "sub" / "p.jsonl"))
    assert "is not a file" in refused(str(tmp_path), "--user", "alice", "--out", str(tmp_path / "p"))
    assert "must be a JSON object" in refused(questions, "--user", "alice", "--compare", "--config", "5")
    assert "--config" in refused(questions, "--user", "alice", "--compare", "--config", '{"sources": 5}')
    assert "must be at least 1" in refused(questions, "--user", "alice", "--compare", "--limit", "0")
    assert "writes no predictions" in refused(
        questions, "--user", "alice", "--compare", "--out", str(tmp_path / "p")
    )
    assert not (tmp_path / "p").exists()


def test_curation_export_refuses_an_unusable_out(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError, match="is a directory"):
        call_command("curation_export", "--out", str(tmp_path))
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(CommandError, match="cannot create"):
        call_command("curation_export", "--out", str(blocked / "x.jsonl"))


def test_batch_sizes_of_zero_or_less_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A batch size under 1 queued nothing (`ingest --wait` then waited forever) or embedded nothing after the
    vectors were cleared (`reembed`)."""
    for command in (("ingest", str(tmp_path), "--inline"), ("reembed",)):
        for size in ("0", "-3", "x"):
            with pytest.raises(CommandError, match="--batch-size"):
                call_command(*command, "--batch-size", size)


def test_train_answerer_refuses_options_of_the_other_job(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Without --collect the command refits and overwrites the artefact: a collection's options there (or a
    fit's options with --collect) were dropped without a word."""
    data = str(tmp_path / "runs.jsonl.gz")

    def refused(*args: str) -> str:
        with pytest.raises(CommandError) as caught:
            call_command("train_answerer", "--data", data, *args)
        return str(caught.value)

    assert refused("--append") == "--append needs --collect"
    assert refused("--user", "alice", "--allowed-user", "bob") == "--user, --allowed-user need --collect"
    questions = str(_file(tmp_path, json.dumps(QUESTION)))
    assert refused("--collect", questions, "--user", "alice", "--seed", "0", "--out", "x.json") == (
        "--out, --seed only apply when fitting (without --collect)"
    )
    assert not (tmp_path / "runs.jsonl.gz").exists() and not Path("x.json").exists()


def test_compare_rows_named_for_a_fusion_set_it_over_the_base_config() -> None:
    """`evaluate --compare --config '{"fusion": "rrf"}'`: the row named "hybrid combsum" ran RRF."""
    from agents.management.commands.evaluate import ABLATIONS

    hybrid = {name: overrides for name, overrides in ABLATIONS if name.startswith("hybrid ")}
    assert {name.split()[1]: overrides["fusion"] for name, overrides in hybrid.items()} == {
        "combsum": "combsum",
        "rrf": "rrf",
    }
