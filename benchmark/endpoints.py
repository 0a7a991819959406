"""Where a submitted API model may send requests, and which key it may send: a rule of the base code.

A pull request writes ``submission.yaml``; a maintainer runs ``sago evaluate`` on it in their own
environment. So the file is hostile until checked, and what it could do is send a maintainer's secret
(``key_env: GITHUB_TOKEN``) to the submitter's host, or reach a private network (a cloud metadata
service at 169.254.169.254, a service on loopback). The rules, all here, none in the file:

* **a key only from a variable set aside for models**: ``key_env`` must start with
  :data:`KEY_ENV_PREFIX`; maintainers export a model's key under such a name and nothing else does.
* **https to a public host name**: no IP literal (in any spelling: ``2130706433``, ``0x7f.1``), no
  ``localhost``, no single-label, ``.local``, ``.internal`` or other private-use name, no punycode, no
  user in the address, no port but 443.
* **checked again when connecting**: every address the name resolves to must be public (not private,
  loopback, link-local, CGNAT, multicast, reserved, unspecified, nor one of those inside an IPv6
  address); the connection goes to the address checked, so DNS cannot change between the check and
  the connection, and its peer is checked once more. Redirects are refused and no proxy is used.
* **the maintainers' local server**: ``http://127.0.0.1:PORT`` without a key runs only when
  :data:`LOCAL_ENDPOINT_ENV` names exactly that address (``sago serve`` sets it for its command).
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import re
import socket
import urllib.parse
from collections.abc import Callable
from typing import Any

from benchmark.chat_api import plain_connection
from benchmark.errors import SagoError

KEY_ENV_PREFIX = "SAGO_API_KEY_"
KEY_ENV_RULE = (
    f"a submitted API model's key_env must start with {KEY_ENV_PREFIX} (a variable set aside for model keys)"
)
URL_RULE = (
    "a submitted API model's base_url must be https:// to a public host name, on port 443, with no user"
)
LOCAL_ENDPOINT_ENV = "SAGO_LOCAL_ENDPOINT"
_LOCAL = re.compile(r"http://127\.0\.0\.1:[1-9][0-9]{0,4}")
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_PRIVATE_SUFFIXES = (
    "localhost", "local", "internal", "intranet", "lan", "home", "corp", "private", "localdomain",
    "home.arpa", "arpa", "test", "example", "invalid", "onion", "alt",
)  # fmt: skip
"""names that never reach a public host (RFC 6761, 6762, 8375, 9476 and common private-use ones)."""


_NOT_PUBLIC = (ipaddress.ip_network("192.0.0.0/24"), ipaddress.ip_network("2001::/23"))
"""IETF protocol assignments that older Pythons' ``is_global`` still calls global (192.0.0.8, say)."""


class EndpointRefused(SagoError):
    """A request the rules above refuse; never retried (another try goes to the same place)."""


def is_local_form(base_url: str) -> bool:
    """The maintainers' own served model: ``http://127.0.0.1:PORT`` (what ``sago serve`` starts).

    >>> is_local_form("http://127.0.0.1:8094"), is_local_form("http://127.0.0.1:8094/v1")
    (True, False)
    """
    return _LOCAL.fullmatch(base_url.rstrip("/")) is not None


def key_env_problem(key_env: str) -> str | None:
    """Why ``key_env`` may not be read for a submitted model (None: it may).

    >>> key_env_problem("SAGO_API_KEY_OPENAI") is None, key_env_problem("GITHUB_TOKEN") is not None
    (True, True)
    """
    if key_env.startswith(KEY_ENV_PREFIX) and len(key_env) > len(KEY_ENV_PREFIX):
        return None
    return f"{key_env} is not a model key variable: {KEY_ENV_RULE}"


def url_problem(base_url: str) -> str | None:
    """Why ``base_url`` may not be a submitted model's public endpoint (None: it may), without a lookup.

    >>> url_problem("https://api.openai.com") is None, url_problem("https://169.254.169.254") is not None
    (True, True)
    """
    try:
        parts = urllib.parse.urlsplit(base_url)
        port = parts.port
    except ValueError:
        return f"{base_url} is not a well-formed address"
    if parts.scheme != "https":
        return "it is not https:// (a key and the prompts would travel in clear)"
    if "@" in parts.netloc:
        return "it names a user (user@host): the host would be hidden behind it"
    if port not in (None, 443):
        return f"it names port {port}: only https's own port (443) is allowed"
    return host_problem(parts.hostname or "")


