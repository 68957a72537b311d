"""Retries with idempotency keys, Retry-After, the bounds, the causal token and the closed set of
error codes. A proxy (``proxy.py``) in front of the real server loses answers after the server
committed the write, or answers for it."""

from __future__ import annotations

import json
import time
from typing import Callable, Iterator

import httpx
import pytest

from troupe_client import RetrySettings, Troupe, errors, ops
from troupe_client._core import merge_causal_tokens

from .proxy import Answer, Plan, Proxy, Seen, answer_first, lose_first


@pytest.fixture()
def through(token: str | None) -> Iterator[Callable[..., tuple[Troupe, Proxy]]]:
    """Makes a client that talks to the server through a proxy following a plan."""
    made: list[tuple[Troupe, Proxy]] = []

    # More attempts than the default: on a loaded machine a retry may meet the first attempt
    # still recording its answer (409 conflict) a few times before it is replayed.
    def make(base_url: str, plan: Callable[[Seen], Plan], retry: RetrySettings = RetrySettings(max_attempts=12),
             causal_token: str | None = None) -> tuple[Troupe, Proxy]:
        proxy = Proxy(base_url, plan)
        http = httpx.Client(base_url=proxy.url, timeout=10.0,
                            limits=httpx.Limits(max_keepalive_connections=0))
        client = Troupe(proxy.url, token=token, retry=retry, http_client=http, causal_token=causal_token)
        made.append((client, proxy))
        return client, proxy

    yield make
    for client, proxy in made:
        client.close()
        proxy.close()


def writes_to(path_part: str) -> Callable[[Seen], bool]:
    return lambda request: request.method != "GET" and path_part in request.path


def test_a_lost_answer_is_retried_with_the_same_key_and_counted_once(
        base_url: str, through: Callable[..., tuple[Troupe, Proxy]], troupe: Troupe,
        account_type: str, unique: str) -> None:
    troupe.act(account_type, unique, "open", initial=10)
    client, proxy = through(base_url, lose_first(1, writes_to("/increment")))
    written = client.increment(account_type, unique, "logins", by=5)
    assert written.replayed, "the retry got the first attempt's answer"
    assert written.state is not None and written.state["logins"] == 5
    assert troupe.get_key(account_type, unique, "logins") == 5, "the increment ran once"
    keys = [r.headers.get("idempotency-key") for r in proxy.seen if "/increment" in r.path]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]


def test_every_kind_of_keyed_write_survives_a_lost_answer(
        base_url: str, through: Callable[..., tuple[Troupe, Proxy]], troupe: Troupe,
        account_type: str, unique: str) -> None:
    client, proxy = through(base_url, lose_first(1_000, lambda r: r.method != "GET"
                                                 and r.headers.get("idempotency-key") is not None
                                                 and not any(s.headers.get("idempotency-key") ==
                                                             r.headers.get("idempotency-key")
                                                             for s in proxy.seen[:-1])))
    # Every first attempt of a keyed write loses its answer; its retry is replayed.
    assert client.act(account_type, unique, "open", initial=50).replayed
    assert client.patch("Loose", unique, {"a": 1}).replayed
    assert client.put_key("Loose", unique, "b", 2).replayed
    assert client.delete_key("Loose", unique, "b").replayed
    assert client.add(account_type, unique, "tags", "x").replayed
    assert client.remove(account_type, unique, "tags", "x").replayed
    moved = client.transact([ops.act(f"{account_type}/{unique}", "withdraw", amount=20),
                             ops.assign(f"Loose/{unique}", "moved", 20)])
    assert moved.replayed and moved.tx_id > 0
    assert troupe.get(account_type, unique).state["balance"] == 30, "withdrawn once"
    with client.transaction() as tx:
        tx.act(f"{account_type}/{unique}", "withdraw", amount=5)
    assert tx.result is not None and tx.result.replayed
    assert troupe.get(account_type, unique).state["balance"] == 25, "committed once"
    assert client.delete("Loose", unique).replayed
    with pytest.raises(errors.NotFoundError):
        troupe.get("Loose", unique)


