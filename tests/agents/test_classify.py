"""Tests for agents.classify: rules, the shipped model, decomposition and clarification."""

from __future__ import annotations

import json

import pytest

from agents import classify as classify_module
from agents.classify import (
    EXAMPLES_PATH,
    HOPS,
    MODEL_PATH,
    TEMPLATES,
    Classification,
    clarifying_question,
    classify,
    decompose,
    load_examples,
    train_and_save,
)

pytestmark = pytest.mark.unit

# Questions written after the training set and never added to it: a check that the rules and the
# model generalise beyond the phrasing they were built from.
FRESH = [
    ("How do I enable LLDP on an Arista switch?", "procedure_sop", "single_hop"),
    ("steps to rekey the ipsec tunnel to the payroll provider", "procedure_sop", "single_hop"),
    ("how can we add a second DNS forwarder on the domain controllers", "procedure_sop", "single_hop"),
    ("how to purge old WAL files safely", "procedure_sop", "single_hop"),
    ("how do i set a banner motd on nexus", "procedure_sop", "single_hop"),
    ("enable syslog forwarding on the vmware hosts", "procedure_sop", "single_hop"),
    ("how do I swap the PSU in the core switch and then verify redundancy", "procedure_sop", "multi_hop"),
    ("what is a bgp confederation", "concept_explanation", "single_hop"),
    ("explain what a radius accounting packet contains", "concept_explanation", "single_hop"),
    ("what is conntrack", "concept_explanation", "single_hop"),
    ("how does a dhcp failover pair work", "concept_explanation", "single_hop"),
    ("what does the noatime mount option mean", "concept_explanation", "single_hop"),
    ("explain tcp window scaling", "concept_explanation", "single_hop"),
    ("what's an ipv6 link-local address", "concept_explanation", "single_hop"),
    ("chrony versus systemd-timesyncd for the containers", "comparison_decision", "multi_hop"),
    (
        "what is the difference between a route and a route policy on junos",
        "comparison_decision",
        "multi_hop",
    ),
    ("should we use unbound or dnsmasq on the edge boxes?", "comparison_decision", "multi_hop"),
    (
        "postgres streaming replication vs logical decoding for the reporting db",
        "comparison_decision",
        "multi_hop",
    ),
    ("compare the palo alto and fortigate ssl inspection performance", "comparison_decision", "multi_hop"),
    ("is ecmp better than lacp for the uplinks", "comparison_decision", "multi_hop"),
    ("which tls cipher suite is recommended for the public api", "comparison_decision", "single_hop"),
    ("what is the default syslog port", "parameter_lookup", "single_hop"),
    ("default idle timeout on the cisco asa for tcp", "parameter_lookup", "single_hop"),
    ("what's the max number of bgp paths for multipath on ios-xr", "parameter_lookup", "single_hop"),
    ("which port does ntp use", "parameter_lookup", "single_hop"),
    ("what is the value of vm.swappiness on the db servers", "parameter_lookup", "single_hop"),
    ("where is the haproxy config stored", "parameter_lookup", "single_hop"),
    ("what is the lease duration for the corp wifi dhcp scope", "parameter_lookup", "single_hop"),
    ("what is the snmp engine id format", "parameter_lookup", "single_hop"),
    ("what's the retention for audit logs", "parameter_lookup", "single_hop"),
    ("which command shows the arp table on a fortigate", "parameter_lookup", "single_hop"),
    ("bgp session to the isp keeps resetting", "troubleshooting", "single_hop"),
    ("why is chrony showing a huge offset", "troubleshooting", "single_hop"),
    ("rsyslog queue full, messages discarded", "troubleshooting", "single_hop"),
    ("getting 'no route to host' from the jump server", "troubleshooting", "single_hop"),
    ("the ospf adjacency won't form over the new link", "troubleshooting", "single_hop"),
    ("users can't authenticate to the vpn since this morning", "troubleshooting", "single_hop"),
    ("pg_dump fails with permission denied for table", "troubleshooting", "single_hop"),
    ("%SYS-2-MALLOCFAIL on the edge router", "troubleshooting", "single_hop"),
    ("why are dns queries to the internal resolver timing out", "troubleshooting", "single_hop"),
    ("the nfs server is slow and the backups are failing, are they related", "troubleshooting", "multi_hop"),
    ("fix it", "troubleshooting", "ambiguous"),
    ("what's the port?", "parameter_lookup", "ambiguous"),
    ("how do i set that up", "procedure_sop", "ambiguous"),
    ("which is better?", "comparison_decision", "ambiguous"),
    ("it's not working again", "troubleshooting", "ambiguous"),
    ("what does it do", "concept_explanation", "ambiguous"),
    (
        "what is the ntp server the firewall uses and which port does it talk to",
        "parameter_lookup",
        "multi_hop",
    ),
    (
        "how do I configure bgp on the new edge router and then add the prefix filter",
        "procedure_sop",
        "multi_hop",
    ),
    ("what's the mtu of the gre tunnel", "parameter_lookup", "single_hop"),
]


