"""A submitted API model can reach neither a maintainer's secret nor a private network (issue 49).

A pull request writes submission.yaml and a maintainer runs `sago evaluate` on it, so each hostile file
below is refused by the validator (the PR gate) and by `sago evaluate`, before any connection: a listener
on loopback counts the connections, and sees none. The rules are benchmark/endpoints.py's; on the code
before it every case here was accepted (the validator passed it, `sago evaluate` sent the request, and
with `key_env: GITHUB_TOKEN` the token as its Authorization header).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.openai_stub import serve
from helpers.toy import toy_variant_set

from benchmark import paths
from benchmark.api import model_ref
from benchmark.chat_api import ChatClient, ChatError, ChatRequest, ChatSettings
from benchmark.cli import main
from benchmark.endpoints import (
    LOCAL_ENDPOINT_ENV,
    EndpointRefused,
    address_allowed,
    endpoint_refusal,
    guarded_connector,
)
from benchmark.errors import SagoError
from benchmark.harness import cli as harness_cli
from benchmark.packaged import ARTEFACTS
from benchmark.submissions.validate import validate_tree

SERVED_SHA = ARTEFACTS.get("smollm2-135m-instruct-q4_1").sha256
KEY_RULE = "must start with SAGO_API_KEY_"
URL_RULE = "must be https:// to a public host name"
SECRET = "ghp_maintainers-own-token-0123456789"

# (what is hostile, the model block's keys, what the refusal says); {port}: the counting listener's port,
# so that anything that would be sent to loopback is sent where it is counted.
HOSTILE: list[tuple[str, dict[str, str], str]] = [
    ("github token", {"key_env": "GITHUB_TOKEN"}, KEY_RULE),
    ("aws secret", {"key_env": "AWS_SECRET_ACCESS_KEY"}, KEY_RULE),
    ("hub token", {"key_env": "HF_TOKEN"}, KEY_RULE),
    ("another api's key", {"key_env": "OPENAI_API_KEY"}, KEY_RULE),
    ("the prefix alone", {"key_env": "SAGO_API_KEY_"}, KEY_RULE),
    ("prefix inside", {"key_env": "X_SAGO_API_KEY_A"}, KEY_RULE),
    ("clear http", {"base_url": "http://api.llm-vendor.com"}, URL_RULE),
    ("key to loopback", {"base_url": "http://127.0.0.1:{port}", "key_env": "SAGO_API_KEY_X"}, "local"),
    ("https loopback", {"base_url": "https://127.0.0.1:{port}"}, URL_RULE),
    ("cloud metadata", {"base_url": "https://169.254.169.254"}, URL_RULE),
    ("private 10/8", {"base_url": "https://10.0.0.5"}, URL_RULE),
    ("private 192.168/16", {"base_url": "https://192.168.1.1"}, URL_RULE),
    ("private 172.16/12", {"base_url": "https://172.16.0.1"}, URL_RULE),
    ("cgnat", {"base_url": "https://100.64.0.1"}, URL_RULE),
    ("unspecified", {"base_url": "https://0.0.0.0"}, URL_RULE),
    ("decimal ip", {"base_url": "https://2130706433"}, URL_RULE),
    ("hex ip", {"base_url": "https://0x7f.1"}, URL_RULE),
    ("octal ip", {"base_url": "https://0177.0.0.1"}, URL_RULE),
    ("localhost", {"base_url": "https://localhost"}, URL_RULE),
    ("a localhost name", {"base_url": "https://api.localhost"}, URL_RULE),
    ("trailing dot", {"base_url": "https://llm-vendor.com."}, URL_RULE),
    ("punycode", {"base_url": "https://xn--pple-43d.com"}, URL_RULE),
    ("odd port", {"base_url": "https://llm-vendor.com:8443"}, URL_RULE),
    ("internal name", {"base_url": "https://metadata.internal"}, URL_RULE),
    ("mdns name", {"base_url": "https://printer.local"}, URL_RULE),
    ("single label", {"base_url": "https://intranet"}, URL_RULE),
    ("local, not a served file", {"base_url": "http://127.0.0.1:{port}", "snapshot": "mine"}, "local"),
    # already refused by the address pattern before; kept so that no rewrite of it lets them in
    ("userinfo", {"base_url": "https://user@llm-vendor.com"}, "expected form"),
    ("ipv6 loopback", {"base_url": "https://[::1]"}, "expected form"),
    ("ipv6 link-local", {"base_url": "https://[fe80::1]"}, "expected form"),
]


class Listener:
    """A TCP listener on loopback that counts connections and the bytes sent to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.received = b""
        self.handled = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.settimeout(2)
            with contextlib.suppress(OSError):
                self.received += conn.recv(65536)
            conn.close()
            self.handled.set()