def test_an_interactive_step_is_not_sent_twice(
        base_url: str, through: Callable[..., tuple[Troupe, Proxy]], troupe: Troupe,
        account_type: str, unique: str) -> None:
    troupe.act(account_type, unique, "open", initial=10)
    client, proxy = through(base_url, lose_first(1, writes_to("/write")))
    with pytest.raises(errors.ConnectionFailedError):
        with client.transaction() as tx:
            tx.write(ops.increment(f"{account_type}/{unique}", "logins", 1))
    assert [r.path for r in proxy.seen].count(f"/v1/transactions/{tx.tx_id}/write") == 1
    assert troupe.get_key(account_type, unique, "logins") == 0, "aborted"


def test_unavailable_is_retried_after_retry_after(
        base_url: str, through: Callable[..., tuple[Troupe, Proxy]], troupe: Troupe, unique: str) -> None:
    troupe.put_key("Loose", unique, "a", 1)
    refusal = Answer(503, json.dumps({"error": "not_owner", "message": "moving"}).encode(), {"Retry-After": "1"})
    client, proxy = through(base_url, answer_first(2, refusal, lambda r: r.method == "GET"))
    started = time.monotonic()
    assert client.get("Loose", unique).state == {"a": 1}
    assert len(proxy.seen) == 3 and time.monotonic() - started >= 1.9, "waited Retry-After twice"


def test_unavailable_is_not_retried_for_an_interactive_step(
        base_url: str, through: Callable[..., tuple[Troupe, Proxy]], troupe: Troupe,
        account_type: str, unique: str) -> None:
    # 503 unavailable is also what a request that timed out inside the server gets, and it may
    # still complete: a step (not safe to repeat) is not sent again; a read step is.
    troupe.act(account_type, unique, "open", initial=10)
    unavailable = Answer(503, json.dumps({"error": "unavailable", "message": "slow"}).encode(), {"Retry-After": "0"})
    client, proxy = through(base_url, answer_first(1, unavailable, lambda r: r.path.endswith(("/write", "/read"))))
    with client.transaction() as tx:
        with pytest.raises(errors.UnavailableError):
            tx.write(ops.increment(f"{account_type}/{unique}", "logins", 1))
        assert tx.read(f"{account_type}/{unique}").state["logins"] == 0
        tx.abort()
    steps = [r.path.rpartition("/")[2] for r in proxy.seen if "/transactions/" in r.path]
    assert steps == ["begin", "write", "read", "abort"], "the write went once"


def test_retries_are_bounded(base_url: str, through: Callable[..., tuple[Troupe, Proxy]], unique: str) -> None:
    overloaded = Answer(429, json.dumps({"error": "overloaded", "message": "busy"}).encode(), {"Retry-After": "0"})
    client, proxy = through(base_url, lambda r: overloaded, RetrySettings(max_attempts=3))
    with pytest.raises(errors.OverloadedError) as refused:
        client.put_key("Loose", unique, "a", 1)
    assert refused.value.retryable and refused.value.status == 429 and refused.value.retry_after_seconds == 0
    assert len(proxy.seen) == 3
    # A Retry-After beyond the time bound gives up at once.
    slow = Answer(503, json.dumps({"error": "unavailable", "message": "full"}).encode(), {"Retry-After": "60"})
    client, proxy = through(base_url, lambda r: slow, RetrySettings(max_seconds=5))
    with pytest.raises(errors.UnavailableError):
        client.get("Loose", unique)
    assert len(proxy.seen) == 1


