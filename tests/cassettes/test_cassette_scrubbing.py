"""No credential is written to a cassette, wherever it travels, and a scrubbed cassette still replays.

A fake OAuth provider and API on 127.0.0.1 send credentials every way the issue lists: form fields,
a token in the URL path, signed-URL query parameters, a JSON ``jwt``, tokens in JSON responses, an
``X-Api-Key`` response header and a server that echoes the request back. Every test reads the raw
bytes of the cassette files for every secret, then replays with the server stopped.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import requests

import agenteval as ae
from agenteval.cache.cassettes import PLACEHOLDER, Cassettes
from agenteval.errors import CassetteMissError, ConfigError
from tests.cassettes._servers import LocalServer
from tests.llm._chat_server import ChatServer, Reply
from tests.test_evaluation import final_response

CLIENT_SECRET = "cs-live-9f8e7d6c5b4a3f2e1d0c"
PASSWORD = "correct-Horse-42-battery"
ACCESS_TOKEN = "at-5f2b9c7e1a3d4f6b8c0e"
REFRESH_TOKEN = "rt-0a9b8c7d6e5f4a3b2c1d"
SERVER_KEY = "srv-7c6b5a4f3e2d1c0b9a8f"
BOT_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
AMZ_SIGNATURE = "8c1f3b0a9d2e4f5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c"
SAS_SIGNATURE = "Zk9PQ2xNTXhvbmV5LTEyMzQ1Ng"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEyMyJ9.c2lnbmF0dXJlLXZhbHVlLTEyMw"
SECRETS = [
    CLIENT_SECRET,
    PASSWORD,
    ACCESS_TOKEN,
    REFRESH_TOKEN,
    SERVER_KEY,
    BOT_TOKEN,
    AMZ_SIGNATURE,
    SAS_SIGNATURE,
    JWT,
]


class OAuthServer(LocalServer):
    """A token endpoint and an API that wants its bearer token, and echoes every request it gets."""

    def __init__(self) -> None:
        self.received: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                outer.received.append(self.path)
                self._answer(200, self._echo(b""))

            def do_POST(self) -> None:
                outer.received.append(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/oauth/token":
                    self._token(dict(parse_qsl(body.decode())))
                elif self.headers.get("Authorization") != f"Bearer {ACCESS_TOKEN}":
                    self._answer(401, {"error": "invalid_token", "echo": self._echo(body)})
                else:
                    self._answer(200, self._echo(body))

            def _token(self, form: dict[str, str]) -> None:
                granted = form.get("client_secret") == CLIENT_SECRET or form.get("password") == PASSWORD
                if not granted:
                    self._answer(401, {"error": "invalid_client"})
                    return
                token = {"access_token": ACCESS_TOKEN, "refresh_token": REFRESH_TOKEN, "token_type": "Bearer"}
                self._answer(200, {**token, "expires_in": 3600}, {"X-Api-Key": SERVER_KEY})

            def _echo(self, body: bytes) -> dict[str, Any]:
                parts = urlsplit(self.path)
                return {
                    "path": parts.path,
                    "query": dict(parse_qsl(parts.query)),
                    "headers": dict(self.headers.items()),
                    "body": body.decode(),
                }

            def _answer(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)


def make_agent(url: str) -> Any:
    """An agent that signs in (OAuth client credentials, then a password grant) and calls the API every way."""

    async def agent(message: str) -> str:
        async with httpx.AsyncClient(base_url=url) as client:
            granted = await client.post(
                "/oauth/token",
                data={"grant_type": "client_credentials", "client_id": "agent", "client_secret": CLIENT_SECRET},
            )
            token = granted.raise_for_status().json()["access_token"]
            again = await client.post(
                "/oauth/token", data={"grant_type": "password", "username": "u", "password": PASSWORD}
            )
            assert again.json()["refresh_token"]
            auth = {"Authorization": f"Bearer {token}"}
            echoed = (await client.post("/api/ask", json={"question": message}, headers=auth)).raise_for_status()
            session = await client.post("/api/session", json={"jwt": JWT, "user": "u"}, headers=auth)
            sent = await client.get(f"/bot{BOT_TOKEN}/sendMessage", params={"chat_id": "42", "text": message})
            signed = {"X-Amz-Signature": AMZ_SIGNATURE, "X-Amz-Expires": "300", "sig": SAS_SIGNATURE}
            download = await client.get("/files/report.pdf", params=signed)
        statuses = [response.status_code for response in (granted, again, echoed, session, sent, download)]
        question = json.loads(echoed.json()["body"])["question"]
        return f"{question}: {statuses}"

    return agent


def evaluate(url: str, cassettes: Path | Cassettes, mode: str = "auto") -> ae.EvaluationReport:
    options: dict[str, Any] = {"cassette": cassettes}
    if not isinstance(cassettes, Cassettes):
        options["cassette_mode"] = mode
    ev = ae.Evaluator("oauth-app", make_agent(url), progress=False, **options)
    expected = "hello: [200, 200, 200, 200, 200, 200]"
    return ev.evaluate(
        ae.EvalSet.of("oauth", [ae.EvalCase.of("signin", "hello", expect=expected)]), metrics=[final_response()]
    )


def outcome(report: ae.EvaluationReport) -> list[tuple[object, ...]]:
    cases = report.cases[["eval_id", "status", "error_message"]]
    turns = report.turns[["eval_id", "actual_response"]]
    return [*cases.itertuples(index=False, name=None), *turns.itertuples(index=False, name=None)]


def written(directory: Path) -> bytes:
    return b"".join(file.read_bytes() for file in sorted(directory.rglob("*.yaml")))


def test_an_oauth_token_exchange_is_recorded_without_a_credential_and_replays_offline(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    with OAuthServer() as server:
        recorded = evaluate(server.url, cassettes, "record")
        url = server.url
    assert recorded.passed, recorded.cases.to_dict("records")
    assert len(server.received) == 6

    raw = written(cassettes)
    assert raw
    for secret in SECRETS:
        assert secret.encode() not in raw, f"{secret} was written to a cassette"
    text = raw.decode()
    assert "access_token: REDACTED" in text or '"access_token": "REDACTED"' in text
    assert "/botREDACTED/sendMessage?chat_id=42&text=hello" in text
    assert "/files/report.pdf?X-Amz-Expires=300" in text
    assert "x-api-key:\n      - redacted" in text.lower()

    replayed = evaluate(url, cassettes, "replay")

    assert outcome(replayed) == outcome(recorded)
    assert len(server.received) == 6


def test_declared_names_and_patterns_are_scrubbed_too_and_replay(tmp_path: Path) -> None:
    tenant, account = "tenant-blue-whale", "acct-20240611"

    def options(mode: str) -> Cassettes:
        return Cassettes(tmp_path, mode, scrub_names=["X-Tenant"], scrub_patterns=[r"acct-\d{8}", re.compile("whale")])  # type: ignore[arg-type]

    def call(url: str) -> list[Any]:
        with httpx.Client() as client:
            first = client.post(f"{url}/api/notes", json={"account": account}, headers={"X-Tenant": tenant})
            second = client.get(f"{url}/accounts/{account}/notes", params={"owner": "blue-whale"})
        return [first.json()["echo"]["body"], second.json()["path"], second.json()["query"]]

    with OAuthServer() as server:
        cassettes = options("record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            live = call(server.url)
    raw = written(tmp_path)
    assert tenant.encode() not in raw and account.encode() not in raw and b"whale" not in raw
    assert b"x-tenant" in raw.lower()

    cassettes = options("replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert call(server.url) == [
            live[0].replace(account, PLACEHOLDER),
            f"/accounts/{PLACEHOLDER}/notes",
            {"owner": f"blue-{PLACEHOLDER}"},
        ]


def test_a_secret_is_replaced_where_it_appeared_before_it_was_known_as_one(tmp_path: Path) -> None:
    # The first request carries the key in a field no name marks; only the second names it. The first
    # request is recorded with the placeholder, which matches the key when it is sent again.
    key = "k9Jd83hsPq02mZxLw7"

    def call(url: str) -> list[int]:
        with httpx.Client() as client:
            first = client.post(f"{url}/api/setup", json={"note": f"use {key} for later"})
            second = client.post(f"{url}/api/notes", json={}, headers={"X-Service-Key": key})
        return [first.status_code, second.status_code]

    with OAuthServer() as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            assert call(server.url) == [401, 401]
    assert key.encode() not in written(tmp_path)

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert call(server.url) == [401, 401]
        with pytest.raises(CassetteMissError, match="differs in body"), httpx.Client() as client:
            client.post(f"{server.url}/api/setup", json={"note": f"use {key} for good"})


@pytest.mark.parametrize(
    "path",
    [
        "/v1/models/gpt-4o-mini-2024-07-18",
        "/v1/threads/thread_abc123XYZ456def/messages",
        "/v1/files/file-9f8e7d6c5b4a3f2e1d0c9b8a",
        "/users/123e4567-e89b-12d3-a456-426614174000",
        "/v1beta/models/gemini-1.5-pro:generateContent",
    ],
)
def test_ordinary_path_segments_are_kept(tmp_path: Path, path: str) -> None:
    with OAuthServer() as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            requests.get(f"{server.url}{path}", timeout=5)

    assert f"{path}\n".encode() in written(tmp_path)


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        (f"/bot{BOT_TOKEN}/getMe", "/botREDACTED/getMe"),
        ("/v1/keys/sk-proj-abcdef0123456789abcdef/usage", "/v1/keys/REDACTED/usage"),
        (f"/verify/{JWT}", "/verify/REDACTED"),
    ],
)
def test_a_token_in_the_url_path_is_replaced_and_the_request_still_replays(
    tmp_path: Path, path: str, kept: str
) -> None:
    with OAuthServer() as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            requests.get(f"{server.url}{path}", timeout=5)
    raw = written(tmp_path)
    assert f"{kept}\n".encode() in raw
    assert path.encode() not in raw

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert requests.get(f"{server.url}{path}", timeout=5).json()["path"] == kept


def test_what_only_sits_beside_a_credential_is_kept(tmp_path: Path) -> None:
    # The description under a tool's "password" property and the HttpOnly of a cookie are no secrets:
    # they must not be searched for and replaced in the model's reply.
    reply = "Your session password is kept HttpOnly."
    tool = {"name": "login", "parameters": {"properties": {"password": {"type": "string", "description": reply}}}}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [tool]}
    cookie = {"Set-Cookie": "session=c00k1e-5e55i0n-0123456789; Path=/; HttpOnly"}

    def call(url: str) -> Any:
        return requests.post(f"{url}/chat/completions", json=body, timeout=5).json()["choices"][0]["message"]["content"]

    with ChatServer([Reply(reply, headers=cookie)]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            assert call(server.url) == reply
    raw = written(tmp_path)
    assert b"c00k1e-5e55i0n-0123456789" not in raw
    assert b"HttpOnly" in raw and reply.encode() in raw

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert call(server.url) == reply


def test_a_cassette_recorded_before_form_fields_and_signatures_were_scrubbed_still_replays(tmp_path: Path) -> None:
    def call(url: str) -> list[int]:
        with httpx.Client() as client:
            signed = client.get(f"{url}/files/report.pdf", params={"X-Amz-Expires": "300", "sig": SAS_SIGNATURE})
            token = client.post(f"{url}/oauth/token", data={"client_id": "agent", "client_secret": CLIENT_SECRET})
        return [signed.status_code, token.status_code]

    with OAuthServer() as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            assert call(server.url) == [200, 200]
    file = tmp_path / "set" / "case" / "run-1.yaml"
    text = file.read_text(encoding="utf-8")
    # What an older agenteval wrote: it kept both.
    text = text.replace("X-Amz-Expires=300\n", f"X-Amz-Expires=300&sig={SAS_SIGNATURE}\n")
    text = text.replace("body: client_id=agent\n", f"body: client_id=agent&client_secret={CLIENT_SECRET}\n")
    assert text.count(SAS_SIGNATURE) == 1 and text.count(CLIENT_SECRET) == 1
    file.write_text(text, encoding="utf-8")

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert call(server.url) == [200, 200]


class CompressedServer(LocalServer):
    """Answers with a gzipped JSON body holding a token, and counts requests."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                data = gzip.compress(json.dumps({"access_token": ACCESS_TOKEN, "note": "zipped"}).encode())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)