def test_examples_file_is_large_varied_and_valid() -> None:
    rows = load_examples()
    assert len(rows) >= 400
    assert {r["template"] for r in rows} == set(TEMPLATES)
    assert {r["hop"] for r in rows} == set(HOPS)
    assert len({r["question"].lower() for r in rows}) == len(rows), "duplicate questions"
    per_template = {t: sum(r["template"] == t for r in rows) for t in TEMPLATES}
    assert min(per_template.values()) >= 60, per_template
    assert sum(r["hop"] == "ambiguous" for r in rows) >= 40
    assert sum(r["hop"] == "multi_hop" for r in rows) >= 80


def test_model_file_is_shipped_and_small() -> None:
    assert MODEL_PATH.exists()
    assert MODEL_PATH.stat().st_size < 2 * 1024 * 1024


@pytest.mark.parametrize(
    ("question", "template"),
    [
        ("What is the difference between OSPF and EIGRP?", "comparison_decision"),
        ("rsyslog vs syslog-ng", "comparison_decision"),
        ("which should I pick for the DMZ, chrony or ntpd?", "comparison_decision"),
        ("How do I configure NTP authentication on IOS XE?", "procedure_sop"),
        ("steps to replace a failed disk in the raid array", "procedure_sop"),
        ("what is the default BGP hold timer", "parameter_lookup"),
        ("what port does syslog over TLS use", "parameter_lookup"),
        ("max_connections value on the prod db?", "parameter_lookup"),
        ("why is the ipsec tunnel flapping", "troubleshooting"),
        ("BGP neighbor down: hold timer expired", "troubleshooting"),
        ("%LINK-3-UPDOWN on Gi1/0/3", "troubleshooting"),
        ("what is a route reflector", "concept_explanation"),
        ("explain dhcp snooping", "concept_explanation"),
    ],
)
def test_rule_driven_templates(question: str, template: str) -> None:
    result = classify(question)
    assert isinstance(result, Classification)
    assert result.template == template, result
    assert 0.0 < result.confidence <= 1.0
    assert result.rules, "a rule should have fired"


@pytest.mark.parametrize(
    ("question", "hop"),
    [
        ("it's broken, fix it", "ambiguous"),
        ("what's the timeout?", "ambiguous"),
        ("how do I configure it", "ambiguous"),
        ("How do I configure OSPF area 0 on a Cisco router?", "single_hop"),
        ("What is the difference between OSPF and EIGRP?", "multi_hop"),
        ("How do I add the vlan and then trunk it to the access switches?", "multi_hop"),
        ("which firewall rule blocks the port that rsyslog uses?", "multi_hop"),
        (
            "The backup router runs keepalived with a tracking script. What happens to its priority when the "
            "script fails?",
            "multi_hop",
        ),
    ],
)
def test_hop_types(question: str, hop: str) -> None:
    assert classify(question).hop == hop


def test_fresh_questions_accuracy() -> None:
    predictions = [classify(q) for q, _, _ in FRESH]
    template_acc = sum(p.template == t for p, (_, t, _) in zip(predictions, FRESH, strict=True)) / len(FRESH)
    hop_acc = sum(p.hop == h for p, (_, _, h) in zip(predictions, FRESH, strict=True)) / len(FRESH)
    assert template_acc >= 0.85, template_acc
    assert hop_acc >= 0.8, hop_acc