def test_outcome_unknown_is_retried_only_with_a_key(
        base_url: str, through: Callable[..., tuple[Troupe, Proxy]], troupe: Troupe, unique: str) -> None:
    unknown = Answer(500, json.dumps({"error": "outcome_unknown", "message": "?"}).encode())
    client, proxy = through(base_url, answer_first(1, unknown, lambda r: r.method != "GET"))
    assert client.put_key("Loose", unique, "a", 1).version
    assert len(proxy.seen) == 2
    client, proxy = through(base_url, answer_first(1, unknown, lambda r: r.method != "GET"))
    with pytest.raises(errors.OutcomeUnknownError):
        client.transaction().begin()  # begin takes no key: the client reports, never guesses
    assert len(proxy.seen) == 1


def test_no_server_is_a_connection_failure(unique: str) -> None:
    with socket_closed_port() as port:
        with Troupe(f"http://127.0.0.1:{port}", retry=RetrySettings(max_attempts=2)) as client:
            with pytest.raises(errors.ConnectionFailedError) as failed:
                client.get("Loose", unique)
    assert failed.value.status == 0


class socket_closed_port:
    """A port nothing listens on (bound, then closed)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])

    def __exit__(self, *_: object) -> None:
        pass


def test_the_causal_token_is_kept_and_sent(
        base_url: str, through: Callable[..., tuple[Troupe, Proxy]], unique: str) -> None:
    client, proxy = through(base_url, lambda r: "forward")
    first = client.put_key("Loose", unique, "a", 1)
    if client.causal_token is None:
        pytest.skip("the server sends no causal token (it has no data-centre name)")
    dc, _, timestamp = client.causal_token.partition(":")
    assert int(dc) > 0 and int(timestamp) >= (first.version or 0), client.causal_token
    assert "troupe-causal-token" not in proxy.seen[0].headers, "none held before the first answer"
    client.get("Loose", unique)
    assert proxy.seen[-1].headers["troupe-causal-token"] == f"{dc}:{timestamp}", "sent on"
    later = client.put_key("Loose", unique, "a", 2)
    assert int(client.causal_token.partition(":")[2]) >= (later.version or 0), "it moves on"
    # Another client (another process, another data centre) continues the session from it.
    follower, follower_proxy = through(base_url, lambda r: "forward", causal_token=client.causal_token)
    assert follower.get("Loose", unique).state == {"a": 2}
    assert follower_proxy.seen[0].headers["troupe-causal-token"] == client.causal_token


def test_causal_tokens_merge_per_data_centre() -> None:
    assert merge_causal_tokens(None, "2:1") == "2:1"
    # An older answer arriving late (concurrent asyncio requests) never moves the token back.
    assert merge_causal_tokens("1:500,7:10", "1:400,3:9") == "1:500,3:9,7:10"
    assert merge_causal_tokens("2:1", "garbage") == "garbage", "what the client cannot read, it takes"


def test_every_error_code_of_the_server_has_its_class(base_url: str) -> None:
    document = httpx.get(f"{base_url}/v1/openapi.json").json()
    codes = set(document["components"]["schemas"]["Error"]["properties"]["error"]["enum"])
    assert codes == set(errors.ERRORS_BY_CODE) == set(errors.STATUS_BY_CODE)
    responses = document["components"]["responses"]
    checked = 0
    for operations in document["paths"].values():
        for operation in operations.values():
            for status, answer in operation.get("responses", {}).items() if isinstance(operation, dict) else ():
                name = answer.get("$ref", "").rpartition("/")[2]
                for part in responses.get(name, {}).get("content", {}).get("application/json", {}) \
                        .get("schema", {}).get("allOf", []):
                    for code in part.get("properties", {}).get("error", {}).get("enum", []):
                        assert errors.STATUS_BY_CODE[code] == int(status), (code, status)
                        checked += 1
    assert checked > 0
    for code, error_class in errors.ERRORS_BY_CODE.items():
        raised = errors.error_from_answer(errors.STATUS_BY_CODE[code], {"error": code, "message": "m"}, None)
        assert type(raised) is error_class and raised.error == code
    assert isinstance(errors.error_from_answer(502, "<html>", None), errors.UnexpectedAnswerError)