@pytest.mark.parametrize("library", ["httpx", "requests"])
def test_a_compressed_response_is_scrubbed_and_replays_whole(tmp_path: Path, library: str) -> None:
    def call(url: str) -> Any:
        if library == "httpx":
            with httpx.Client() as client:
                return client.get(url).json()
        return requests.get(url, timeout=5).json()

    with CompressedServer() as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            assert call(server.url)["access_token"] == ACCESS_TOKEN
    assert ACCESS_TOKEN.encode() not in written(tmp_path)

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert call(server.url) == {"access_token": PLACEHOLDER, "note": "zipped"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scrub_names": "X-Tenant"}, r"scrub_names must be a list of names, not the string 'X-Tenant'"),
        ({"scrub_names": ["ok", ""]}, r"scrub_names holds '': each must be a non-empty string"),
        ({"scrub_patterns": ["acct-(\\d+"]}, r"scrub_patterns holds 'acct-\(\\\\d\+', not a valid regular expression"),
        ({"scrub_patterns": [b"acct"]}, r"scrub_patterns holds b'acct': each must be a regular expression of text"),
    ],
)
def test_bad_scrub_options_are_refused_with_the_culprit_named(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Cassettes(tmp_path, **options)


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield


def test_data_under_names_that_data_often_has_is_kept_and_replays(tmp_path: Path) -> None:
    # A logprob's "token", an issue's "key", a tokenizer's "eos_token" and a page token are data: a judge
    # reading logprobs (llm_verifier_pairwise) and an agent reading the issue must get them back on replay.
    completion = {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "issue PROJ-1234 is fixed"},
                "logprobs": {"content": [{"token": "<score_A>", "logprob": -0.1, "top_logprobs": [{"token": "8"}]}]},
            }
        ],
        "issue": {"key": "PROJ-1234", "summary": "Fix PROJ-1234 login", "eos_token": "<|endoftext|>"},
        "next_page_token": "page-2",
    }
    request = {"model": "m", "messages": [{"role": "user", "content": "PROJ-1234?"}], "key": "PROJ-1234"}

    def call(url: str) -> Any:
        return requests.post(f"{url}/chat/completions", json=request, timeout=5).json()

    with ChatServer([Reply(body=completion)]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            assert call(server.url) == completion
    assert PLACEHOLDER.encode() not in written(tmp_path)

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        assert call(server.url) == completion


def test_a_secret_under_a_name_that_data_often_has_is_still_replaced(tmp_path: Path) -> None:
    secret = "tk9f8e7d6c5b4a3f2e1d0c9b8a"
    with ChatServer([Reply(body={"token": secret, "key": "AKIAIOSFODNN7EXAMPLE"})]) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            requests.post(f"{server.url}/chat/completions", json={"token": secret}, timeout=5)
    raw = written(tmp_path)
    assert secret.encode() not in raw and b"AKIAIOSFODNN7EXAMPLE" not in raw


class RawServer(LocalServer):
    """Answers every request with one raw body, or with the request's own body (``echo``)."""

    def __init__(self, body: bytes = b"", content_type: str = "text/plain", echo: bool = False) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                received = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                data = received if echo else body
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)