@pytest.fixture()
def listener() -> Iterator[Listener]:
    counting = Listener()
    yield counting
    counting.sock.close()


@pytest.fixture()
def everything_resolves_to_the_listener(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every host name leads to loopback, so a request that slipped through would be counted."""
    real = socket.getaddrinfo

    def loopback(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback)


def submission(model: dict[str, str], port: int) -> dict[str, Any]:
    block = {
        "kind": "api",
        "base_url": "https://api.llm-vendor.com",
        "model": "m",
        "snapshot": SERVED_SHA,
        **{k: v.format(port=port) for k, v in model.items()},
    }
    return {"name": "Hostile", "model": block, "license": "MIT", "parameters": 1, "contact": "x"}


def write(root: Path, slug: str, content: dict[str, Any]) -> None:
    (root / slug).mkdir(parents=True)
    (root / slug / "submission.yaml").write_text(yaml.safe_dump(content))


@pytest.fixture()
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A submissions folder `sago evaluate` reads; the toy set stands in for sago-v1."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    monkeypatch.setattr(paths, "SUBMISSIONS_DIR", folder)
    monkeypatch.setattr(harness_cli, "open_variant_set", lambda name, version: toy_variant_set(("alpha",), 2))
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    monkeypatch.delenv(LOCAL_ENDPOINT_ENV, raising=False)
    return folder


EVALUATE = ["--version", "v1", "--profile", "smoke", "--no-progress"]


def test_there_are_twenty_distinct_hostile_files() -> None:
    assert len({case for case, _, _ in HOSTILE}) == len(HOSTILE) >= 20


@pytest.mark.parametrize(("case", "model", "says"), HOSTILE, ids=[case for case, _, _ in HOSTILE])
def test_the_validator_refuses_each_hostile_file(
    case: str, model: dict[str, str], says: str, tmp_path: Path, listener: Listener
) -> None:
    write(tmp_path / "submissions", "org__hostile", submission(model, listener.port))
    report = validate_tree(tmp_path / "submissions", paths.VARIANTS_DIR)
    assert len(report.failures) == 1, report.failures
    failure = report.failures[0]
    assert failure.path.endswith("org__hostile/submission.yaml") and says in failure.problem, failure
    assert "\n" not in failure.problem and listener.connections == 0


@pytest.mark.parametrize(("case", "model", "says"), HOSTILE, ids=[case for case, _, _ in HOSTILE])
@pytest.mark.usefixtures("everything_resolves_to_the_listener")
def test_sago_evaluate_refuses_each_hostile_file_before_any_connection(
    case: str,
    model: dict[str, str],
    says: str,
    root: Path,
    listener: Listener,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write(root, "org__hostile", submission(model, listener.port))
    assert main(["evaluate", "org__hostile", *EVALUATE]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and SECRET not in err, err
    assert listener.connections == 0 and not (root / "org__hostile" / "results").exists()


@pytest.mark.parametrize(
    ("addresses", "refused"),
    [
        (["10.1.2.3"], True),
        (["93.184.215.14", "192.168.0.9"], True),  # ANY address that is not public refuses the host
        (["::ffff:10.0.0.1"], True),
        (["64:ff9b::a00:1"], True),  # NAT64 of 10.0.0.1
        (["2002:a00:1::"], True),  # 6to4 of 10.0.0.1
        (["fd00::1"], True),
        (["100.100.100.200"], True),  # a cloud's metadata service in CGNAT space
        (["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"], False),
    ],
)
def test_a_name_is_refused_when_any_address_it_resolves_to_is_not_public(
    addresses: list[str], refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        family = {4: socket.AF_INET, 6: socket.AF_INET6}
        return [(family[6 if ":" in a else 4], socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    problem = endpoint_refusal("https://api.llm-vendor.com", "SAGO_API_KEY_VENDOR")
    assert (problem is not None) == refused, problem
    if refused:
        assert problem is not None and "which is not a public address" in problem


def test_sago_evaluate_refuses_a_name_that_resolves_to_a_private_address(
    root: Path, listener: Listener, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file passes the validator (a name is all it shows); the address is checked when it runs."""
    write(root, "org__rebind", submission({"key_env": "SAGO_API_KEY_VENDOR"}, listener.port))
    monkeypatch.setenv("SAGO_API_KEY_VENDOR", "k" * 20)
    assert validate_tree(root, paths.VARIANTS_DIR).failures == ()
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: real("127.0.0.1", port, *a, **k))
    assert main(["evaluate", "org__rebind", *EVALUATE]) == 2
    err = capsys.readouterr().err.strip()
    assert "api.llm-vendor.com leads to 127.0.0.1, which is not a public address" in err and "\n" not in err
    assert listener.connections == 0


