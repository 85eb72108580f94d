"""The learned answer selector: its arithmetic, labels, threshold choice, and reproducible training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.answerer import (
    ARTEFACT,
    QUESTION_FEATURES,
    SENTENCE_FEATURES,
    Answerer,
    LinearModel,
    get_answerer,
)
from agents.answerer_training import choose_threshold, fit_answerer, label_candidates, load_runs
from agents.management.commands.train_answerer import DATA

pytestmark = [pytest.mark.unit]


def test_a_linear_model_standardises_then_applies_the_logistic_function():
    model = LinearModel(("a", "b"), (1.0, 0.0), (2.0, 1.0), (1.0, -1.0), 0.5)
    p = model.probabilities(np.array([[3.0, 1.0], [1.0, 0.0]]))
    # (3-1)/2 * 1 + 1 * -1 + .5 = .5 ; 0 + 0 + .5 = .5
    assert p == pytest.approx([1 / (1 + np.exp(-0.5))] * 2)
    assert model.probabilities(np.zeros((0, 2))).size == 0
    with pytest.raises(ValueError, match="differ from the code"):
        LinearModel.from_json(model.to_json(), ("a", "c"))


def test_labels_follow_the_scorers_token_edges_and_normalisation():
    gold = ["10", "Normal"]
    assert label_candidates(
        ["The default is 10 seconds.", "Use 100 ms.", "normally fine", "“NORMAL”"], gold
    ) == [
        1,
        0,
        0,
        1,
    ]
    assert label_candidates(["anything"], []) == [0]


def test_the_threshold_abstains_most_within_the_false_abstention_bound():
    answerable = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    p = np.array([0.1, 0.2, 0.3, 0.6, 0.25, 0.5, 0.7, 0.8, 0.9, 0.95, 0.9, 0.9, 0.9, 0.9])
    t = choose_threshold(answerable, p, cap=0.1)
    assert 0.3 < t <= 0.5  # three of four unanswerable abstain; one answerable (.25) of ten turned away
    ruled = np.array([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    assert choose_threshold(answerable, p, ruled, cap=0.0) == pytest.approx(0.25)  # the rule takes the .6 one
    assert choose_threshold(answerable, p, cap=0.0) <= 0.25


@pytest.mark.slow  # fits the selector twice on the collected dev-set runs: ~10 s
@pytest.mark.skipif(not DATA.exists(), reason="no collected training data shipped")
def test_training_is_reproducible_and_matches_the_shipped_artefact():
    runs = load_runs(DATA)
    first, report = fit_answerer(runs)
    second, _ = fit_answerer(runs)
    assert json.dumps(first.to_json(), sort_keys=True) == json.dumps(second.to_json(), sort_keys=True)
    shipped = get_answerer()
    assert shipped is not None, f"{ARTEFACT} missing"
    assert shipped.version == first.version, "the shipped artefact is not what the shipped data trains"
    assert 0.0 < shipped.threshold < 1.0
    # training only ever reads train runs; validation figures are reported, not fitted
    assert set(report.figures) <= {"train (cv)", "validation"}
    assert Answerer.from_json(first.to_json()).to_json() == first.to_json()
    assert first.sentence.names == SENTENCE_FEATURES and first.answerable.names == QUESTION_FEATURES


EXTRA_QUESTIONS = Path(__file__).resolve().parents[1] / "benchmarks" / "extra_questions.jsonl"
TYPES = {"exact", "paraphrase", "procedure", "multihop", "unanswerable"}


def test_the_extra_training_questions_are_well_formed_and_split_by_package():
    questions = [json.loads(line) for line in EXTRA_QUESTIONS.read_text().splitlines() if line.strip()]
    assert len(questions) >= 300
    assert len({q["id"] for q in questions}) == len(questions)
    packages: dict[str, set[str]] = {}
    for q in questions:
        assert q["type"] in TYPES and q["split"] in {"train", "validation"} and q["acl"] is None, q["id"]
        if q["type"] == "unanswerable":
            assert not q["gold"] and q["answer"] is None and q["absent_terms"], q["id"]
            continue
        assert q["gold"], q["id"]
        assert q["type"] == "procedure" or q["answer"], q["id"]
        for document in q["gold"]:
            packages.setdefault(document.split("/", 1)[0], set()).add(q["split"])
    # a package's questions are all train or all validation: the held-out part is other documents
    assert all(len(splits) == 1 for splits in packages.values()), packages
    assert {"train", "validation"} == set().union(*packages.values())


@pytest.mark.slow  # fits the selector twice on the shipped runs: ~5 s
@pytest.mark.skipif(not DATA.exists(), reason="no collected training data shipped")
def test_validation_runs_of_another_question_file_are_reported_apart():
    runs = load_runs(DATA)
    other = [dict(r, source="other.jsonl") for r in runs if r["split"] == "validation"]
    without, alone = fit_answerer(runs)
    answerer, report = fit_answerer([*runs, *other])
    assert set(report.figures) == {"train (cv)", "validation", "validation (other.jsonl)"}
    # the same runs under another name: the same figures, and nothing of them was fitted
    assert report.figures["validation (other.jsonl)"] == report.figures["validation"]
    assert report.figures["validation"] == alone.figures["validation"]
    assert answerer.version == without.version
