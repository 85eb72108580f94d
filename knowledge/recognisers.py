"""Deterministic entity recognisers for the knowledge graph (pure; no Django, no models).

:func:`recognise` finds vendors/products (built-in list + the admin gazetteer), protocols, commands,
parameters, error codes, services, RFCs and file paths in a chunk or a question. It prefers precision:
every pattern needs a technical shape (``snake_case``, ``a.b_c``, ``--option``, ``%FAC-3-MNEM``, a known
command verb followed by a known sub-command...) or a closed list, so ordinary English words never become
entities. Names are normalised keys (lower case; file paths keep their case); ``surface`` is the text as
written. Every occurrence is returned (callers count mentions), in text order.

:func:`explicit_references` lists documents a text points at: file names ("see sop-dns-failover.md"),
named procedures ("refer to the DNS failover SOP"), man pages (``lb-pool(8)`` -> ``lb-pool.8``) and
Sphinx cross-references.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["EntityHit", "recognise", "explicit_references", "ENTITY_KINDS"]

ENTITY_KINDS = (
    "vendor", "product", "protocol", "command", "parameter", "error_code", "service", "rfc", "file_path",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class EntityHit:
    """One mention: ``kind`` (see :data:`ENTITY_KINDS`), normalised ``name``, ``surface`` as written."""

    kind: str
    name: str
    surface: str


# --------------------------------------------------------------------------------------------------------
# closed lists


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# canonical -> aliases (matched case-insensitively unless listed in _EXACT_CASE)
_VENDORS = {
    "Cisco": ["cisco", "cisco systems"],
    "Juniper": ["juniper", "juniper networks"],
    "Arista": ["arista", "arista networks"],
    "Palo Alto Networks": ["palo alto", "palo alto networks"],
    "F5": ["F5", "f5 networks"],
    "Fortinet": ["fortinet"],
    "Check Point": ["check point", "checkpoint software"],
    "Red Hat": ["red hat", "redhat"],
    "Canonical": ["Canonical"],
    "Microsoft": ["microsoft"],
    "VMware": ["vmware"],
    "Huawei": ["huawei"],
    "Nokia": ["nokia"],
    "MikroTik": ["mikrotik"],
    "Ubiquiti": ["ubiquiti"],
    "Dell": ["Dell", "dell emc"],
    "HPE": ["HPE", "hewlett packard enterprise", "aruba networks"],
    "Extreme Networks": ["extreme networks"],
    "Amazon Web Services": ["aws", "amazon web services"],
    "Google Cloud": ["google cloud", "gcp"],
    "Microsoft Azure": ["azure"],
    "Intel": ["Intel"],
    "Mellanox": ["mellanox", "nvidia networking"],
}
_PRODUCTS = {
    "Debian": ["debian"],
    "Ubuntu": ["ubuntu"],
    "Red Hat Enterprise Linux": ["rhel", "red hat enterprise linux"],
    "Linux": ["Linux"],
    "FreeBSD": ["freebsd"],
    "PostgreSQL": ["postgresql", "postgres"],
    "MySQL": ["mysql"],
    "MariaDB": ["mariadb"],
    "MongoDB": ["mongodb"],
    "Redis": ["redis"],
    "nginx": ["nginx"],
    "Apache HTTP Server": ["apache httpd", "apache2", "apache http server"],
    "HAProxy": ["haproxy"],
    "OpenVPN": ["openvpn"],
    "WireGuard": ["wireguard"],
    "strongSwan": ["strongswan"],
    "keepalived": ["keepalived"],
    "chrony": ["chrony"],
    "ntpsec": ["ntpsec"],
    "rsyslog": ["rsyslog"],
    "syslog-ng": ["syslog-ng"],
    "journald": ["systemd-journald", "journald"],
    "nftables": ["nftables"],
    "iptables": ["iptables", "ip6tables"],
    "iproute2": ["iproute2"],
    "systemd": ["systemd"],
    "udev": ["udev"],
    "GRUB": ["grub", "grub2"],
    "NetworkManager": ["networkmanager"],
    "OpenSSL": ["openssl"],
    "GnuTLS": ["gnutls"],
    "OpenSSH": ["openssh"],
    "BIND": ["bind9", "isc bind"],
    "Unbound": ["Unbound"],
    "dnsmasq": ["dnsmasq"],
    "ISC DHCP": ["isc dhcp", "isc-dhcp-server"],
    "Kea": ["Kea"],
    "FRRouting": ["frrouting", "FRR"],
    "BIRD": ["BIRD", "bird2"],
    "Quagga": ["quagga"],
    "Docker": ["docker"],
    "Kubernetes": ["kubernetes", "k8s"],
    "Ansible": ["ansible"],
    "Terraform": ["terraform"],
    "Prometheus": ["Prometheus"],
    "Grafana": ["grafana"],
    "Elasticsearch": ["elasticsearch"],
    "Apache Kafka": ["kafka", "apache kafka"],
    "RabbitMQ": ["rabbitmq"],
    "Cisco IOS": ["IOS", "cisco ios", "ios-xe", "ios xe", "ios-xr", "ios xr"],
    "NX-OS": ["nx-os", "nxos"],
    "Junos": ["junos"],
    "Arista EOS": ["arista eos"],
    "PAN-OS": ["pan-os"],
    "BIG-IP": ["big-ip"],
    "LVS": ["LVS", "linux virtual server", "IPVS"],
    "netfilter": ["netfilter"],
    "tcpdump": ["tcpdump"],
    "Wireshark": ["wireshark"],
    "GPSd": ["gpsd"],
    "linuxptp": ["linuxptp", "ptp4l"],
    "libqpid-proton": ["libqpid-proton"],
}
# aliases that are also ordinary words (or need their capitals to mean the product)
_EXACT_CASE = {"BIND", "F5", "Canonical", "Dell", "HPE", "Intel", "Linux", "Unbound", "Kea", "FRR", "BIRD",
               "Prometheus", "IOS", "LVS", "IPVS"}  # fmt: skip

_PROTOCOLS = {
    "BGP": ["bgp", "bgp4", "ebgp", "ibgp"], "OSPF": ["ospf", "ospfv2", "ospfv3"], "IS-IS": ["is-is", "isis"],
    "RIP": ["RIP", "ripv2", "RIPng"], "EIGRP": ["eigrp"], "VRRP": ["vrrp", "vrrpv3"], "HSRP": ["hsrp"],
    "GLBP": ["glbp"], "BFD": ["bfd"], "NTP": ["ntp", "ntpv4"], "NTS": ["NTS"], "PTP": ["PTP"],
    "DNS": ["dns"], "DNSSEC": ["dnssec"], "DHCP": ["dhcp", "dhcpv4", "dhcpv6"], "TLS": ["tls"],
    "SSL": ["ssl"], "DTLS": ["dtls"], "SSH": ["ssh", "sshv2"], "SNMP": ["snmp", "snmpv2c", "snmpv3"],
    "syslog": ["syslog"], "RELP": ["relp"], "TCP": ["tcp"], "UDP": ["udp"], "SCTP": ["sctp"],
    "QUIC": ["quic"], "ICMP": ["icmp", "icmpv6"], "IGMP": ["igmp"], "MLD": ["MLD"], "PIM": ["PIM"],
    "IPsec": ["ipsec"], "IKE": ["IKE", "ikev1", "ikev2"], "GRE": ["GRE"], "VXLAN": ["vxlan"],
    "Geneve": ["geneve"], "EVPN": ["evpn"], "LACP": ["lacp"], "STP": ["stp", "rstp", "mstp"],
    "LLDP": ["lldp"], "CDP": ["CDP"], "MPLS": ["mpls"], "LDP": ["LDP"], "RSVP": ["rsvp", "rsvp-te"],
    "SRv6": ["srv6"], "ARP": ["arp"], "NDP": ["NDP"], "IPv4": ["ipv4"], "IPv6": ["ipv6"],
    "HTTP": ["http", "http/1.1", "http/2"], "HTTPS": ["https"], "FTP": ["FTP"], "SFTP": ["sftp"],
    "SMTP": ["smtp"], "IMAP": ["imap"], "LDAP": ["ldap", "ldaps"], "RADIUS": ["radius"],
    "TACACS+": ["tacacs+", "tacacs"], "Kerberos": ["kerberos"], "GSSAPI": ["gssapi"], "NFS": ["NFS"],
    "SMB": ["SMB", "cifs"], "iSCSI": ["iscsi"], "802.1Q": ["802.1q"], "802.1X": ["802.1x"],
    "PPP": ["PPP"], "L2TP": ["l2tp"], "NETCONF": ["netconf"], "gRPC": ["grpc"], "MQTT": ["mqtt"],
    "AMQP": ["amqp"], "NAT": ["NAT"], "ECMP": ["ecmp"], "WebSocket": ["websocket"],
}  # fmt: skip

_ERRNO = _words(
    """EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT EBUSY
    EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG ENOSPC ESPIPE EROFS
    EMLINK EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY ELOOP EWOULDBLOCK ENOMSG
    EIDRM ENODATA ETIME ENOLINK EPROTO EBADMSG EOVERFLOW EILSEQ EUSERS ENOTSOCK EDESTADDRREQ
    EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP ENOTSUP EPFNOSUPPORT
    EAFNOSUPPORT EADDRINUSE EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET ECONNABORTED ECONNRESET
    ENOBUFS EISCONN ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT ECONNREFUSED EHOSTDOWN EHOSTUNREACH
    EALREADY EINPROGRESS ESTALE EDQUOT ECANCELED EOWNERDEAD ENOTRECOVERABLE ERFKILL EHWPOISON
    EKEYEXPIRED EKEYREJECTED EKEYREVOKED"""
)

# well-known daemons; "<product or protocol>d" (chronyd, sshd, snmpd) is recognised by rule as well
_DAEMONS = _words(
    """sshd chronyd ntpd rsyslogd syslogd journald dhcpd httpd crond snmpd snmptrapd bgpd ospfd
    ospf6d zebra bfdd isisd ldpd ripd pimd staticd watchfrr vrrpd lldpd dnsmasq unbound kubelet etcd
    containerd dockerd mysqld postgres redis-server ptp4l phc2sys gpsd avahi-daemon wpa_supplicant
    hostapd smbd nmbd winbindd cupsd dovecot squid irqbalance auditd polkitd dbus-daemon firewalld
    radiusd charon pluto racoon rpcbind nscd nslcd sssd udevd systemd-udevd systemd-networkd
    systemd-resolved systemd-timesyncd systemd-logind systemd-journald openvpn-server openvpn-client"""
)

_TLDS = _words(
    "com org net io de uk fr nl eu info biz gov edu local lan arpa example test localhost internal us ca"
    " au ch at be se no dk fi it es pl cz ru jp cn in br"
)
_FILE_EXTS = _words(
    """conf cfg cnf ini yaml yml json xml toml txt md markdown html htm pdf docx doc rst log crt key
    pem csr der p12 pfx sh py pl rb js ts go c h cpp so service socket timer target mount path nft
    rules list sources gz xz bz2 zip tar deb rpm sql db csv tsv d lock pid sock ovpn example sample
    bak old new"""
)

# CLI verbs. STRICT ones are English words or tiny names: they need a known sub-command after them.
_STRICT_VERBS = {
    "ip": _words(
        """link addr address addrlabel route rule neigh neighbor neighbour ntable tunnel tuntap
        maddress mroute mrule monitor xfrm netns l2tp fou macsec tcp_metrics token nexthop mptcp
        ioam stats vrf sr netconf help -s -d -4 -6 -br -j -c"""
    ),
    "tc": _words("qdisc class filter action actions chain monitor exec -s -d -j"),
    "bridge": _words("link fdb mdb vlan vni monitor"),
    "ss": _words("-t -u -l -n -p -a -s -x -tlnp -tunlp -tulpn -lntp -tan -uan -s"),
    "show": _words(
        """ip ipv6 running-config startup-config interfaces interface version bgp ospf route vlan vlans
        mac arp logging clock ntp spanning-tree lldp cdp standby vrrp configuration system chassis
        processes memory inventory environment license"""
    ),
    "set": _words(
        """interfaces protocols system routing-options policy-options security firewall vlans chassis
        snmp class-of-service routing-instances"""
    ),
    "service": set(),  # handled by its own pattern: service NAME start|stop|...
}
_OPEN_VERBS = _words(
    """chronyc systemctl journalctl nft iptables ip6tables ebtables arptables ethtool sysctl devlink
    tipc dcb vdpa rdma kubectl docker psql redis-cli openssl ansible-playbook apt-get dpkg rndc
    modprobe traceroute tracepath nslookup ssh-keygen update-rc.d vtysh birdc netstat ifconfig ifup
    ifdown nmcli resolvectl timedatectl hostnamectl ipvsadm conntrack genhash rsyslogd keepalived
    tcpdump dig openvpn nstat lnstat rtmon ctstat arpd"""
)
_FUNCTION_WORDS = _words(
    """a an the is are was were be been being am to of in on at by for with from into onto as and or
    but if then than that this these those it its it's which who whom whose what when where why how
    can could will would shall should may might must do does did done not no yes has have had so
    such also only just used uses using use all any each every some more most other another there
    here their they them we you he she his her our your command commands utility tool program option
    options manual page man see itself provides shows prints displays lets allows"""
)

_CODE_SPAN = re.compile(r"`([^`\n]{1,120})`")
_SNAKE = re.compile(r"(?<![\w.$/-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(-]|\.\w)")
_DOTTED = re.compile(r"(?<![\w.$/@-])([A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?![\w(-]|\.\w)")
# MaxLinesAtOnce, StreamDriverMode (three or more humps), gnutlsPriorityString, and legacy $Directives
_CAMEL = re.compile(
    r"(?<![\w.$/@-])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,}|[a-z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,})(?![\w(-]|\.\w)"
)
_DOLLAR_DIRECTIVE = re.compile(r"(?<![\w$])(\$[A-Z][A-Za-z0-9_]{3,})\b")
_LONG_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?![\w-])")
_ASSIGNMENT = re.compile(r"(?<![\w.?&/-])([A-Za-z][A-Za-z0-9_.]*[A-Za-z0-9])=(?=[\"'\w/~$-])")
_DIRECTIVE_LINE = re.compile(
    r"^[ \t]*(?:[$#] )?([A-Za-z][A-Za-z0-9_-]{2,40})[ \t]+"
    r"((?:\d[\w.:/-]*|/[\w./@-]+|\"[^\"\n]*\"|yes|no|on|off|true|false|enabled?|disabled?)"
    r"(?:[ \t]+\S+){0,3})[ \t]*$",
    re.MULTILINE,
)
_SYSLOG_CODE = re.compile(r"(?<![\w%])(%[A-Z][A-Z0-9_]*(?:-[A-Z0-9_]+)*-[0-7]-[A-Z][A-Z0-9_]*)\b")
_ERRNO_RE = re.compile(r"\b(E[A-Z0-9]{2,15})\b")
_HTTP_STATUS = re.compile(
    r"\b(?:HTTP(?:/[\d.]+)?\s+(?:status\s+(?:code\s+)?)?"
    r"|status(?:\s+code)?\s*[:=]?\s*|returns?\s+(?:an?\s+)?)"
    r"([1-5]\d\d)\b"
    r"|\b([1-5]\d\d)\s+(?=(?:OK|Not Found|Forbidden|Unauthorized|Bad Request|Bad Gateway"
    r"|Internal Server Error"
    r"|Service Unavailable|Gateway Time-?out|Too Many Requests|Conflict|Method Not Allowed|Moved Permanently"
    r"|Found|Not Modified|Request Timeout|Payload Too Large)\b)",
    re.IGNORECASE,
)
_ERROR_NUMBER = re.compile(r"\berror(?:\s+code)?\s+(\d{3,5})\b", re.IGNORECASE)
_UNIT = re.compile(r"(?<![\w/.-])([\w@.-]*[\w@]\.(?:service|socket|timer|target|mount|path|slice))\b")
_DAEMON_WORD = re.compile(r"(?<![\w./-])([a-z][a-z0-9_-]{1,30})(?![\w-]|\.\w)")
_RFC = re.compile(r"\bRFC[ -]?(\d{3,5})\b", re.IGNORECASE)
_PATH = re.compile(
    r"(?<![\w/.~:-])((?:~|/(?:etc|var|usr|lib|lib64|run|opt|proc|sys|dev|home|boot|srv|tmp|root|bin|sbin|mnt"
    r"|media))(?:/[\w.@%+,:=-]+)+/?)"
)


# --------------------------------------------------------------------------------------------------------
# gazetteer matching


@dataclass(frozen=True, slots=True)
class _Gazetteer:
    pattern: re.Pattern[str] | None
    exact: dict[str, tuple[str, str]]  # alias as written -> (kind, canonical) for case-sensitive aliases
    folded: dict[str, tuple[str, str]]  # lower-case alias -> (kind, canonical)


def _compile(entries: Iterable[tuple[str, str, str]]) -> _Gazetteer:
    exact: dict[str, tuple[str, str]] = {}
    folded: dict[str, tuple[str, str]] = {}
    for alias, kind, canonical in entries:
        alias = alias.strip()
        if len(alias) < 2:
            continue
        # short all-capital acronyms (NAT, RIP, PIM, GRE) are words in lower case ("nat", "rip", "pim")
        if alias in _EXACT_CASE or (alias.isupper() and sum(ch.isalpha() for ch in alias) <= 4):
            exact[alias] = (kind, canonical)
        else:
            folded[alias.lower()] = (kind, canonical)
    if not exact and not folded:
        return _Gazetteer(None, exact, folded)
    alternatives = sorted({*exact, *folded}, key=len, reverse=True)
    body = "|".join(re.escape(a).replace(r"\ ", r"\s+") for a in alternatives)
    # not part of a longer word, path, option or dotted name
    pattern = re.compile(rf"(?<![\w/.@$-])(?:{body})(?![\w@+]|[-.][\w])", re.IGNORECASE)
    return _Gazetteer(pattern, exact, folded)


@functools.lru_cache(maxsize=1)
def _builtin() -> _Gazetteer:
    entries: list[tuple[str, str, str]] = []
    for table, kind in ((_VENDORS, "vendor"), (_PRODUCTS, "product"), (_PROTOCOLS, "protocol")):
        for canonical, aliases in table.items():
            entries.extend((alias, kind, canonical) for alias in aliases)
            if canonical not in aliases and canonical.lower() not in aliases:
                entries.append((canonical, kind, canonical))
    return _compile(entries)


@functools.lru_cache(maxsize=16)
def _custom(items: frozenset[tuple[str, tuple[str, str]]]) -> _Gazetteer:
    return _compile((alias, kind, canonical) for alias, (kind, canonical) in items)


def _lookup(gazetteer: _Gazetteer, surface: str) -> tuple[str, str] | None:
    normalised = re.sub(r"\s+", " ", surface)
    return gazetteer.exact.get(normalised) or gazetteer.folded.get(normalised.lower())


# --------------------------------------------------------------------------------------------------------
# recognise


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    priority: int  # lower wins among spans of equal length
    hit: EntityHit


def recognise(text: str, *, gazetteer: Mapping[str, tuple[str, str]] | None = None) -> list[EntityHit]:
    """Entities mentioned in ``text``, one hit per occurrence, in text order.

    ``gazetteer`` maps a lower-case alias to ``(kind, canonical name)`` (admin-curated vendors/products);
    it takes precedence over the built-in list. Overlapping candidates resolve to the longest span
    (``/etc/chrony/chrony.conf`` is one file path, not also the product chrony).
    """
    if not text:
        return []
    spans: list[_Span] = []

    def add(start: int, end: int, kind: str, name: str, priority: int) -> None:
        spans.append(_Span(start, end, priority, EntityHit(kind, name, text[start:end])))

    if gazetteer:
        custom = _custom(frozenset((str(k), (str(v[0]), str(v[1]))) for k, v in gazetteer.items()))
        _gazetteer_spans(text, custom, add, priority=0)
    _gazetteer_spans(text, _builtin(), add, priority=1)

    for match in _PATH.finditer(text):
        path = match.group(1).rstrip(".,;:)")
        if path.count("/") >= 2 or path.startswith("~/"):
            add(match.start(1), match.start(1) + len(path), "file_path", path.rstrip("/") or path, 0)
    for match in _RFC.finditer(text):
        add(match.start(), match.end(), "rfc", f"rfc {int(match.group(1))}", 0)
    for match in _SYSLOG_CODE.finditer(text):
        add(match.start(1), match.end(1), "error_code", match.group(1).lower(), 0)
    for match in _ERRNO_RE.finditer(text):
        if match.group(1) in _ERRNO:
            add(match.start(1), match.end(1), "error_code", match.group(1).lower(), 0)
    for match in _HTTP_STATUS.finditer(text):
        group = 1 if match.group(1) else 2
        add(match.start(group), match.end(group), "error_code", f"http {match.group(group)}", 0)
    for match in _ERROR_NUMBER.finditer(text):
        add(match.start(), match.end(), "error_code", f"error {match.group(1)}", 1)
    for match in _UNIT.finditer(text):
        add(match.start(1), match.end(1), "service", match.group(1).lower(), 0)
    _daemon_spans(text, add)
    _command_spans(text, add)
    _parameter_spans(text, add)

    # longest span wins; ties: lower priority value, then earlier kind in the registration order
    chosen: list[_Span] = []
    taken: list[tuple[int, int]] = []
    for span in sorted(spans, key=lambda s: (-(s.end - s.start), s.priority, s.start)):
        if any(span.start < end and start < span.end for start, end in taken):
            continue
        chosen.append(span)
        taken.append((span.start, span.end))
    chosen.sort(key=lambda s: s.start)
    return [s.hit for s in chosen]


_Add = Callable[[int, int, str, str, int], None]


def _gazetteer_spans(text: str, gazetteer: _Gazetteer, add: _Add, *, priority: int) -> None:
    if gazetteer.pattern is None:
        return
    for match in gazetteer.pattern.finditer(text):
        found = _lookup(gazetteer, match.group(0))
        if found is None:
            continue  # matched only case-insensitively an alias that needs its exact case
        kind, canonical = found
        add(match.start(), match.end(), kind, canonical.lower(), priority)


def _daemon_spans(text: str, add: _Add) -> None:
    stems = _daemon_stems()
    for match in _DAEMON_WORD.finditer(text):
        word = match.group(1)
        if word in _DAEMONS or (word.endswith("d") and word[:-1] in stems):
            add(match.start(1), match.end(1), "service", word, 1)


@functools.lru_cache(maxsize=1)
def _daemon_stems() -> frozenset[str]:
    stems = {a.lower() for table in (_PRODUCTS, _PROTOCOLS) for aliases in table.values() for a in aliases}
    stems |= _words("ssh snmp ntp dhcp http ldap radius lldp bgp ospf pim rip vrrp")
    return frozenset(s for s in stems if s.isalnum() and len(s) >= 3)


_VERB_ALTERNATIVES = "|".join(
    re.escape(v) for v in sorted({*_STRICT_VERBS, *_OPEN_VERBS}, key=len, reverse=True)
)
_VERB_RE = re.compile(rf"(?<![\w./@$-])({_VERB_ALTERNATIVES})(?=[ \t]+\S)")
_SERVICE_ACTIONS = ("start", "stop", "restart", "reload", "status")
# open verbs that are also product names or English words: a command only when run (prompt or flags)
_RUN_ONLY_VERBS = {"dig", "openvpn", "keepalived", "rsyslogd", "tcpdump", "openssl", "docker", "genhash"}


def _command_spans(text: str, add: _Add) -> None:
    for match in _VERB_RE.finditer(text):
        verb = match.group(1)
        rest = text[match.end() : match.end() + 160].split("\n", 1)[0].split()
        words = [verb]
        extra = 2  # sub-command words taken after the verb (and after a strict verb's object)
        if verb == "service":
            if len(rest) < 2 or rest[1] not in _SERVICE_ACTIONS:
                continue
            words, rest, extra = [verb, *rest[:2]], [], 0
        elif verb in _STRICT_VERBS:
            if not rest or rest[0].lower() not in _STRICT_VERBS[verb]:
                continue
            words.append(rest[0])
            rest, extra = rest[1:], 1
        elif verb in _RUN_ONLY_VERBS and not (_prompted_at(text, match.start()) or rest[0].startswith("-")):
            continue
        for word in rest[:extra]:
            if word.lower() in _FUNCTION_WORDS or not re.fullmatch(r"[a-z][a-z0-9_-]*", word):
                break
            words.append(word)
        if len(words) == 1 and not rest[0].startswith("-"):
            continue  # a bare verb in prose ("use nft to ...") names the tool, not a command line
        written = re.match(
            rf"\S+(?:[ \t]+\S+){{{len(words) - 1}}}", text[match.start() : match.start() + 240]
        )
        end = match.start() + (written.end() if written else len(" ".join(words)))
        # priority 0: a tool that is run ("tcpdump -ni eth0") is a command, not the product of that name
        add(match.start(), end, "command", " ".join(words).lower(), 0)


def _prompted_at(text: str, position: int) -> bool:
    line_start = text.rfind("\n", 0, position) + 1
    prefix = text[line_start:position]
    return bool(re.fullmatch(r"[ \t]*(?:(?:\$|#|\w[\w.-]*@[\w.-]+:\S*[$#])[ \t]+)?(?:sudo[ \t]+)?", prefix))


def _parameter_spans(text: str, add: _Add) -> None:
    for match in _CODE_SPAN.finditer(text):
        inner = match.group(1).strip()
        if not inner or len(inner.split()) > 1:
            continue  # multi-word code spans are found by the command/path/parameter rules inside them
        if re.fullmatch(r"[A-Za-z_][\w.:-]*[\w]|--?[\w-]+", inner) and not inner.isdigit():
            add(match.start(1), match.start(1) + len(inner), "parameter", inner.lower(), 3)
    for match in _SNAKE.finditer(text):
        add(match.start(1), match.end(1), "parameter", match.group(1).lower(), 3)
    for match in _DOTTED.finditer(text):
        name = match.group(1)
        parts = name.split(".")
        last = parts[-1].lower()
        if last in _TLDS or last in _FILE_EXTS or parts[0].lower() in ("e", "i", "www"):
            continue
        camel = any(re.search(r"[a-z][A-Z]", p) for p in parts)
        if parts[0][0].isupper() and not camel:
            continue  # "Section.Title" style, not an identifier
        if "_" in name or len(parts) >= 3 or camel:
            add(match.start(1), match.end(1), "parameter", name.lower(), 3)
    for match in _CAMEL.finditer(text):
        add(match.start(1), match.end(1), "parameter", match.group(1).lower(), 5)
    for match in _DOLLAR_DIRECTIVE.finditer(text):
        add(match.start(1), match.end(1), "parameter", match.group(1).lower(), 3)
    for match in _LONG_OPTION.finditer(text):
        add(match.start(1), match.end(1), "parameter", match.group(1).lower(), 3)
    for match in _ASSIGNMENT.finditer(text):
        key = match.group(1)
        if len(key) >= 3 and not key.isdigit() and key.lower() not in _GENERIC_KEYS:
            add(match.start(1), match.end(1), "parameter", key.lower(), 4)
    for match in _DIRECTIVE_LINE.finditer(text):
        key = match.group(1)
        lowered = key.lower()
        if (
            lowered in _FUNCTION_WORDS
            or lowered in _DIRECTIVE_STOP
            or lowered in _GENERIC_KEYS
            or key.isupper()
        ):
            continue
        add(match.start(1), match.end(1), "parameter", key.lower(), 4)


# configuration keys that are everyday words: as graph entities they would link unrelated chunks
_GENERIC_KEYS = _words(
    """type name file port string template value target server load priority interface state mode level
    action input output source address protocol host user group path size timeout count rate key id format
    facility severity queue rule table chain policy family device dev weight delay interval limit enable
    enabled disable disabled default local remote peer client prefix label tag title description comment
    options option version log debug verbose daemon module parameter parameters set list data text time date
    start end stop status result results mask network net route via proto scope metric mtu flags flag
    filter class index offset length width height color style lang href src rel id_ uid gid owner mode_
    message msg program command config configuration directory dir root home shell role base number"""
)

# words that start "word 123" lines in prose and tables without being configuration directives
_DIRECTIVE_STOP = _words(
    """version versions page pages step steps section chapter table figure note example line lines item
    items total type default mandatory value values size port ports number see since available
    release about around over under between after before until from copyright year years day days
    hour hours minute minutes second seconds"""
)


# --------------------------------------------------------------------------------------------------------
# explicit references

_DOC_FILE = re.compile(
    r"(?<![\w/@.:-])((?:\.{0,2}/)?(?:[\w.-]+/)*[\w][\w.-]*\.(?:md|markdown|html?|txt|pdf|docx|rst|adoc))\b",
    re.IGNORECASE,
)
_NAMED_DOC = re.compile(
    r"\b(?:see|refer\s+to|consult|follow|per|as\s+described\s+in|according\s+to|described\s+in)\s+"
    r"(?:the\s+|our\s+)?"
    r"((?:[A-Z0-9][\w/&+-]*\s+){0,6}(?:SOP|runbook|run\s+book|playbook|guide|manual|procedure|policy|handbook"
    r"|FAQ|checklist|standard))\b",
    re.IGNORECASE,
)
_MAN_REF = re.compile(r"(?<![\w/.-])([A-Za-z_][\w.+-]*[\w+])\(([1-9])[a-z]{0,3}\)")
_SPHINX_ROLE = re.compile(r":(?:doc|ref|any|numref|download):`(?:[^`<]*<([^>`]+)>|([^`]+))`")
_RST_LINK = re.compile(r"`[^`<]+<([^>`\s]+)>`__?")


def explicit_references(text: str) -> list[str]:
    """Documents the text points at, in order of first mention, without duplicates.

    File names with document extensions ("see sop-dns-failover.md"), named documents after "see/refer
    to/per" ("refer to the DNS failover SOP" -> "DNS failover SOP"), man pages (``lb-pool(8)`` ->
    ``lb-pool.8``, matching the ``<name>.<section>`` stem of rendered man pages) and Sphinx ``:doc:`` /
    ``:ref:`` / ```text <target>`_`` targets. URLs are not references (they are hyperlinks).
    """
    found: list[tuple[int, str]] = []
    urls = [m.span() for m in re.finditer(r"\b[a-z][a-z0-9+.-]*://\S+", text, re.IGNORECASE)]

    def in_url(position: int) -> bool:
        return any(start <= position < end for start, end in urls)

    for match in _DOC_FILE.finditer(text):
        if not in_url(match.start(1)):
            found.append((match.start(1), match.group(1).removeprefix("./")))
    for match in _NAMED_DOC.finditer(text):
        name = re.sub(r"\s+", " ", match.group(1)).strip()
        if len(name.split()) >= 2 and name.split()[0].lower() not in _FUNCTION_WORDS:
            found.append((match.start(1), name))
    for match in _MAN_REF.finditer(text):
        found.append((match.start(), f"{match.group(1)}.{match.group(2)}"))
    for match in _SPHINX_ROLE.finditer(text):
        found.append((match.start(), (match.group(1) or match.group(2)).strip()))
    for match in _RST_LINK.finditer(text):
        if not re.match(r"[a-z][a-z0-9+.-]*://", match.group(1)):
            found.append((match.start(), match.group(1)))
    found.sort()
    return list(dict.fromkeys(name for _, name in found if name))