def test_classify_is_deterministic_and_handles_empty_input() -> None:
    assert classify("why is ntp not syncing") == classify("why is ntp not syncing")
    empty = classify("")
    assert empty.template in TEMPLATES and empty.hop == "ambiguous"


def test_rules_alone_work_without_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    result = classify_module.classify_with(None, "What is the difference between IKEv1 and IKEv2?")
    assert result.template == "comparison_decision" and result.hop == "multi_hop"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "What is the difference between OSPF and EIGRP for the campus core?",
            ["OSPF for the campus core", "EIGRP for the campus core"],
        ),
        ("ospf vs isis for the core", ["ospf for the core", "isis for the core"]),
        ("should I use chrony or ntpd on rhel 8?", ["chrony on rhel 8", "ntpd on rhel 8"]),
        ("kafka or rabbitmq for the event bus?", ["kafka for the event bus", "rabbitmq for the event bus"]),
        ("which is better for our vpn, ipsec or wireguard?", ["ipsec for our vpn", "wireguard for our vpn"]),
        (
            "install the monitoring agent, and then register the host in the cmdb",
            ["install the monitoring agent", "register the host in the cmdb"],
        ),
    ],
)
def test_decompose_comparisons_and_sequences(question: str, expected: list[str]) -> None:
    assert decompose(question, classify(question)) == expected


def test_decompose_carries_context_into_pronoun_parts() -> None:
    question = "what port does ntp use and which firewall zone allows it"
    parts = decompose(question, classify(question))
    assert parts[0] == "what port does ntp use"
    assert parts[1].startswith("which firewall zone allows it") and "ntp" in parts[1]


def test_decompose_returns_two_or_three_parts_for_multi_hop() -> None:
    question = "provision a vm, join it to the domain, then install the av agent - how?"
    parts = decompose(question, classify(question))
    assert 2 <= len(parts) <= 3
    assert parts[0] == "provision a vm" and parts[-1] == "install the av agent"


def test_decompose_single_hop_is_identity() -> None:
    question = "How do I configure OSPF area 0 on a Cisco router?"
    assert decompose(question, classify(question)) == [question]
    # Without a classification the function classifies by itself.
    assert decompose(question) == [question]


def test_clarifying_question_mentions_the_missing_subject() -> None:
    text = clarifying_question("it's broken, fix it")
    assert '"it"' in text and "error message" in text
    assert "setting" in clarifying_question("what's the timeout?")
    assert "set up or change" in clarifying_question("how do I configure it")


@pytest.mark.slow
def test_train_and_save_reports_held_back_accuracy(tmp_path) -> None:
    target = tmp_path / "model.joblib"
    metrics = train_and_save(target)
    assert metrics["n_test"] == pytest.approx(0.2 * metrics["n_examples"], abs=1)
    assert metrics["template_accuracy"] >= 0.85
    assert metrics["template_accuracy_model"] >= 0.8
    assert metrics["hop_accuracy"] >= 0.8
    assert target.exists() and metrics["size_bytes"] < 2 * 1024 * 1024
    # The shipped examples file is valid JSON lines with exactly the three keys.
    with open(EXAMPLES_PATH, encoding="utf-8") as handle:
        first = json.loads(handle.readline())
    assert set(first) == {"question", "template", "hop"}


def test_which_x_should_is_a_decision_only_when_someone_chooses():
    from agents.classify import template_rule_scores

    for decision in (
        "which one should we pick for the dmz hosts",
        "which of these should I use for the backups",
        "which filesystem should I install on the new db server",
    ):
        assert template_rule_scores(decision)[0].get("comparison_decision", 0) >= 0.85, decision
    lookup, _ = template_rule_scores("which directory should the server config files live in")
    assert "comparison_decision" not in lookup


def test_decompose_a_known_fact_and_the_question_built_on_it() -> None:
    """ "<what is known>. <question about it>?": the known fact is looked up too, since the answer hangs on it."""
    question = (
        "Nightly dumps are written to some spool directory by default. Which cleanup job prunes the old "
        "files in that directory?"
    )
    parts = decompose(question, classify(question))
    assert parts[0] == "Nightly dumps are written to some spool directory by default"
    assert parts[1].startswith("Which cleanup job prunes the old files in that directory")
