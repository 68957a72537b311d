"""The shared core without a server: the retry schedule (backoff, Retry-After, both bounds) and
what each kind of call may repeat, by driving ``Session.exchange`` with made-up outcomes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from troupe_client import RetrySettings, errors
from troupe_client._core import Call, Safety, Send, Session, Sleep


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def answer(status: int, body: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
    content = json.dumps(body).encode() if body is not None else b""
    return httpx.Response(status, content=content, headers=headers or {})


def drive(call: Call[Any], outcomes: list[Any], retry: RetrySettings = RetrySettings()) -> tuple[Any, list[float], list[Send]]:
    """Runs the exchange, answering each Send with the next outcome; returns the result (or the
    raised error), the sleeps and the requests."""
    clock = FakeClock()
    session = Session(token="secret", retry=retry, causal_token=None, clock=clock)
    exchange = session.exchange(call)
    sleeps: list[float] = []
    sent: list[Send] = []
    reply: Any = None
    try:
        while True:
            step = exchange.send(reply)
            if isinstance(step, Sleep):
                sleeps.append(step.seconds)
                clock.now += step.seconds
                reply = None
            else:
                sent.append(step)
                reply = outcomes.pop(0)
    except StopIteration as finished:
        return finished.value, sleeps, sent
    except errors.TroupeError as error:
        return error, sleeps, sent


def keyed() -> Call[Any]:
    return Call("PUT", "/v1/entities/A/a/keys/k", lambda body, replayed: (body, replayed), Safety.KEYED, body=1)


OVERLOADED = {"error": "overloaded", "message": "busy"}


def test_backoff_doubles_up_to_its_cap_within_the_attempts() -> None:
    retry = RetrySettings(max_attempts=6, initial_backoff_seconds=0.5, max_backoff_seconds=2.0)
    error, sleeps, sent = drive(keyed(), [answer(429, OVERLOADED)] * 6, retry)
    assert isinstance(error, errors.OverloadedError)
    assert sleeps == [0.5, 1.0, 2.0, 2.0, 2.0] and len(sent) == 6
    keys = {request.headers["Idempotency-Key"] for request in sent}
    assert len(keys) == 1, "one key for every attempt"
    assert sent[0].headers["Authorization"] == "Bearer secret"


def test_retry_after_is_honoured_and_the_time_bound_holds() -> None:
    result, sleeps, _ = drive(keyed(), [answer(503, OVERLOADED | {"error": "not_owner"}, {"Retry-After": "3"}),
                                        answer(200, {"version": 7}, {"Idempotent-Replayed": "true"})])
    assert sleeps == [3.0] and result == ({"version": 7}, True)
    retry = RetrySettings(max_seconds=10.0)
    error, sleeps, sent = drive(keyed(), [answer(429, OVERLOADED, {"Retry-After": "4"})] * 5, retry)
    assert isinstance(error, errors.OverloadedError) and sleeps == [4.0, 4.0] and len(sent) == 3


@pytest.mark.parametrize("safety, repeats", [(Safety.SAFE, True), (Safety.KEYED, True), (Safety.ONCE, False)])
def test_a_lost_answer_is_repeated_only_when_safe(safety: Safety, repeats: bool) -> None:
    call: Call[Any] = Call("POST", "/x", lambda body, replayed: body, safety)
    lost = httpx.ReadError("connection reset")
    outcome, _, sent = drive(call, [lost, answer(200, {"ok": True})])
    if repeats:
        assert outcome == {"ok": True} and len(sent) == 2
    else:
        assert isinstance(outcome, errors.ConnectionFailedError) and outcome.__cause__ is lost and len(sent) == 1
    # A connection never made sent nothing: always repeated.
    outcome, _, sent = drive(call, [httpx.ConnectError("refused"), answer(200, {"ok": True})])
    assert outcome == {"ok": True} and len(sent) == 2


def test_what_each_code_repeats() -> None:
    unknown = answer(500, {"error": "outcome_unknown", "message": "?"})
    conflict = answer(409, {"error": "conflict", "message": "running"})
    unavailable = answer(503, {"error": "unavailable", "message": "timed out"})
    ok = answer(200, {"version": 1})
    once: Call[Any] = Call("POST", "/x", lambda body, replayed: body, Safety.ONCE)
    assert drive(keyed(), [unknown, ok])[0] == ({"version": 1}, False)
    assert isinstance(drive(once, [unknown, ok])[0], errors.OutcomeUnknownError)
    # conflict: the request's own on a first attempt; the first attempt still running on a retry.
    assert isinstance(drive(keyed(), [conflict, ok])[0], errors.ConflictError)
    assert drive(keyed(), [unknown, conflict, ok])[0] == ({"version": 1}, False)
    assert isinstance(drive(once, [unavailable, ok])[0], errors.UnavailableError)
    assert drive(keyed(), [unavailable, ok])[0] == ({"version": 1}, False)
    refused = drive(keyed(), [answer(409, {"error": "aborted", "reason": "lock_conflict", "message": "m"})])[0]
    assert isinstance(refused, errors.AbortedError) and refused.reason == "lock_conflict"
    odd = drive(keyed(), [answer(502, None)])[0]
    assert isinstance(odd, errors.UnexpectedAnswerError) and odd.status == 502


def test_a_projection_is_repeated_key_parameters_or_no_state() -> None:
    from troupe_client import _core

    assert _core.get_entity("T", "e", None).params == {}
    assert _core.get_entity("T", "e", 7, ["a,b", "c[1]"]).params == {"at": "7", "key": ["a,b", "c[1]"]}
    assert _core.act("T", "e", "go", {}, []).params == {"state": "none"}
    with pytest.raises(TypeError):
        _core.patch_entity("T", "e", {"a": 1}, "a")
    request = httpx.Request("GET", "http://x/v1/entities/T/e", params=_core.get_entity("T", "e", None, ["a,b", "c[1]"]).params)
    assert request.url.query == b"key=a%2Cb&key=c%5B1%5D"
