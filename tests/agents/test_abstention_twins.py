"""Calibrated abstention on a corpus of its own: a question in the corpus's own words that asks for something
the documents never state is abstained on, and its answerable twin is answered (real DB, embedder, selector)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from agents.answerer import get_answerer
from agents.pipeline import run_pipeline
from athena.principals import Principal
from tests.agents.fixture_corpus import corpus_ingested

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "twin_kb"


@pytest.fixture(scope="module")
def twin_kb(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """The fixture corpus committed to the test database for this module."""
    with corpus_ingested(FIXTURE, django_db_blocker):
        yield


def _ask(question: str):  # type: ignore[no-untyped-def]
    user = User.objects.get_or_create(username="twin-asker")[0]
    return run_pipeline(question=question, principal=Principal.from_user(user), history=[])


def test_an_in_vocabulary_unanswerable_question_abstains_and_its_twin_is_answered(twin_kb):  # type: ignore[no-untyped-def]
    assert get_answerer() is not None, "the trained selector ships with the code"
    answerable = _ask("How many days does the archive server hold a copy of the switch configuration?")
    assert not answerable.abstained, answerable.trace
    assert "90 days" in answerable.answer
    # every word of this one is in the corpus; the documents never say how long a restore takes
    unanswerable = _ask("How many minutes does a restore from the archive server take?")
    assert unanswerable.abstained, unanswerable.answer
    decision = next(step["decision"] for step in unanswerable.trace if step["step"] == "adequacy")
    assert decision.startswith("abstain (P(answerable)"), decision


def test_collection_appends_another_question_files_runs_after_the_first_ones(twin_kb, tmp_path):  # type: ignore[no-untyped-def]
    import json

    from django.core.management import CommandError, call_command

    from agents.answerer_training import load_runs

    User.objects.get_or_create(username="twin-asker")
    first, second, data = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "runs.jsonl.gz"
    first.write_text(
        json.dumps(
            {
                "id": "a1",
                "split": "train",
                "type": "exact",
                "question": "How many days does the archive server hold a copy of the switch configuration?",
                "answer": "90 days",
                "gold": ["backup-policy.md"],
            }
        )
        + "\n"
    )
    second.write_text(
        json.dumps(
            {
                "id": "b1",
                "split": "validation",
                "type": "unanswerable",
                "question": "How many minutes does a restore from the archive server take?",
                "answer": None,
                "gold": [],
            }
        )
        + "\n"
    )
    with pytest.raises(CommandError, match="does not exist yet"):
        call_command(
            "train_answerer", "--collect", str(first), "--user", "twin-asker", "--data", str(data), "--append"
        )
    call_command("train_answerer", "--collect", str(first), "--user", "twin-asker", "--data", str(data))
    call_command(
        "train_answerer", "--collect", str(second), "--user", "twin-asker", "--data", str(data), "--append"
    )
    runs = load_runs(data)
    assert [r["type"] for r in runs] == ["exact", "unanswerable"]
    assert any(runs[0]["labels"]) and not any(runs[1]["labels"])
    assert runs[1]["group"] > runs[0]["group"]  # the second file's packages come after the first's
    assert "source" not in runs[0] and runs[1]["source"] == "second.jsonl"
