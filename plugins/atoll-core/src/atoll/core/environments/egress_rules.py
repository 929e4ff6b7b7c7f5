"""Egress allowlists for atoll-local: nftables rules matched on a trial's uids.

Every `exec` of atoll-local is a fresh bubblewrap sandbox, so a per-exec
network namespace wired to the host with a veth pair, addresses and routes
would cost more than most execs themselves. Instead an allowlisted box shares
the host's network and one nftables table in the host's namespace filters what
the trial's block of host uids sends: packets of every other process (and
packets with no socket) never enter the trial's chain; replies on connections
someone else opened are let through; the allowed addresses and CIDRs, and DNS
to the host's nameservers when the list names hosts, are accepted; anything
else is refused at once (TCP reset, ICMP admin-prohibited) so that a blocked
connection fails fast instead of hanging. Hostnames are resolved here, on the
host, when the policy is applied. A whole table is loaded in one `nft -f -`
transaction, so a failed load leaves the previous rules in force.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import shutil
import socket
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

Net = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

RESOLV_CONF = Path("/etc/resolv.conf")
NFT_TIMEOUT = 30.0


class EgressRulesError(Exception):
    """The trial's allowlist could not be put in force."""


@dataclass(frozen=True)
class Allowed:
    """The addresses one allowlist resolves to, and whether it needs DNS."""

    v4: tuple[ipaddress.IPv4Network, ...]
    v6: tuple[ipaddress.IPv6Network, ...]
    dns: bool


def table_name(uids: range) -> str:
    return f"atoll_local_{uids.start}"


def resolve(allowed_hosts: Iterable[str]) -> Allowed:
    """Addresses and CIDRs as they are; each hostname looked up on the host now."""
    nets: list[Net] = []
    dns = False
    for entry in allowed_hosts:
        if entry.startswith("*."):
            raise EgressRulesError(
                f"atoll-local cannot allow wildcard hostnames such as {entry!r}; "
                "list the exact hostnames instead"
            )
        try:
            nets.append(ipaddress.ip_network(entry, strict=False))
            continue
        except ValueError:
            pass
        dns = True
        nets.extend(_lookup(entry))
    v4 = [n for n in nets if isinstance(n, ipaddress.IPv4Network)]
    v6 = [n for n in nets if isinstance(n, ipaddress.IPv6Network)]
    # Interval sets refuse overlapping elements, so merge them first.
    return Allowed(
        v4=tuple(ipaddress.collapse_addresses(v4)),
        v6=tuple(ipaddress.collapse_addresses(v6)),
        dns=dns,
    )


def _lookup(host: str) -> list[Net]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise EgressRulesError(
            f"allowlisted host {host!r} does not resolve on this machine: {exc}"
        ) from None
    return [ipaddress.ip_network(str(info[4][0]).split("%")[0]) for info in infos]


def nameservers(resolv_conf: Path = RESOLV_CONF) -> list[Address]:
    """The `nameserver` lines of the host's resolver configuration (the box reads the same file)."""
    found = []
    try:
        lines = resolv_conf.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver":
            try:
                found.append(ipaddress.ip_address(fields[1].split("%")[0]))
            except ValueError:
                continue
    return found


def render(name: str, uids: range, allowed: Allowed, resolvers: Sequence[Address] = ()) -> str:
    """The nftables script that (re)creates table `name` in one transaction."""
    rules = [
        "ct direction reply accept",
        "ip daddr @allowed4 accept",
        "ip6 daddr @allowed6 accept",
    ]
    if allowed.dns:
        for family, version in (("ip", 4), ("ip6", 6)):
            servers = [str(a) for a in resolvers if a.version == version]
            if servers:
                rules.append(
                    f"{family} daddr {{ {', '.join(servers)} }} "
                    "meta l4proto { tcp, udp } th dport 53 accept"
                )
    rules += ["meta l4proto tcp reject with tcp reset", "reject with icmpx type admin-prohibited"]
    body = "\n".join(f"    {rule}" for rule in rules)
    return (
        # Declaring the table first makes the delete succeed when it is absent.
        f"table inet {name}\n"
        f"delete table inet {name}\n"
        f"table inet {name} {{\n"
        f"  set allowed4 {{ type ipv4_addr; flags interval;{_elements(allowed.v4)} }}\n"
        f"  set allowed6 {{ type ipv6_addr; flags interval;{_elements(allowed.v6)} }}\n"
        f"  chain output {{\n"
        f"    type filter hook output priority filter; policy accept;\n"
        f"    meta skuid {uids.start}-{uids.stop - 1} jump trial\n"
        f"  }}\n"
        f"  chain trial {{\n{body}\n  }}\n"
        f"}}\n"
    )


def _elements(nets: Sequence[Net]) -> str:
    if not nets:
        return ""
    return f" elements = {{ {', '.join(str(n) for n in nets)} }};"


def apply(uids: range, allowed_hosts: Iterable[str]) -> None:
    """Put the trial's allowlist in force, replacing any earlier one atomically."""
    allowed = resolve(allowed_hosts)
    script = render(table_name(uids), uids, allowed, nameservers())
    _nft(script, f"load the network allowlist of uids {uids.start}-{uids.stop - 1}")


def remove(uids: range) -> None:
    """Delete the trial's table; nothing happens when there is none."""
    _drop(table_name(uids))


def _drop(name: str) -> None:
    _nft(f"table inet {name}\ndelete table inet {name}\n", f"remove the nftables table {name}")


def nft_command() -> str | None:
    """The nft executable: on PATH, or where Debian puts it (a user's PATH may lack sbin)."""
    found = shutil.which("nft")
    if found is None:
        found = next((p for p in ("/usr/sbin/nft", "/sbin/nft") if os.access(p, os.X_OK)), None)
    return found


def _nft(script: str, what: str) -> None:
    try:
        done = subprocess.run(
            [nft_command() or "nft", "-f", "-"],
            input=script.encode(),
            capture_output=True,
            timeout=NFT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EgressRulesError(f"atoll-local could not {what}: {exc}") from None
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        raise EgressRulesError(
            f"atoll-local could not {what}: nft failed: {detail[0] if detail else done.returncode}"
        )


@functools.cache
def supported() -> bool:
    """Whether this process can enforce allowlists: root, `nft`, and a kernel that takes the rules."""
    if os.geteuid() != 0 or nft_command() is None:
        return False
    # Documentation addresses and uids near the top of the 32-bit range that
    # no account uses: a table shaped like the real ones that matches nothing.
    name = f"atoll_probe_{os.getpid()}"
    allowed = resolve(["192.0.2.0/24", "2001:db8::1"])
    probe = Allowed(allowed.v4, allowed.v6, dns=True)
    resolvers = [ipaddress.ip_address("192.0.2.53"), ipaddress.ip_address("2001:db8::53")]
    try:
        _nft(render(name, range(4_294_960_000, 4_294_960_016), probe, resolvers), "probe nftables")
        _drop(name)
    except EgressRulesError:
        return False
    return True