def host_problem(host: str) -> str | None:
    """Why ``host`` is not a public DNS name (an IP in any spelling, a private-use or odd name).

    >>> host_problem("api.openai.com") is None, host_problem("0x7f.1"), host_problem("evil.com.")
    (True, 'the host 0x7f.1 is an IP address or not a DNS name', 'the host evil.com. ends with a dot')
    """
    if host.endswith("."):
        return f"the host {host} ends with a dot"
    labels = host.lower().split(".")
    if len(labels) < 2:
        return f"the host {host or '(none)'} is a single-label name, not a public DNS name"
    if not all(_LABEL.fullmatch(label) for label in labels) or not labels[-1].isalpha():
        return f"the host {host} is an IP address or not a DNS name"
    if any(label.startswith("xn--") for label in labels):
        return f"the host {host} is punycode: write a name a reviewer can read"
    for suffix in _PRIVATE_SUFFIXES:
        if host.lower() == suffix or host.lower().endswith("." + suffix):
            return f"the host {host} is a private-use name (.{suffix})"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo, NAT64), which is where it leads."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in ipaddress.IPv6Network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_allowed(address: str, *, local: bool = False) -> bool:
    """Whether a request may go to ``address``: a public one, or with ``local`` a loopback one.

    >>> address_allowed("8.8.8.8"), address_allowed("100.64.0.1"), address_allowed("::ffff:10.0.0.1")
    (True, False, False)
    """
    ip = ipaddress.ip_address(address.split("%")[0])
    if local:
        return ip.is_loopback
    inner = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    for candidate in (ip, inner) if inner is not None else (ip,):
        odd = candidate.is_multicast or candidate.is_reserved or candidate.is_unspecified
        if not candidate.is_global or odd or candidate.is_private or candidate.is_link_local:
            return False
        if any(candidate in network for network in _NOT_PUBLIC):
            return False
    return True


def _refused(host: str, address: str, *, local: bool) -> EndpointRefused:
    wanted = "this machine's loopback" if local else "a public address"
    return EndpointRefused(f"the host {host} leads to {address}, which is not {wanted}")


def checked_addresses(host: str, port: int, *, local: bool) -> list[str]:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as err:
        raise EndpointRefused(f"the host {host} does not resolve ({err})") from None
    addresses = [str(sockaddr[0]) for _, _, _, _, sockaddr in found]
    if not addresses:
        raise EndpointRefused(f"the host {host} does not resolve")
    for address in addresses:
        if not address_allowed(address, local=local):
            raise _refused(host, address, local=local)
    return addresses


def _connect(host: str, port: int, timeout: Any, source: Any, *, local: bool) -> socket.socket:
    """``socket.create_connection`` to an address checked by :func:`checked_addresses`, peer rechecked."""
    last: OSError | None = None
    for address in checked_addresses(host, port, local=local):
        try:
            sock = socket.create_connection((address, port), timeout, source)
        except OSError as err:
            last = err
            continue
        peer = str(sock.getpeername()[0])
        if not address_allowed(peer, local=local):  # the address connected is the one checked, or no request
            sock.close()
            raise _refused(host, peer, local=local)
        return sock
    raise last or OSError(f"no address of {host} answered")


def guarded_connector(*, local: bool = False) -> Callable[[str, str, int | None, float], Any]:
    """The connections of a submitted model (``ChatClient.connect``): checked addresses only, https
    unless ``local``. No proxy is ever consulted and the client follows no redirect (``chat_api``)."""

    def connect(scheme: str, host: str, port: int | None, timeout: float) -> http.client.HTTPConnection:
        if scheme != "https" and not local:
            raise EndpointRefused(f"http://{host} is refused: {URL_RULE}")
        connection = plain_connection(scheme, host, port, timeout)
        # http.client opens every socket through this attribute: the checked connection replaces it
        connection._create_connection = lambda where, wait, source: _connect(  # type: ignore[attr-defined]
            where[0], where[1], wait, source, local=local
        )
        return connection

    return connect


def endpoint_refusal(base_url: str, key_env: str | None) -> str | None:
    """Why a submitted model may not send requests to ``base_url`` with ``key_env`` (None: it may)."""
    if key_env is not None and (problem := key_env_problem(key_env)):
        return problem
    if is_local_form(base_url):
        if key_env is not None:
            return f"a key is never sent to the local endpoint {base_url}"
        if os.environ.get(LOCAL_ENDPOINT_ENV, "").rstrip("/") != base_url.rstrip("/"):
            return (
                f"{base_url} is a local endpoint, run only under `sago serve` (which sets "
                f"{LOCAL_ENDPOINT_ENV} to the address it serves)"
            )
        return None
    if problem := url_problem(base_url):
        return f"{base_url}: {problem}; {URL_RULE}"
    parts = urllib.parse.urlsplit(base_url)
    try:
        checked_addresses(parts.hostname or "", parts.port or 443, local=False)
    except EndpointRefused as err:
        return f"{base_url}: {err}"
    return None
