"""Where a local HTTP server may listen and which ``Host`` headers it answers: shared by
the operator console (``anneal_memory.ui``) and the MCP server over HTTP
(``anneal_memory.mcp.http``).

A server binds one address, never every interface, and serves a request only when its
``Host`` header names that address (a DNS-rebinding page carries its own name).
"""

from __future__ import annotations

import ipaddress
import socket


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_address(host: object) -> str:
    """The one address ``host`` names, as the operating system reads it: ``"0"``,
    ``"0x0"`` or ``"000.000.000.000"`` are every interface just as ``"0.0.0.0"`` is, so
    the check is made on the resolved address, never on the spelling. A ValidationError
    for a blank host, a name that does not resolve, or any every-interface address."""
    from .errors import ValidationError

    every = ValidationError("bind to one address (default 127.0.0.1), not every interface: "
                            "the Host check needs the address it serves")
    if not isinstance(host, str) or not host.strip():
        raise every
    name = host.strip().strip("[]")
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        raise ValidationError(f"cannot resolve the host {name[:80]!r}: pass an address such "
                              "as 127.0.0.1 or a name this machine resolves") from None
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    if not addresses or any(a.is_unspecified for a in addresses):
        raise every
    if _numeric(name):  # one spelling of an address: bind (and check Host against) it
        return str(addresses[0])
    return name


def _numeric(name: str) -> bool:
    """Whether ``name`` is an address in some spelling (inet_aton's too: 127.1, 0x7f.1)."""
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.inet_aton(name)
        return True
    except OSError:
        return False


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` header values that name the bound address (lower case)."""
    shown = f"[{host}]" if ":" in host else host
    names = {f"{shown}:{port}".lower()}
    if is_loopback(host):
        names.add(f"localhost:{port}")
    return frozenset(names)


def host_ok(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether the request's Host header names this console."""
    return header is not None and header.strip().lower() in allowed