def test_a_form_secret_echoed_percent_encoded_is_replaced(tmp_path: Path) -> None:
    password = "Tr0ub4dor&3x+y/z=long"
    with RawServer(echo=True) as server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            requests.post(f"{server.url}/login", data={"user": "me", "password": password}, timeout=5)
    raw = written(tmp_path)
    assert b"Tr0ub4dor" not in raw


def test_credentials_in_xml_and_in_json_inside_a_string_are_replaced(tmp_path: Path) -> None:
    secret_key, session_token = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "FQoGZXIvYXdzEJr1K2" + "x" * 40
    sts = (
        "<AssumeRoleResponse><Credentials><AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>"
        f"<SecretAccessKey>{secret_key}</SecretAccessKey><SessionToken>{session_token}</SessionToken>"
        "<Expiration>2026-12-07T12:00:00Z</Expiration></Credentials></AssumeRoleResponse>"
    ).encode()
    gateway = json.dumps({"statusCode": 200, "body": json.dumps({"access_token": ACCESS_TOKEN, "scope": "read"})})
    with RawServer(sts, "text/xml") as xml_server, RawServer(gateway.encode(), "application/json") as json_server:
        cassettes = Cassettes(tmp_path, "record")
        with cassettes.active(), cassettes.case("set", "case", 1):
            requests.post(f"{xml_server.url}/sts", data={"Action": "AssumeRole"}, timeout=5)
            requests.post(f"{json_server.url}/invoke", json={"q": 1}, timeout=5)
    raw = written(tmp_path)
    for secret in (secret_key, session_token, "ASIAIOSFODNN7EXAMPLE", ACCESS_TOKEN):
        assert secret.encode() not in raw, secret
    assert b"2026-12-07T12:00:00Z" in raw and b"read" in raw

    cassettes = Cassettes(tmp_path, "replay")
    with cassettes.active(), cassettes.case("set", "case", 1):
        answer = requests.post(f"{xml_server.url}/sts", data={"Action": "AssumeRole"}, timeout=5).text
        assert f"<SessionToken>{PLACEHOLDER}</SessionToken>" in answer
        body = json.loads(requests.post(f"{json_server.url}/invoke", json={"q": 1}, timeout=5).json()["body"])
        assert body == {"access_token": PLACEHOLDER, "scope": "read"}