def test_the_connection_goes_to_the_checked_address_and_its_peer_is_checked(
    listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS answers a public address; the connection is made to that address (no second lookup), and a
    socket that ends up on loopback anyway is closed before a byte (or the key) is sent."""
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, 1, 6, "", ("93.184.215.14", port))],
    )
    asked: list[object] = []

    def divert(address: Any, *args: Any) -> socket.socket:
        asked.append(address)
        sock = socket.socket()  # straight to the listener: the patched lookup is not asked again
        sock.connect(("127.0.0.1", listener.port))
        return sock

    monkeypatch.setattr(socket, "create_connection", divert)
    monkeypatch.setenv("SAGO_API_KEY_VENDOR", SECRET)
    settings = ChatSettings("https://api.llm-vendor.com", "m", "SAGO_API_KEY_VENDOR", retries=0)
    client = ChatClient(settings, connect=guarded_connector())
    with pytest.raises(EndpointRefused, match="leads to 127.0.0.1, which is not a public address"):
        client.complete(ChatRequest("x", 4))
    assert asked == [("93.184.215.14", 443)] and listener.handled.wait(5)
    assert listener.received == b""  # not even a TLS hello, let alone the key


def test_no_redirect_is_followed(listener: Listener) -> None:
    """A server that redirects must not get the Authorization header sent on to the new host."""

    class Redirect(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{listener.port}/steal")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        # local mode is the deliberate bypass of the public check: the test server is on loopback
        url = f"http://127.0.0.1:{server.server_address[1]}"
        client = ChatClient(ChatSettings(url, "m", retries=0), connect=guarded_connector(local=True))
        with pytest.raises(ChatError, match=r"redirected \(HTTP 302\) to http://127.0.0.1.*not followed"):
            client.complete(ChatRequest("x", 4))
    finally:
        server.shutdown()
    assert listener.connections == 0


def test_the_public_connector_never_speaks_clear_http(listener: Listener) -> None:
    connect = guarded_connector()
    with pytest.raises(EndpointRefused, match="is refused"):
        connect("http", "127.0.0.1", listener.port, 5).connect()
    assert listener.connections == 0


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("127.0.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("192.0.0.8", False),
        ("198.18.0.1", False),
        ("224.0.0.251", False),
        ("240.0.0.1", False),
        ("255.255.255.255", False),
        ("::", False),
        ("::1", False),
        ("fe80::1", False),
        ("ff02::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:8.8.8.8", False),  # a mapped address is no answer a public name gives
    ],
)
def test_which_addresses_are_public(address: str, public: bool) -> None:
    assert address_allowed(address) is public


def test_the_maintainers_served_model_runs_only_where_sago_serve_points(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The committed llama-server form (http://127.0.0.1:PORT, no key, a packaged file's sha256) passes
    the validator, is refused by `sago evaluate` alone, and runs when SAGO_LOCAL_ENDPOINT names it."""
    with serve() as stub:
        write(root, "org__served", submission({"base_url": stub.url}, 0))
        assert validate_tree(root, paths.VARIANTS_DIR).failures == ()
        assert main(["evaluate", "org__served", *EVALUATE]) == 2
        assert f"{LOCAL_ENDPOINT_ENV} to the address it serves" in capsys.readouterr().err
        monkeypatch.setenv(LOCAL_ENDPOINT_ENV, stub.url.rsplit(":", 1)[0] + ":9")  # another port
        assert main(["evaluate", "org__served", *EVALUATE]) == 2
        assert not stub.bodies
        monkeypatch.setenv(LOCAL_ENDPOINT_ENV, stub.url)
        assert main(["evaluate", "org__served", *EVALUATE]) == 0
    assert stub.bodies and all("Authorization" not in h for h in stub.headers)
    assert (root / "org__served" / "results" / "sago-v1" / "v1" / "run.json").is_file()


def test_sago_serve_names_its_address_for_its_command_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import contextmanager

    from benchmark.variants import llamacpp as serve_module

    @contextmanager
    def fake(artefact: str, **kwargs: object) -> Iterator[str]:
        yield "http://127.0.0.1:8094"

    monkeypatch.setattr(serve_module, "served", fake)
    monkeypatch.delenv(LOCAL_ENDPOINT_ENV, raising=False)
    seen = tmp_path / "env"
    code = f"import os, pathlib; pathlib.Path({str(seen)!r}).write_text(os.environ['{LOCAL_ENDPOINT_ENV}'])"
    assert main(["serve", "smollm2-135m-instruct-q4_1", "--", "python3", "-c", code]) == 0
    assert seen.read_text() == "http://127.0.0.1:8094" and LOCAL_ENDPOINT_ENV not in os.environ


def test_the_python_api_keeps_the_same_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_ref("api:m@https://api.openai.com#SAGO_API_KEY_OPENAI").model.model_dump()["key_env"]
    with pytest.raises(SagoError, match=KEY_RULE):
        model_ref("api:m@https://evil-llm.com#GITHUB_TOKEN")
    with pytest.raises(SagoError, match=URL_RULE):
        model_ref("api:m@https://169.254.169.254")
    monkeypatch.delenv(LOCAL_ENDPOINT_ENV, raising=False)
    local = model_ref("api:m@http://127.0.0.1:8094").model
    assert endpoint_refusal(local.model_dump()["base_url"], None) is not None  # `sago serve` only


def test_the_committed_llama_server_submission_still_validates_and_runs_under_sago_serve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmark.submissions import load_submission

    slug = "huggingfacetb__smollm2-135m-instruct-q4_1-llama-server"
    model = load_submission(slug, paths.SUBMISSIONS_DIR).model.model_dump()
    monkeypatch.setenv(LOCAL_ENDPOINT_ENV, "http://127.0.0.1:8094")  # what `make api-smoke` serves
    assert endpoint_refusal(model["base_url"], model["key_env"]) is None
    report = validate_tree(paths.SUBMISSIONS_DIR, paths.VARIANTS_DIR)
    assert not [f for f in report.failures if slug in f.path]
