"""knowledge.recognisers: precise, deterministic entity and reference recognition (pure)."""

from __future__ import annotations

import pytest

from knowledge.recognisers import ENTITY_KINDS, EntityHit, explicit_references, recognise

pytestmark = pytest.mark.unit


def keys(text: str, **kwargs) -> set[tuple[str, str]]:
    return {(h.kind, h.name) for h in recognise(text, **kwargs)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Cisco and Juniper routers", {("vendor", "cisco"), ("vendor", "juniper")}),
        ("a Palo Alto firewall and an F5 load balancer", {("vendor", "palo alto networks"), ("vendor", "f5")}),
        ("PostgreSQL, Redis and nginx on Debian", {("product", "postgresql"), ("product", "redis"),
                                                   ("product", "nginx"), ("product", "debian")}),
        ("keepalived, chrony, rsyslog, nftables, iproute2, systemd and OpenVPN",
         {("product", p) for p in ("keepalived", "chrony", "rsyslog", "nftables", "iproute2", "systemd",
                                   "openvpn")}),
        ("BGP, OSPF, IS-IS and VRRP over IPsec", {("protocol", p) for p in ("bgp", "ospf", "is-is", "vrrp",
                                                                           "ipsec")}),
        ("NTP, DNS, DHCP, TLS, SSH, SNMP, syslog, TCP, UDP, ICMP, LACP, STP, MPLS",
         {("protocol", p) for p in ("ntp", "dns", "dhcp", "tls", "ssh", "snmp", "syslog", "tcp", "udp", "icmp",
                                    "lacp", "stp", "mpls")}),
        ("peering per RFC 4271 and rfc5424", {("rfc", "rfc 4271"), ("rfc", "rfc 5424")}),
        ("edit /etc/chrony/chrony.conf and read /var/log/syslog.", {("file_path", "/etc/chrony/chrony.conf"),
                                                                   ("file_path", "/var/log/syslog")}),
        ("%LINK-3-UPDOWN and %BGP-5-ADJCHANGE: neighbor down", {("error_code", "%link-3-updown"),
                                                               ("error_code", "%bgp-5-adjchange")}),
        ("connect() failed: ECONNREFUSED, then ETIMEDOUT", {("error_code", "econnrefused"),
                                                            ("error_code", "etimedout")}),
        ("the proxy returned HTTP 503 and later 404 Not Found", {("protocol", "http"), ("error_code", "http 503"),
                                                                 ("error_code", "http 404")}),
        ("chronyc tracking shows error 742 Lost the relay link", {("command", "chronyc tracking"),
                                                                  ("error_code", "error 742")}),
        ("restart chronyd, sshd and nftables.service", {("service", "chronyd"), ("service", "sshd"),
                                                        ("service", "nftables.service")}),
    ],
)  # fmt: skip
def test_recognises_each_kind(text, expected):
    assert expected <= keys(text)


def test_parameters_identifiers_options_and_directives():
    text = (
        "Raise `max_wal_size` and set net.ipv4.ip_forward=1; use --auth-nocache with KeepAlive.Time.\n"
        "stepslew 1.0 3\n"
        "spoolfile /var/lib/tidesync/spool\n"
        "PermitRootLogin no\n"
        "virtual_router_id 51\n"
        "The legacy $ActionForwardDefaultTemplate directive and StreamDriverMode parameter.\n"
    )
    found = {name for kind, name in keys(text) if kind == "parameter"}
    assert {
        "max_wal_size",
        "net.ipv4.ip_forward",
        "--auth-nocache",
        "keepalive.time",
        "stepslew",
        "spoolfile",
        "permitrootlogin",
        "virtual_router_id",
        "$actionforwarddefaulttemplate",
        "streamdrivermode",
    } <= found


def test_commands_need_a_known_verb_and_sub_command():
    text = (
        "$ ip route add 10.0.0.0/8 via 192.0.2.1\n"
        "ip route is handy for editing routes.\n"
        "systemctl restart keepalived\n"
        "sudo nft list ruleset\n"
        "show ip bgp summary\n"
        "chronyc sources -v\n"
        "user@host:~$ tcpdump -ni eth0\n"
        "service openvpn restart\n"
    )
    commands = {name for kind, name in keys(text) if kind == "command"}
    assert {
        "ip route add",
        "ip route",
        "systemctl restart keepalived",
        "nft list ruleset",
        "show ip bgp",
        "chronyc sources",
        "tcpdump",
        "service openvpn restart",
    } <= commands


@pytest.mark.parametrize(
    "text",
    [
        "The show must go on; please set the table and ip the ball.",
        "Use the service desk. The named file is a type of template for the target port.",
        "Start the server and wait. Priority is high. Values in a table: type default mandatory.",
        "Dig a hole, ping me later, bind the book, and see the version 2 page.",
        "The mode and state of the interface are shown in the output.",
        "e.g. i.e. see pool.ntp.org and www.example.com or chrony.conf and grub.cfg.",
        "a nat, rip it up, a pim, gre and ike.",
    ],
)
def test_generic_english_is_not_an_entity(text):
    assert recognise(text) == []


def test_gazetteer_aliases_map_to_canonical_names_and_take_precedence():
    gazetteer = {
        "acme edge": ("product", "ACME Edge Router"),
        "acme": ("vendor", "ACME Corp"),
        "nginx": ("product", "NGINX Plus"),
    }
    hits = recognise("ACME Edge runs nginx; ask Acme support.", gazetteer=gazetteer)
    assert [(h.kind, h.name, h.surface) for h in hits] == [
        ("product", "acme edge router", "ACME Edge"),
        ("product", "nginx plus", "nginx"),
        ("vendor", "acme corp", "Acme"),
    ]


def test_every_occurrence_is_returned_in_text_order_and_longest_span_wins():
    hits = recognise("chrony here, chrony there, see /etc/chrony/chrony.conf and nftables.service")
    assert [(h.kind, h.surface) for h in hits] == [
        ("product", "chrony"),
        ("product", "chrony"),
        ("file_path", "/etc/chrony/chrony.conf"),
        ("service", "nftables.service"),
    ]
    assert all(isinstance(h, EntityHit) and h.kind in ENTITY_KINDS for h in hits)


def test_empty_text():
    assert recognise("") == []
    assert explicit_references("") == []


def test_explicit_references():
    text = (
        "Before you start, see sop-dns-failover.md and runbooks/vpn.html. Refer to the DNS failover SOP "
        "for escalation. Details in lb-pool(8), systemd.unit(5) and bootup(7). Read :doc:`../config/omfwd` "
        "and `the guide <guide.html>`_. Online copy: https://example.org/manual.html (a hyperlink)."
        " Call setns() carefully. See sop-dns-failover.md again."
    )
    assert explicit_references(text) == [
        "sop-dns-failover.md",
        "runbooks/vpn.html",
        "DNS failover SOP",
        "lb-pool.8",
        "systemd.unit.5",
        "bootup.7",
        "../config/omfwd",
        "guide.html",
    ]


def test_explicit_references_ignore_plain_prose():
    assert explicit_references("Follow the steps below and see the result in the output.") == []
