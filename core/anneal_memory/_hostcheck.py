"""Where a local HTTP server may listen and which ``Host`` headers it answers: shared by
the operator console (``anneal_memory.ui``) and the MCP server over HTTP
(``anneal_memory.mcp.http``).

A server binds one address, never every interface, and serves a request only when its
``Host`` header names that address (a DNS-rebinding page carries its own name).
"""

from __future__ import annotations

import errno
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

    if not isinstance(host, str) or not host.strip():
        raise _every("a blank host")
    name = host.strip().strip("[]")
    every = _every(f"{name[:80]!r}")
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        raise ValidationError(f"cannot resolve the host {name[:80]!r}: pass an address such "
                              "as 127.0.0.1 or a name this machine resolves") from None
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    if not addresses or any(is_every_interface(a) for a in addresses):
        raise every
    if _numeric(name):  # one spelling of an address: bind (and check Host against) it
        return str(_plain(addresses[0]))
    return name


def _every(what: str) -> Exception:
    from .errors import ValidationError

    return ValidationError(f"bind to one address (default 127.0.0.1), not every interface: "
                           f"{what} listens on every interface, and the Host check needs the "
                           "one address it serves")


def is_every_interface(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether binding ``address`` listens on every interface: the unspecified address
    of either family (``0.0.0.0``, ``::``, ``::0.0.0.0``), and the IPv4-mapped IPv6 form
    of 0.0.0.0 (``::ffff:0.0.0.0``, ``::ffff:0:0``), which a dual-stack socket binds as
    every IPv4 interface although ``is_unspecified`` says no."""
    return address.is_unspecified or _plain(address).is_unspecified


def _plain(address: ipaddress.IPv4Address | ipaddress.IPv6Address
           ) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An IPv4-mapped IPv6 address as the IPv4 address it carries (what the socket
    serves, and the form a Host header names); any other address as it is."""
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped if mapped is not None else address


def listen_error(host: str, port: int, exc: OSError) -> Exception:
    """The ValidationError for a bind that failed, naming its real cause: a port in
    use or reserved, or an address this machine does not have (not "another port")."""
    from .errors import ValidationError

    shown = f"[{host}]" if ":" in host else host
    why = exc.strerror or str(exc)
    if exc.errno == errno.EADDRINUSE:
        fix = "choose another port (0 picks a free one)"
    elif exc.errno == errno.EACCES:
        fix = "ports below 1024 need privileges: choose a port from 1024 up (0 picks a free one)"
    elif exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
        fix = (f"{host} is not an address of this machine: pass one of its own "
               "addresses (e.g. 127.0.0.1, or an address 'ip addr' lists)")
    else:
        fix = "check the address and the port (0 picks a free port)"
    return ValidationError(f"cannot listen on {shown}:{port} ({why}): {fix}")


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
