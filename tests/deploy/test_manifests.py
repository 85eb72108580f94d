"""deploy/ is checked as a cluster or a builder would read it (no cluster, Docker daemon or kubeconform here):
every manifest parses, has the fields its kind requires, and the pieces agree with each other and with the
application (queues, health URL, timeouts, files the Dockerfile copies)."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.urls import Resolver404, resolve

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
QUEUES = {"housekeeping", "ingest", "embed", "realtime"}

pytestmark = pytest.mark.unit


def _k8s() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def _named(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _k8s() if d["kind"] == kind}


def _containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    return workload["spec"]["template"]["spec"]["containers"]


def _queues(command: list[str]) -> set[str]:
    return set(command[command.index("-Q") + 1].split(",")) if "-Q" in command else set()


def test_every_kubernetes_object_has_the_fields_its_kind_requires():
    required = {
        "Deployment": ("spec.selector.matchLabels", "spec.template.spec.containers"),
        "Job": ("spec.template.spec.containers", "spec.template.spec.restartPolicy"),
        "Service": ("spec.selector", "spec.ports"),
        "PodDisruptionBudget": ("spec.selector.matchLabels",),
        "PersistentVolumeClaim": ("spec.accessModes", "spec.resources.requests.storage"),
    }
    docs = _k8s()
    assert docs
    for doc in docs:
        assert doc.get("apiVersion") and doc.get("kind") in required, doc.get("kind")
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
        for dotted in required[doc["kind"]]:
            node: Any = doc
            for part in dotted.split("."):
                assert isinstance(node, dict) and part in node, f"{doc['metadata']['name']}: no {dotted}"
                node = node[part]
        if doc["kind"] in ("Deployment", "Job"):
            pod = doc["spec"]["template"]
            labels = pod["metadata"]["labels"]
            if doc["kind"] == "Deployment":
                assert doc["spec"]["selector"]["matchLabels"].items() <= labels.items()
            assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
            assert pod["spec"]["securityContext"]["runAsUser"] != 0
            for container in pod["spec"]["containers"]:
                assert container["image"] and container["command"]
                assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
                assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_the_topology_web_ingest_gpu_model_workers_one_beat_migrate_job_and_budgets():
    deployments = _named("Deployment")
    assert set(deployments) == {"athena-web", "athena-ingest", "athena-models", "athena-beat"}
    consumed = set()
    for name in ("athena-ingest", "athena-models"):
        (container,) = _containers(deployments[name])
        assert container["command"][:4] == ["celery", "-A", "athena", "worker"]
        consumed |= _queues(container["command"])
        assert container.get("livenessProbe"), name
    assert consumed == QUEUES
    (models,) = _containers(deployments["athena-models"])
    assert _queues(models["command"]) == {"embed", "realtime"}
    assert models["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert {e["name"]: e["value"] for e in models["env"]}["ATHENA_DEVICE"] == "cuda"

    beat = deployments["athena-beat"]
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"]["type"] == "Recreate"

    (job,) = _named("Job").values()
    (migrate,) = _containers(job)
    assert migrate["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")

    budgets = _named("PodDisruptionBudget")
    assert {"athena-web", "athena-models"} <= set(budgets)
    for budget in budgets.values():
        labels = budget["spec"]["selector"]["matchLabels"]
        assert any(
            labels.items() <= d["spec"]["template"]["metadata"]["labels"].items()
            for d in deployments.values()
        )
        assert ("minAvailable" in budget["spec"]) != ("maxUnavailable" in budget["spec"])

    (service,) = _named("Service").values()
    assert (
        service["spec"]["selector"].items()
        <= deployments["athena-web"]["spec"]["template"]["metadata"]["labels"].items()
    )


def test_web_probes_hit_real_urls_and_shutdown_outlasts_an_answer():
    web = _named("Deployment")["athena-web"]
    (container,) = _containers(web)
    path = container["readinessProbe"]["httpGet"]["path"]
    try:
        resolve(path.split("?")[0])
    except Resolver404:
        pytest.fail(f"readiness probe path {path} is not a URL of the application")
    assert container["livenessProbe"]
    assert (
        web["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        >= settings.ATHENA_ANSWER_TIMEOUT_SECONDS
    )


def test_gunicorn_timeout_follows_the_answer_timeout_everywhere():
    from athena import gunicorn_conf

    assert gunicorn_conf.timeout > settings.ATHENA_ANSWER_TIMEOUT_SECONDS
    assert gunicorn_conf.worker_class == "gthread"
    invocations = []
    for path in [*DEPLOY.rglob("*"), ROOT / "athena" / "stack.py"]:
        if path.is_file() and path.suffix in {".yaml", ".service", ".py", ""}:
            text = path.read_text()
            assert not re.search(r"gunicorn[^\n]*--timeout", text), path
            invocations += [
                (path, line) for line in text.splitlines() if "gunicorn" in line and "athena.wsgi" in line
            ]
    stack_text = (ROOT / "athena" / "stack.py").read_text()
    assert '"python:athena.gunicorn_conf"' in stack_text
    assert invocations
    for path, line in invocations:
        assert "python:athena.gunicorn_conf" in line, (path, line)


def test_compose_builds_the_dockerfile_migrates_first_and_checks_health():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    for name, service in services.items():
        if "build" in service:
            assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == (
                DEPLOY / "Dockerfile"
            ).resolve(), name
    assert {"db", "redis", "migrate", "web", "worker-ingest", "worker-models", "beat"} <= set(services)
    for name in ("db", "redis", "web", "worker-ingest", "worker-models"):
        assert services[name]["healthcheck"]["test"], name
    assert services["migrate"]["command"][-2:] == ["migrate", "--noinput"]
    for name in ("web", "worker-ingest", "worker-models", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    redis_command = " ".join(services["redis"]["command"])
    assert "--appendonly yes" in redis_command and "--appendfsync everysec" in redis_command
    assert "synchronous_commit=on" in services["db"]["command"]
    consumed = set().union(
        *(_queues(s["command"]) for s in services.values() if "worker" in s.get("command", []))
    )
    assert consumed == QUEUES


def test_compose_systemd_and_the_stack_run_an_answerer_that_takes_only_questions_beside_a_worker_that_embeds():
    """The topology of `make run` on one machine: a question asked while every process of the embedding worker
    runs a batch it cannot interrupt starts on the answerer at once (deploy/README.md, "Workers")."""
    from athena.stack import Stack

    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    units = {}
    for path in (DEPLOY / "systemd").glob("athena-*.service"):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.read_string(path.read_text())
        units[path.stem] = shlex.split(unit["Service"]["ExecStart"])
    stack = Stack(components=("worker", "answerer"))
    for where, answerer, worker in (
        ("compose", compose["answerer"]["command"], compose["worker-models"]["command"]),
        ("systemd", units["athena-answerer"], units["athena-worker"]),
        ("stack", stack.service("answerer").argv, stack.service("worker").argv),
    ):
        assert _queues(answerer) == {settings.ATHENA_REALTIME_QUEUE}, where
        assert answerer[answerer.index("-n") + 1].startswith("answerer@"), where
        assert {"realtime", "embed"} <= _queues(worker), where
        assert worker[worker.index("-Q") + 1].startswith("realtime,"), where
    assert compose["answerer"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert compose["answerer"]["healthcheck"]["test"]


def test_every_worker_takes_beat_housekeeping_right_after_the_questions_and_before_ingest_work():
    """Beat's short tasks (audit checkpoints and totals, the upload expiry) have a queue of their own, which
    every worker that parses files also takes (where they ran when they shared `ingest`), right after the
    questions it takes and before the embed and ingest backlog; the queues the manifests name are the queues
    the settings route tasks to."""
    from athena.stack import Stack

    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    assert routed | {settings.CELERY_TASK_DEFAULT_QUEUE} == QUEUES
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    workers = {
        f"compose {name}": s["command"] for name, s in compose.items() if "worker" in s.get("command", [])
    }
    for name, deployment in _named("Deployment").items():
        for container in _containers(deployment):
            if "worker" in container["command"]:
                workers[f"k8s {name}"] = container["command"]
    for path in (DEPLOY / "systemd").glob("athena-*.service"):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.read_string(path.read_text())
        command = shlex.split(unit["Service"]["ExecStart"])
        if "worker" in command:
            workers[path.stem] = command
    stack = Stack(components=("worker", "answerer"))
    workers |= {f"stack {name}": stack.service(name).argv for name in ("worker", "answerer")}
    assert len(workers) == 9, sorted(workers)  # compose 3, k8s 2, systemd 2, the stack 2
    for where, command in workers.items():
        queues = command[command.index("-Q") + 1].split(",")
        if "ingest" in queues:
            assert "housekeeping" in queues, where
        if "housekeeping" in queues:
            assert queues[: queues.index("housekeeping")] in ([], ["realtime"]), where


def test_dockerfile_is_multi_stage_non_root_pinned_and_copies_files_that_exist():
    text = (DEPLOY / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+\S+\s+AS\s+(\w+)", text, flags=re.M)
    assert len(stages) >= 2
    final = text[text.rindex("\nFROM ") :]
    users = re.findall(r"^USER\s+(\S+)", final, flags=re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert "torch==2.13.0" in text and "download.pytorch.org/whl/cpu" in text
    for line in re.findall(r"^COPY\s+(.+)$", text, flags=re.M):
        parts = [p for p in shlex.split(line) if not p.startswith("--")]
        if "--from=" in line:
            continue
        for source in parts[:-1]:
            assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
    cmd = re.findall(r"^CMD\s+(.+)$", final, flags=re.M)[-1]
    assert "python:athena.gunicorn_conf" in cmd
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and "var" in ignored


def test_systemd_units_parse_and_name_their_command():
    for path in (DEPLOY / "systemd").glob("*.service"):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.read_string(path.read_text())
        assert unit["Service"]["ExecStart"].startswith("/opt/athena/.venv/bin/"), path
        assert unit["Service"]["User"] == "athena"


def _seconds(value: str | int) -> int:
    text = str(value)
    return int(text[:-1]) if text.endswith("s") else int(text)


def test_the_web_servers_stop_outlasts_a_question_waiting_for_its_answer():
    """gunicorn gives a request that waits for its answer time to end on SIGTERM and SIGHUP (graceful_timeout),
    and every deployment waits for that before it sends SIGKILL: a question cut off by a deploy got no response
    and left no audit event."""
    from athena import gunicorn_conf
    from athena.stack import stop_seconds

    assert gunicorn_conf.graceful_timeout > settings.ATHENA_ANSWER_TIMEOUT_SECONDS
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read_string((DEPLOY / "systemd" / "athena-web.service").read_text())
    budgets = {
        "systemd": _seconds(unit["Service"]["TimeoutStopSec"]),
        "compose": _seconds(
            yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["web"]["stop_grace_period"]
        ),
        "k8s": _named("Deployment")["athena-web"]["spec"]["template"]["spec"][
            "terminationGracePeriodSeconds"
        ],
        "stack down": stop_seconds("web"),
    }
    for where, seconds in budgets.items():
        assert seconds > gunicorn_conf.graceful_timeout, (where, seconds)
    # Kubernetes: the pod pauses before SIGTERM, until the Service's proxies have stopped sending it connections
    # (a stopping gunicorn refuses them), and that pause counts within the same budget
    (web,) = _named("Deployment")["athena-web"]["spec"]["template"]["spec"]["containers"]
    pause = web["lifecycle"]["preStop"]["exec"]["command"]
    assert pause[0] == "sleep" and int(pause[1]) >= 5, pause
    assert budgets["k8s"] > int(pause[1]) + gunicorn_conf.graceful_timeout, budgets["k8s"]
    assert (
        unit["Service"]["KillMode"] == "mixed"
    )  # SIGTERM to gunicorn's master only, which stops its workers
