"""`python manage.py evaluate QUESTIONS.jsonl --user NAME --out PREDICTIONS.jsonl [--allowed-user NAME]
[--config JSON] [--compare] [--limit N]` — answer a dev-set style file and print metrics."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import override_settings

from athena.cli import output_file, positive_int, read_json_lines, user_named
from athena.errors import ApplicationError
from retrieval.metrics import contains, mrr_at_k, ndcg_at_k, normalise, recall_at_k  # noqa: F401 - re-exported
from retrieval.types import SearchConfig

# --compare's rows: each sets what its name says over the --config base (a base of {"fusion": "rrf"} keeps
# "hybrid combsum" CombSUM and runs the two rerank rows with RRF)
ABLATIONS: list[tuple[str, dict[str, Any]]] = [
    ("dense only", {"sources": ("dense",), "rerank": False, "mmr": False}),
    ("bm25 only", {"sources": ("bm25",), "rerank": False, "mmr": False}),
    ("graph only", {"sources": ("graph",), "rerank": False, "mmr": False}),
    ("hybrid combsum", {"fusion": "combsum", "rerank": False, "mmr": False}),
    ("hybrid rrf", {"fusion": "rrf", "rerank": False, "mmr": False}),
    ("+ rerank", {"rerank": True, "mmr": False}),
    ("+ rerank + mmr", {"rerank": True, "mmr": True}),
]


def _config(raw: str | None) -> SearchConfig:
    if not raw:
        return SearchConfig()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CommandError(f"--config is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CommandError('--config must be a JSON object, e.g. {"rerank": false}')
    names = {f.name for f in fields(SearchConfig)}
    unknown = set(data) - names
    if unknown:
        raise CommandError(f"unknown config key(s) {sorted(unknown)}; valid: {sorted(names)}")
    if "weights" in data and isinstance(data["weights"], dict):
        data["weights"] = tuple(data["weights"].items())
    try:
        if "sources" in data:
            data["sources"] = tuple(data["sources"])
        config = replace(SearchConfig(), **data)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"--config: {exc}") from None
    return config


class Command(BaseCommand):
    help = "Answer every question of a JSONL file and write predictions (DESIGN.md §8); prints metrics."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("questions", help="JSON lines in the dev set's format (id, question, ...)")
        parser.add_argument("--user", required=True, help="ask as this user")
        parser.add_argument(
            "--allowed-user",
            default=None,
            help="user in the allowed group: acl questions are asked by both users",
        )
        parser.add_argument(
            "--out",
            required=False,
            default=None,
            help="predictions file to write (required unless --compare)",
        )
        parser.add_argument(
            "--config", default=None, help="JSON overrides of SearchConfig, for the answers and for --compare"
        )
        parser.add_argument("--compare", action="store_true", help="retrieval ablation table only")
        parser.add_argument("--limit", type=positive_int, default=None, help="the first N questions only")

    def handle(self, *args: Any, **options: Any) -> None:
        questions = read_json_lines(Path(options["questions"]), required=("id", "question"))
        if options["compare"] and options["out"]:
            raise CommandError("--compare prints a table and writes no predictions: leave out --out")
        # checked before answering anything: a typo in --out must not cost a whole run
        out = output_file(Path(options["out"])) if options["out"] else None
        if options["limit"]:
            questions = questions[: options["limit"]]
        users = {}
        for key in ("user", "allowed_user"):
            if options[key]:
                users[key] = user_named(options[key])
        config = _config(options["config"])
        if options["compare"]:
            self._compare(questions, users, config)
            return
        if out is None:
            raise CommandError("--out is required (except with --compare)")
        acl = sum(1 for q in questions if q.get("acl"))
        if acl and "allowed_user" not in users:
            self.stderr.write(
                f"note: {acl} acl question(s) are asked by --user only; their answer figures then score that "
                "user's run (give --allowed-user, a member of their group, to ask them as both)"
            )
        # None: the defaults, as the realtime worker runs them
        self._answer_all(questions, users, config if options["config"] else None, out)

    # -- retrieval ablation -------------------------------------------------------------------------------
    def _compare(self, questions: list[dict], users: dict[str, User], base: SearchConfig) -> None:
        from athena.principals import Principal
        from retrieval.search import search

        scored = [q for q in questions if q.get("gold")]
        self.stdout.write(f"{'configuration':<18} {'MRR@10':>7} {'R@10':>7} {'nDCG@10':>8} {'p50 ms':>7}")
        for name, overrides in ABLATIONS:
            config = replace(base, **overrides)
            mrr, rec, ndcg, times = [], [], [], []
            for q in scored:
                user = (
                    users.get("allowed_user") if q.get("acl") and "allowed_user" in users else users["user"]
                )
                t0 = time.perf_counter()
                result = search(q["question"], Principal.from_user(user), None, config)
                times.append((time.perf_counter() - t0) * 1000)
                docs = result.documents()
                mrr.append(mrr_at_k(docs, q["gold"], 10))
                rec.append(recall_at_k(docs, q["gold"], 10))
                ndcg.append(ndcg_at_k(docs, q["gold"], 10))
            self.stdout.write(
                f"{name:<18} {statistics.mean(mrr):>7.3f} {statistics.mean(rec):>7.3f} "
                f"{statistics.mean(ndcg):>8.3f} {statistics.median(times):>7.0f}"
            )

    # -- full answering -------------------------------------------------------------------------------------
    def _answer_all(
        self, questions: list[dict], users: dict[str, User], config: SearchConfig | None, out: Path
    ) -> None:
        from agents.services import ask

        lines = []
        totals: list[float] = []
        with override_settings(ATHENA_REALTIME_VIA_CELERY=False):
            for q in questions:
                askers = [users["user"]]
                if q.get("acl") and "allowed_user" in users:
                    askers.append(users["allowed_user"])
                for user in askers:
                    started = time.perf_counter()
                    try:
                        body = ask(user=user, question=q["question"], config=config)
                        prediction = {
                            "id": q["id"],
                            "user_groups": sorted(user.groups.values_list("name", flat=True)),
                            "answer": body["answer"],
                            "abstained": body["abstained"],
                            "retrieved": body["retrieved"],
                            "cited": list(dict.fromkeys(c["document"] for c in body["citations"])),
                            "citations": body["citations"],
                            "passages": body["passages"],
                            "attribution_score": body["attribution_score"],
                            "template": body["template"],
                            "timings_ms": body["timings_ms"],
                            "trace": body["trace"],
                        }
                    except ApplicationError as exc:
                        prediction = {
                            "id": q["id"],
                            "user_groups": sorted(user.groups.values_list("name", flat=True)),
                            "answer": exc.message,
                            "abstained": True,
                            "retrieved": [],
                            "cited": [],
                            "citations": [],
                            "passages": [],
                            "error": exc.code,
                            "timings_ms": {"total": (time.perf_counter() - started) * 1000},
                        }
                    totals.append(prediction["timings_ms"]["total"])
                    lines.append(prediction)
                    self.stderr.write(
                        f"{q['id']} {'ABSTAIN' if prediction['abstained'] else 'answer '} "
                        f"{prediction['timings_ms']['total']:.0f}ms"
                    )
        out.write_text("".join(json.dumps(line, default=str) + "\n" for line in lines))
        self._metrics(questions, lines, totals)

    def _metrics(self, questions: list[dict], lines: list[dict], totals: list[float]) -> None:
        # an ACL question is asked by the user outside its group first, then by the allowed user: its answer and
        # retrieval are scored on the allowed user's run, as the dev-set scorer does (the first run is scored
        # for leaks by that scorer)
        scored: dict[str, dict] = {}
        for line in lines:
            scored[line["id"]] = line
        by_id = {q["id"]: q for q in questions}
        with_gold = [q for q in questions if q.get("gold")]
        if with_gold:
            mrr = statistics.mean(mrr_at_k(scored[q["id"]]["retrieved"], q["gold"], 10) for q in with_gold)
            rec = statistics.mean(recall_at_k(scored[q["id"]]["retrieved"], q["gold"], 10) for q in with_gold)
            self.stdout.write(
                f"retrieval: MRR@10 {mrr:.3f}  Recall@10 {rec:.3f}  ({len(with_gold)} questions)"
            )
        answerable = [q for q in questions if q.get("answer")]
        if answerable:
            em = statistics.mean(
                1.0
                if not scored[q["id"]]["abstained"]
                and any(
                    contains(scored[q["id"]]["answer"], g)
                    for g in [q["answer"], *q.get("answer_aliases", [])]
                )
                else 0.0
                for q in answerable
            )
            self.stdout.write(f"answer containment EM: {em:.3f} ({len(answerable)} questions)")
        unanswerable = [q for q in questions if q.get("gold") == [] and q.get("type") == "unanswerable"]
        if unanswerable:
            abst = statistics.mean(1.0 if scored[q["id"]]["abstained"] else 0.0 for q in unanswerable)
            self.stdout.write(f"abstention on unanswerable: {abst:.3f}")
        answerable_all = [q for q in questions if q.get("gold")]
        if answerable_all:
            false_abst = statistics.mean(1.0 if scored[q["id"]]["abstained"] else 0.0 for q in answerable_all)
            self.stdout.write(f"false abstention on answerable: {false_abst:.3f}")
        attributed = [
            line["attribution_score"]
            for line in lines
            if not line["abstained"] and "attribution_score" in line
        ]
        if attributed:
            self.stdout.write(f"mean attribution score (answered): {statistics.mean(attributed):.3f}")
        if totals:
            ordered = sorted(totals)
            p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
            self.stdout.write(f"latency: p50 {statistics.median(ordered):.0f} ms, p95 {p95:.0f} ms")
        del by_id
