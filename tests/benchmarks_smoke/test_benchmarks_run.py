"""The benchmark scripts still run against today's schema: each is run as a user would run it, at a tiny size,
on a database of its own (created, migrated and dropped here), so a new column or a renamed function breaks
this test instead of silently breaking the next measurement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import celery_worker_argv

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "knowledge" / "fixtures"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _server() -> psycopg.Connection:
    from django.conf import settings

    db = settings.DATABASES["default"]
    return psycopg.connect(
        dbname="postgres",
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        autocommit=True,
    )


def _drop(conn: psycopg.Connection, name: str) -> None:
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        [name],
    )
    conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.fixture()
def bench_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    name = f"athena_benchsmoke_{os.getpid()}"
    with _server() as conn:
        _drop(conn, name)
        conn.execute(f'CREATE DATABASE "{name}"')
    devset = tmp_path / "devset"
    devset.mkdir()
    (devset / "questions.jsonl").write_text(
        "\n".join(
            json.dumps({"id": f"q{i}", "question": q})
            for i, q in enumerate(
                ("How do I fail over DNS?", "What is the resolver address?", "runbook restart steps")
            )
        )
        + "\n"
    )
    env = dict(os.environ)
    env.update(
        {
            "ATHENA_DB_NAME": name,
            "ATHENA_DEVSET": str(devset),
            "DJANGO_SETTINGS_MODULE": "athena.settings.test",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "DO_NOT_TRACK": "1",
        }
    )
    try:
        yield env
    finally:
        with _server() as conn:
            _drop(conn, name)


def _run(env: dict[str, str], *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{argv} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_retrieval_benchmark_runs_with_a_tiny_synthetic_corpus(bench_env: dict[str, str], tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("sop-dns-failover.md", "runbook-notes.txt", "resolver.html"):
        shutil.copy(FIXTURES / name, corpus / name)
    _run(bench_env, "manage.py", "migrate", "--verbosity", "0")
    _run(bench_env, "manage.py", "ingest", str(corpus), "--inline")

    # the answer profile over the same documents, before the synthetic chunks join them
    _run(
        bench_env,
        "manage.py",
        "shell",
        "-c",
        "from athena.services import user_create_or_update; user_create_or_update(username='bench', groups=[])",
    )
    profiled = tmp_path / "profile.json"
    result = _run(
        bench_env,
        "tests/benchmarks/answer_profile.py",
        *("--user", "bench", "--limit", "2", "--out", str(profiled)),
    )
    profile = json.loads(profiled.read_text())
    assert profile["questions"] == 2 and profile["answer_ms"]["median"] > 0, result.stdout
    assert "retrieve" in profile["steps"] and "dense" in profile["retrieval"], result.stdout
    assert profile["peak_rss_mib"] > 0

    saved = tmp_path / "run.json"
    result = _run(
        bench_env,
        "tests/benchmarks/retrieval.py",
        "--synthetic",
        "300",
        "--queries",
        "3",
        "--recall-queries",
        "2",
        "--ef-search",
        "40,400",
        "--save",
        str(saved),
    )
    report = json.loads(saved.read_text())
    assert report["build"]["added"] > 0
    assert report["build"]["total_chunks"] == 300
    assert report["db"]["chunks"] == 300
    assert report["latency"]["fused_total"]["p50"] > 0, result.stdout
    recall = report["hnsw_recall"]["by_ef"]
    assert set(recall) == {"40", "400"}, result.stdout
    assert all(0.0 < e["mean_recall"] <= 1.0 and e["hnsw_ms"]["p50"] > 0 for e in recall.values())
    assert "ef_search   400" in result.stdout, result.stdout

    _run(bench_env, "tests/benchmarks/retrieval.py", "--drop-synthetic")
    again = tmp_path / "again.json"
    _run(
        bench_env,
        "tests/benchmarks/retrieval.py",
        "--queries",
        "2",
        "--recall-queries",
        "0",
        "--save",
        str(again),
        "--compare",
        str(saved),
    )
    assert json.loads(again.read_text())["db"]["chunks"] < 300


def test_ingest_benchmark_runs_on_the_fixture_files(bench_env: dict[str, str], tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("sop-dns-failover.md", "runbook-notes.txt", "resolver.html"):
        shutil.copy(FIXTURES / name, corpus / name)
    # gold documents from the tiny corpus, so that --quality measures something (one question without gold)
    devset = tmp_path / "golden"
    devset.mkdir()
    (devset / "questions.jsonl").write_text(
        "\n".join(
            json.dumps({"id": f"g{i}", "question": q, "gold": gold})
            for i, (q, gold) in enumerate(
                (
                    ("How do I fail over DNS?", ["sop-dns-failover.md"]),
                    ("How do I check that chrony keeps the clock in sync?", ["runbook-notes.txt"]),
                    ("What is the default maxconn of a haproxy frontend?", []),
                )
            )
        )
        + "\n"
    )
    env = {**bench_env, "ATHENA_DEVSET": str(devset)}
    _run(env, "manage.py", "migrate", "--verbosity", "0")
    saved = tmp_path / "ingest.json"
    result = _run(
        env,
        "tests/benchmarks/ingest.py",
        *("--corpus", str(corpus), "--reset", "--sample", "2", "--quality", "--save", str(saved)),
    )
    report = json.loads(saved.read_text())
    ingest = report["ingest"]
    assert ingest["documents"] == 3 and ingest["failed"] == 0, result.stdout
    assert ingest["chunks"] > 0 and ingest["chunks_per_s"] > 0 and ingest["stage_seconds"]["embed"] > 0
    assert report["sizes"]["knowledge_chunk"]["total_mb"] > 0
    assert report["sizes"]["chunk_embedding_hnsw"]["relation_mb"] > 0
    embedding = report["embedding"]
    assert embedding["documents"] == 2 and embedding["naive"]["chunks_per_s"] > 0
    variants = {"fp32", "int8"} | ({"bf16"} if "bf16" in embedding else set())
    for variant in variants:
        assert embedding[variant]["chunks_per_s"] > 0, variant
        assert isinstance(embedding[variant]["batch_effect"], float), variant
    quality = report["quality"]
    assert set(quality) == variants
    assert quality["fp32"]["questions"] == 2 and quality["fp32"]["mrr@10"] > 0, result.stdout
    for variant in variants:
        assert 0 <= quality[variant]["mrr@10"] <= 1 and quality[variant]["relative_mrr@10"] is not None


def test_hop_benchmark_runs_through_a_worker_of_its_own(bench_env: dict[str, str], tmp_path: Path):
    # a private queue: no other worker sharing the Redis (the session's test worker, a stack) takes its messages
    queue = f"hop-smoke-{os.getpid()}"
    env = {**bench_env, "ATHENA_WORKER_WARM_UP": "false", "PYTHONUNBUFFERED": "1"}
    _run(env, "manage.py", "migrate", "--verbosity", "0")
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        celery_worker_argv(queue, queue),
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        saved = tmp_path / "hop.json"
        # the warm-up request waits for the worker to start and load its models
        result = _run(
            env,
            "tests/benchmarks/hop.py",
            *("--queue", queue, "--requests", "2", "--warm", "1", "--timeout", "240", "--no-api"),
            *("--save", str(saved)),
        )
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()
        import redis
        from django.conf import settings

        # kombu keeps a queue's binding after its last message; a queue per run must not leave one behind
        redis.Redis.from_url(settings.REDIS_URL).delete(
            f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}", queue
        )
    report = json.loads(saved.read_text())
    assert report["floor"]["wall_ms"]["p50"] > 0, result.stdout
    hop = report["hop"]
    assert hop["worker_ms"]["p50"] >= hop["pipeline_ms"]["p50"] > 0, result.stdout
    assert hop["wall_ms"]["p50"] > hop["outside_worker_ms"]["p50"] > 0


def test_extra_corpus_builder_answers_help_instead_of_building_into_a_folder_named_after_it(tmp_path: Path):
    script = ROOT / "tests" / "benchmarks" / "extra_corpus.py"
    shown = subprocess.run(
        [sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage:") and "outdir" in shown.stdout
    missing = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2 and "outdir" in missing.stderr
    assert list(tmp_path.iterdir()) == []


def test_answer_text_counts_a_list_run_together_on_a_question_file_of_its_own(tmp_path: Path):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(json.dumps({"id": f"q{i}", "split": "train", "question": "?"}) + "\n" for i in range(3))
    )
    run_on = " ".join(
        f"-{letter} Does thing {letter} for you" for letter in "abcdefghij"
    )  # 50 words, no citation
    listed = "\n\n    -a\n    -b [1] Short. [1]"
    answers = [
        {"id": "q0", "answer": f"{run_on} [1]"},
        {"id": "q1", "answer": listed},
        {"id": "q2", "abstained": True},
    ]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(answer) + "\n" for answer in answers))
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "answer_text.py"), str(predictions)]
        + ["--questions", str(questions), "--save", str(tmp_path / "figures.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert figures["answered"] == 2 and figures["long_runs"] == 1 and figures["code_blocks"] == 1, figures
    # predictions of another split or question file: an error, not a table of zeros
    other = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "answer_text.py"), str(predictions)]
        + ["--questions", str(questions), "--split", "validation"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 1 and "no run answers a question of the validation split" in other.stderr


def test_dev_text_scan_names_our_lines_that_a_dev_document_holds(tmp_path: Path):
    script = ROOT / "tests" / "benchmarks" / "dev_text_scan.py"
    readme = (ROOT / "README.md").read_text().splitlines()
    number, line = next((n, text) for n, text in enumerate(readme, 1) if len(text.split()) > 15)
    # a question id and a page's text that no file of ours holds, this one included (written here backwards)
    unseen_id = "709qz"[::-1]
    unseen = "gnol noonretfa lla sevorg sutpylacue fo edahs eht ni pan sakkouQ"[::-1]

    def scan(pages: dict[str, str], question_id: str) -> subprocess.CompletedProcess[str]:
        corpus = tmp_path / f"corpus{len(list(tmp_path.iterdir()))}"
        (corpus / "pkg").mkdir(parents=True)
        (corpus / "corpus_manifest.tsv").write_text("pkg\n")
        for name, text in pages.items():
            (corpus / "pkg" / name).write_text(text)
        questions = tmp_path / f"{corpus.name}.jsonl"
        questions.write_text(
            json.dumps({"id": question_id, "question": "Which naps?", "answer": "none"}) + "\n"
        )
        argv = [sys.executable, str(script), "--corpus", str(corpus), "--questions", str(questions)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120)

    # a dev page that holds one of the README's lines (as HTML, entities and all), a dev document whose file
    # name our tests use, and a question whose id our code holds
    copied = line.replace("&", "&amp;").replace("<", "&lt;")
    page = f"<html><body><p>Intro.</p><p>{copied}</p></body></html>"
    found = scan({"page.html": page, "runbook-notes.txt": "x"}, "ANALYZER_VERSION")
    assert found.returncode == 1, found.stderr
    assert f"README.md:{number}: words: " in found.stdout
    assert "document name: runbook-notes.txt" in found.stdout
    assert "knowledge/text/analyzer.py:" in found.stdout and "question id: ANALYZER_VERSION" in found.stdout
    clean = scan({"page.txt": f"{unseen}.\n"}, unseen_id)
    assert clean.returncode == 0 and clean.stdout == "", clean.stdout
    assert "0 hit(s)" in clean.stderr
    # a questions file that cannot be read is a usage error, not a hit
    missing = subprocess.run(
        [
            sys.executable,
            str(script),
            "--corpus",
            str(tmp_path / "corpus0"),
            "--questions",
            str(tmp_path / "no"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 2 and "cannot read the questions" in missing.stderr


def test_parse_benchmark_counts_every_file_and_names_one_that_fails(tmp_path: Path):
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES, corpus, ignore=shutil.ignore_patterns("*.py"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "athena.settings.test", "HF_HUB_OFFLINE": "1"}
    argv = [
        sys.executable,
        "tests/benchmarks/parse.py",
        "--corpus",
        str(corpus),
        "--save",
        str(tmp_path / "a.json"),
    ]
    failing = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "FAILED: corrupt.pdf" in failing.stdout
    assert json.loads((tmp_path / "a.json").read_text())["failed"] == 1

    (corpus / "corrupt.pdf").unlink()
    result = _run(env, *argv[1:-1], str(tmp_path / "b.json"), "--compare", str(tmp_path / "a.json"))
    saved = json.loads((tmp_path / "b.json").read_text())
    assert saved["files"] == len(list(corpus.iterdir())) and saved["failed"] == saved["empty"] == 0
    assert "files parsed in" in result.stdout and "== compare with" in result.stdout


def test_audit_search_benchmark_refuses_a_database_not_named_for_it_and_measures_one(
    bench_env: dict[str, str], tmp_path: Path
):
    from django.conf import settings

    argv = ["tests/benchmarks/audit_search.py", "--create", "--fill", "300", "--runs", "1", "--writes", "5"]
    # its events can never be taken out of an append-only log: a database not named bench_* is refused, untouched
    refused = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, env=bench_env, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 1 and "refused" in refused.stderr, refused.stderr
    db = settings.DATABASES["default"]
    with psycopg.connect(
        dbname=bench_env["ATHENA_DB_NAME"],
        user=db["USER"] or None,
        password=db["PASSWORD"] or None,
        host=db["HOST"] or None,
        port=db["PORT"] or None,
    ) as bench:
        assert bench.execute("SELECT to_regclass('audit_auditevent')").fetchone() == (None,)
    before, after = tmp_path / "none.json", tmp_path / "trgm.json"
    _run(bench_env, *argv, "--any-database", "--index", "none", "--save", str(before))
    result = _run(
        bench_env,
        *argv[:2],
        *("--fill", "0", "--runs", "1", "--writes", "0", "--index", "trgm", "--explain", "--any-database"),
        *("--save", str(after), "--compare", str(before)),
    )
    none, trgm = json.loads(before.read_text()), json.loads(after.read_text())
    assert none["fill"]["events"] == 300 and none["index"]["payload_indexes"] == []
    assert none["audit_record"]["p50_ms"] > 0 and none["sizes"]["heap_bytes"] > 0
    assert trgm["index"]["payload_indexes"] == ["audit_payload_trgm"]
    assert "count SQL: SELECT COUNT(*)" in result.stdout and "== compare with" in result.stdout
    # 300 filled, then 5 questions written by audit_record between the two runs (the common word may be in them)
    assert (none["search"]["no_filter"]["matches"], trgm["search"]["no_filter"]["matches"]) == (300, 305)
    for case in ("rare_phrase", "common_word", "absent_word"):
        assert 0 <= trgm["search"][case]["matches"] - none["search"][case]["matches"] <= 5
        assert trgm["search"][case]["one_pass_ms"] > 0
    assert none["search"]["common_word"]["matches"] > 0 and trgm["search"]["absent_word"]["matches"] == 0
