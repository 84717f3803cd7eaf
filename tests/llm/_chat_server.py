"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, scripted per test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(
    content: str = "ok",
    *,
    logprobs: list[dict[str, Any]] | None = None,
    usage: dict[str, int] | None = None,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A chat-completions response body with one choice."""
    choice: dict[str, Any] = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": content},
    }
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@dataclass
class Reply:
    """One scripted answer."""

    content: str = "ok"
    """Reply text (used when ``body`` is unset)."""
    status: int = 200
    body: dict[str, Any] | None = None
    """The whole JSON body; defaults to :func:`completion` of ``content`` (or an error body)."""
    raw: bytes | None = None
    """The body exactly as sent, instead of ``body``."""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers, e.g. ``Retry-After``."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    echo_header: str = ""
    """A request header (lower case) whose value the error body quotes, as some gateways do."""


@dataclass
class Received:
    """One request the server got."""

    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: dict[str, Any]


class ChatServer:
    """A threaded HTTP server answering ``POST /v1/chat/completions`` from a script.

    Scripted replies are used in order; once they run out, ``default`` answers. The server counts
    requests in flight, so tests can check a concurrency limit.

    Args:
        replies: Answers, in order.
        default: The answer after the script.
    """

    def __init__(self, replies: Iterable[Reply] = (), default: Reply | None = None) -> None:
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._replies = list(replies)
        self._default = default or Reply()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-chat-server", daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL of the API (``…/v1``)."""
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received, in order."""
        with self._lock:
            return [item.body for item in self.received]

    def script(self, *replies: Reply) -> None:
        """Queue more answers."""
        with self._lock:
            self._replies.extend(replies)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, received: Received) -> Reply:
        with self._lock:
            self.received.append(received)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self._replies.pop(0) if self._replies else self._default

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                received = Received(
                    path=self.path,
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=json.loads(raw or b"{}"),
                )
                reply = server._next_reply(received)
                try:
                    if reply.delay and server._stopping.wait(reply.delay):
                        return
                    self._answer(received, reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    server._done()

            def _answer(self, received: Received, reply: Reply) -> None:
                if received.path != "/v1/chat/completions":
                    reply = Reply(status=404, body={"error": {"message": f"no route {received.path}"}})
                body = reply.body
                if body is None:
                    body = (
                        completion(reply.content)
                        if reply.status < 400
                        else {"error": {"message": f"scripted {reply.status}", "type": "test"}}
                    )
                if reply.echo_header:
                    body = {
                        "error": {"message": f"rejected {reply.echo_header}: {received.headers.get(reply.echo_header)}"}
                    }
                data = json.dumps(body).encode() if reply.raw is None else reply.raw
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
