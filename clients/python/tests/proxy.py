"""A small HTTP/1.1 proxy in front of the real server that loses answers or answers for it, so
the tests can make a write's answer go missing after the server committed it (what a dropped
connection does) and watch the client retry with its idempotency key.

One request per connection (it closes after answering): the tests' clients keep no connections
alive, so each attempt is a request the proxy sees and counts.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from typing import Callable, Literal, Union
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Seen:
    """A request as the proxy received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Answer:
    """An answer the proxy gives itself, without asking the server."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


Forward = Literal["forward"]
LoseAnswer = Literal["lose-answer"]
Plan = Union[Forward, LoseAnswer, Answer]


def _read_message(connection: socket.socket) -> bytes:
    """One HTTP message (headers and a Content-Length body) from the socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _parse(message: bytes) -> Seen:
    head, _, body = message.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Seen(method, path, headers, body)


class Proxy:
    """Listens on 127.0.0.1; ``plan(request)`` decides each request's fate; ``add_headers`` are
    added to every forwarded answer."""

    def __init__(self, target_url: str, plan: Callable[[Seen], Plan]) -> None:
        target = urlsplit(target_url)
        self._target = (target.hostname or "127.0.0.1", target.port or 80)
        self._plan = plan
        self.add_headers: dict[str, str] = {}
        self.seen: list[Seen] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        with connection:
            message = _read_message(connection)
            if not message:
                return
            request = _parse(message)
            self.seen.append(request)
            plan = self._plan(request)
            if isinstance(plan, Answer):
                headers = {"Content-Type": "application/json", "Content-Length": str(len(plan.body)),
                           "Connection": "close", **plan.headers}
                lines = f"HTTP/1.1 {plan.status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                connection.sendall(lines.encode("latin-1") + b"\r\n" + plan.body)
                return
            with socket.create_connection(self._target) as upstream:
                upstream.sendall(message)
                answer = _read_message(upstream)
            if plan == "lose-answer":
                return  # the server did the work; the client hears nothing
            head, _, body = answer.partition(b"\r\n\r\n")
            extra = "".join(f"\r\n{k}: {v}" for k, v in self.add_headers.items()).encode("latin-1")
            connection.sendall(head + extra + b"\r\nConnection: close\r\n\r\n" + body)

    def close(self) -> None:
        self._server.close()


def lose_first(count: int, matches: Callable[[Seen], bool]) -> Callable[[Seen], Plan]:
    """A plan that loses the answers of the first ``count`` requests that match."""
    lost = [0]

    def plan(request: Seen) -> Plan:
        if matches(request) and lost[0] < count:
            lost[0] += 1
            return "lose-answer"
        return "forward"

    return plan


def answer_first(count: int, answer: Answer, matches: Callable[[Seen], bool]) -> Callable[[Seen], Plan]:
    """A plan that answers the first ``count`` matching requests itself with ``answer``."""
    given = [0]

    def plan(request: Seen) -> Plan:
        if matches(request) and given[0] < count:
            given[0] += 1
            return answer
        return "forward"

    return plan


