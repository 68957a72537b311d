"""What the sync and the asyncio client share: every request's shape, how its answer is read,
the error mapping, retries with idempotency keys, and the causal token.

It does no I/O. ``Session.exchange(call)`` is a generator that yields what to do next (send a
request, or sleep) and is sent what happened (the answer, or the transport's exception); it
returns the call's result or raises its typed error. ``Troupe`` drives it with blocking calls,
``AsyncTroupe`` with awaits, so the two cannot drift apart (the "sans-I/O" design of h11).
"""

from __future__ import annotations

import enum
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Generic, Mapping, Sequence, TypeVar, Union
from urllib.parse import quote

import httpx

from . import models
from .errors import (
    ConflictError,
    ConnectionFailedError,
    OutcomeUnknownError,
    TroupeError,
    UnavailableError,
    error_from_answer,
)

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 30.0
"""Each attempt's bound on connecting, sending and waiting for the answer (httpx's timeout)."""

CAUSAL_TOKEN_HEADER = "Troupe-Causal-Token"
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"


class Safety(enum.Enum):
    """What may be retried after a request was (perhaps) sent and no answer came back."""

    SAFE = "safe"
    """A read, or a write idempotent by nature (declaring a type): always safe to send again."""
    KEYED = "keyed"
    """A write that takes an ``Idempotency-Key``: sent again with the same key, the server
    answers the first attempt's answer and does nothing twice."""
    ONCE = "once"
    """Neither (an interactive step, begin): sent again only when the server said it did nothing
    (429, and the 503s but ``unavailable``, which a request that timed out inside the server also
    gets) or the connection was never made."""


@dataclass(frozen=True)
class RetrySettings:
    """Bounds on the client's retries of one request (both hold: whichever is reached first)."""

    max_attempts: int = 6
    """Attempts per request, the first included (1: never retry)."""
    max_seconds: float = 30.0
    """Time from the first attempt after which no retry starts (a longer Retry-After gives up)."""
    initial_backoff_seconds: float = 0.05
    """Wait before the first retry when the server names none; doubles per retry."""
    max_backoff_seconds: float = 2.0
    """Cap on the doubling wait (a server's Retry-After is honoured as it is, within max_seconds)."""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API operation: its request and how its successful answer becomes a result."""

    method: str
    path: str
    read: Callable[[Any, bool], T]
    """From the answer's JSON body (None when empty) and whether it was replayed."""
    safety: Safety = Safety.SAFE
    params: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    """Query parameters; a sequence value repeats its name (``key`` of a projection)."""
    body: Any = None
    """A JSON body (None: none), unless ``content`` is given."""
    content: bytes | None = None
    content_type: str = "application/json"


@dataclass(frozen=True)
class Send:
    """Send this request (the driver builds it with its httpx client)."""

    method: str
    path: str
    params: Mapping[str, str | Sequence[str]]
    headers: Mapping[str, str]
    content: bytes | None


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Union[Send, Sleep]
Outcome = Union[httpx.Response, Exception, None]


def segment(value: str) -> str:
    """A path segment, percent-encoded whole (ids and keys may hold '/', '[', spaces, ...)."""
    return quote(value, safe="")


def entity_path(type_name: str, entity_id: str) -> str:
    return f"/v1/entities/{segment(type_name)}/{segment(entity_id)}"


def merge_causal_tokens(held: str | None, received: str) -> str:
    """The per-data-centre maximum of two tokens (``<dc id>:<timestamp>`` pairs, ids ascending),
    so answers arriving out of order (asyncio) never move the token back. A token this client
    cannot parse replaces the held one: the server merged the request's token into it."""
    if not held:
        return received
    try:
        merged: dict[int, int] = {}
        for token in (held, received):
            for pair in filter(None, token.split(",")):
                dc, timestamp = pair.split(":")
                merged[int(dc)] = max(merged.get(int(dc), 0), int(timestamp))
    except ValueError:
        return received
    return ",".join(f"{dc}:{merged[dc]}" for dc in sorted(merged))


class Session:
    """The state one client keeps across requests: address, token, retry bounds, causal token."""

    def __init__(
        self,
        *,
        token: str | None,
        retry: RetrySettings,
        causal_token: str | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.token = token
        self.retry = retry
        self.causal_token = causal_token
        self._clock = clock
        # The blocking client is shared between threads: merging is a read-modify-write.
        self._token_lock = threading.Lock()

    def _headers(self, call: Call[Any], idempotency_key: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if call.content is not None or call.body is not None:
            headers["Content-Type"] = call.content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.causal_token:
            headers[CAUSAL_TOKEN_HEADER] = self.causal_token
        if idempotency_key:
            headers[IDEMPOTENCY_KEY_HEADER] = idempotency_key
        return headers

    def _remember(self, response: httpx.Response) -> None:
        token = response.headers.get(CAUSAL_TOKEN_HEADER)
        if token:
            with self._token_lock:
                self.causal_token = merge_causal_tokens(self.causal_token, token)

    def exchange(self, call: Call[T]) -> Generator[Step, Outcome, T]:
        """Runs ``call`` to its result, retrying within ``self.retry`` (see the module doc)."""
        content = call.content
        if content is None and call.body is not None:
            content = json.dumps(call.body, ensure_ascii=False).encode("utf-8")
        # One key for every attempt: the server then runs the write at most once.
        idempotency_key = uuid.uuid4().hex if call.safety is Safety.KEYED else None
        deadline = self._clock() + self.retry.max_seconds
        backoff = self.retry.initial_backoff_seconds
        attempt = 0
        while True:
            attempt += 1
            outcome = yield Send(
                call.method, call.path, call.params, self._headers(call, idempotency_key), content
            )
            error: TroupeError
            wait = backoff
            if isinstance(outcome, httpx.Response):
                self._remember(outcome)
                body = _json(outcome)
                if 200 <= outcome.status_code < 300:
                    return call.read(body, outcome.headers.get(REPLAYED_HEADER) == "true")
                retry_after = _retry_after(outcome)
                error = error_from_answer(outcome.status_code, body, retry_after)
                retry = _retries(error, call.safety, attempt)
                if retry_after is not None:
                    wait = retry_after
            elif isinstance(outcome, httpx.TransportError):
                error = ConnectionFailedError(f"{type(outcome).__name__}: {outcome}")
                error.__cause__ = outcome
                # A connection never made sent nothing; otherwise only a safe or keyed request
                # may go again.
                never_sent = isinstance(outcome, (httpx.ConnectError, httpx.ConnectTimeout))
                retry = never_sent or call.safety is not Safety.ONCE
            elif isinstance(outcome, Exception):
                raise outcome
            else:
                raise TypeError(f"the driver answered a Send with {outcome!r}")
            if not retry or attempt >= self.retry.max_attempts or self._clock() + wait > deadline:
                raise error
            yield Sleep(wait)
            backoff = min(backoff * 2, self.retry.max_backoff_seconds)


def _retries(error: TroupeError, safety: Safety, attempt: int) -> bool:
    if isinstance(error, OutcomeUnknownError):
        return safety is Safety.KEYED
    if isinstance(error, ConflictError):
        # With a key, a retry meets 409 conflict while the first attempt still runs (or may still
        # commit): asked again later it is replayed. A first attempt's conflict is the request's.
        return safety is Safety.KEYED and attempt > 1
    if isinstance(error, UnavailableError):
        # Also the answer to a request that outlived request-timeout-millis inside the server,
        # which may still complete: only a request that is safe to repeat goes again.
        return safety is not Safety.ONCE
    return error.retryable


def _json(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


# ---- The calls: one function per operation, shared by both clients. ----


def _written(body: Any, replayed: bool) -> models.Written:
    return models.Written.from_json(body or {}, replayed)


def projection_params(projection: Sequence[str] | None) -> dict[str, str | Sequence[str]]:
    """The query of a projection: only the keys named (``key``, repeated); ``[]`` none
    (``state=none``); ``None`` the whole state. A lone string is refused: it would be one key
    per character."""
    if projection is None:
        return {}
    if isinstance(projection, str):
        raise TypeError("projection is a sequence of key names, not one string")
    keys = list(projection)
    return {"key": keys} if keys else {"state": "none"}


def get_entity(
    type_name: str, entity_id: str, at: int | None, projection: Sequence[str] | None = None
) -> Call[models.EntityState]:
    params: dict[str, str | Sequence[str]] = {"at": str(at)} if at is not None else {}
    params.update(projection_params(projection))
    return Call("GET", entity_path(type_name, entity_id), lambda b, _: models.EntityState.from_json(b), params=params)


def patch_entity(
    type_name: str, entity_id: str, values: Mapping[str, Any], projection: Sequence[str] | None = None
) -> Call[models.Written]:
    return Call("PATCH", entity_path(type_name, entity_id), _written, Safety.KEYED, body=dict(values),
                params=projection_params(projection))


def delete_entity(type_name: str, entity_id: str) -> Call[models.Written]:
    return Call("DELETE", entity_path(type_name, entity_id), _written, Safety.KEYED)


def _key_path(type_name: str, entity_id: str, key: str) -> str:
    return f"{entity_path(type_name, entity_id)}/keys/{segment(key)}"


def get_key(type_name: str, entity_id: str, key: str) -> Call[Any]:
    return Call("GET", _key_path(type_name, entity_id, key), lambda b, _: b["value"])


def put_key(type_name: str, entity_id: str, key: str, value: Any) -> Call[models.Written]:
    # A JSON null is a value too: encode the body here rather than through Call.body.
    content = json.dumps(value, ensure_ascii=False).encode("utf-8")
    return Call("PUT", _key_path(type_name, entity_id, key), _written, Safety.KEYED, content=content)


def delete_key(type_name: str, entity_id: str, key: str) -> Call[models.Written]:
    return Call("DELETE", _key_path(type_name, entity_id, key), _written, Safety.KEYED)


def increment(
    type_name: str, entity_id: str, key: str, by: int, projection: Sequence[str] | None = None
) -> Call[models.Written]:
    path = _key_path(type_name, entity_id, key) + "/increment"
    return Call("POST", path, _written, Safety.KEYED, body={"by": by}, params=projection_params(projection))


def add_element(
    type_name: str, entity_id: str, key: str, element: Any, projection: Sequence[str] | None = None
) -> Call[models.Written]:
    path = _key_path(type_name, entity_id, key) + "/add"
    return Call("POST", path, _written, Safety.KEYED, body={"element": element},
                params=projection_params(projection))


def remove_element(
    type_name: str, entity_id: str, key: str, element: Any, projection: Sequence[str] | None = None
) -> Call[models.Written]:
    path = _key_path(type_name, entity_id, key) + "/remove"
    return Call("POST", path, _written, Safety.KEYED, body={"element": element},
                params=projection_params(projection))


def act(
    type_name: str, entity_id: str, action: str, args: Mapping[str, Any], projection: Sequence[str] | None = None
) -> Call[models.Written]:
    path = f"{entity_path(type_name, entity_id)}/actions/{segment(action)}"
    return Call("POST", path, _written, Safety.KEYED, body=dict(args), params=projection_params(projection))


def list_types() -> Call[list[models.JsonObject]]:
    return Call("GET", "/v1/types", lambda b, _: list(b["types"]))


def get_type(type_name: str) -> Call[models.JsonObject]:
    return Call("GET", f"/v1/types/{segment(type_name)}", lambda b, _: dict(b))


def put_type(type_name: str, spec: Mapping[str, Any] | str, migration: str | None) -> Call[models.JsonObject]:
    params = {"migration": migration} if migration else {}
    if isinstance(spec, str):
        # YAML, as ``troupe types apply`` sends it.
        return Call("PUT", f"/v1/types/{segment(type_name)}", lambda b, _: dict(b), params=params,
                    content=spec.encode("utf-8"), content_type="application/yaml")
    return Call("PUT", f"/v1/types/{segment(type_name)}", lambda b, _: dict(b), params=params, body=dict(spec))


def list_entities(
    type_name: str, after: str | None, from_id: str | None, limit: int | None, at: int | None, states: bool
) -> Call[models.EntityPage]:
    params: dict[str, str] = {}
    if after is not None:
        params["after"] = after
    if from_id is not None:
        params["from"] = from_id
    if limit is not None:
        params["limit"] = str(limit)
    if at is not None:
        params["at"] = str(at)
    if states:
        params["states"] = "true"
    return Call("GET", f"/v1/entities/{segment(type_name)}", lambda b, _: models.EntityPage.from_json(b), params=params)


def transact(
    operations: Sequence[models.Operation], reads: Sequence[str], mode: str | None
) -> Call[models.TransactionResult]:
    body: dict[str, Any] = {"ops": list(operations), "reads": [{"entity": e} for e in reads]}
    if mode is not None:
        body["mode"] = mode
    return Call("POST", "/v1/transactions", models.TransactionResult.from_json, Safety.KEYED, body=body)


def snapshot_read(entities: Sequence[str]) -> Call[models.SnapshotRead]:
    body = {"entities": [{"entity": e} for e in entities]}
    # A read-only transaction: safe to send again.
    return Call("POST", "/v1/snapshot-read", lambda b, _: models.SnapshotRead.from_json(b), body=body)


def _registration(body: Any, replayed: bool) -> models.DependencyRegistration:
    if "kind" in body:
        dependency = models.Dependency.from_json(body)
        return models.DependencyRegistration(dependency.id, int(body["txId"]), dependency, replayed)
    return models.DependencyRegistration(body.get("id", ""), int(body["txId"]), None, replayed)


def register_dependency(
    kind: str, leader: models.KeyReference, follower: models.KeyReference, function: str | None
) -> Call[models.DependencyRegistration]:
    from .ops import dependency_input

    body = dependency_input(kind, leader, follower, function)
    return Call("POST", "/v1/dependencies", _registration, Safety.KEYED, body=body)


def get_dependency(dependency_id: str) -> Call[models.Dependency]:
    return Call("GET", f"/v1/dependencies/{segment(dependency_id)}", lambda b, _: models.Dependency.from_json(b))


def deregister_dependency(dependency_id: str) -> Call[int]:
    """Answers the id of the transaction that deregistered it."""
    path = f"/v1/dependencies/{segment(dependency_id)}"
    return Call("DELETE", path, lambda b, _: int(b["txId"]), Safety.KEYED)


def entity_dependencies(type_name: str, entity_id: str) -> Call[models.EntityDependencies]:
    path = f"{entity_path(type_name, entity_id)}/dependencies"
    return Call("GET", path, lambda b, _: models.EntityDependencies.from_json(b))


def entity_versions(
    type_name: str, entity_id: str, before: int | None, limit: int | None
) -> Call[models.EntityVersions]:
    params: dict[str, str] = {}
    if before is not None:
        params["before"] = str(before)
    if limit is not None:
        params["limit"] = str(limit)
    path = f"{entity_path(type_name, entity_id)}/versions"
    return Call("GET", path, lambda b, _: models.EntityVersions.from_json(b), params=params)


def health() -> Call[models.JsonObject]:
    return Call("GET", "/v1/health", lambda b, _: dict(b))


# Interactive transactions. A step changes nothing durable but is not idempotent within the
# transaction (an increment sent twice counts twice), so steps are ONCE; commit takes a key.


def begin() -> Call[models.InteractiveTransactionOpened]:
    return Call(
        "POST",
        "/v1/transactions/begin",
        lambda b, _: models.InteractiveTransactionOpened(int(b["txId"]), int(b.get("idleTimeoutMillis", 0))),
        Safety.ONCE,
    )


def step_read(tx_id: int, entity: str) -> Call[models.EntityState]:
    return Call("POST", f"/v1/transactions/{tx_id}/read", lambda b, _: models.EntityState.from_json(b),
                Safety.SAFE, body={"entity": entity})


def step_write(tx_id: int, operation: models.KeyOperation) -> Call[models.EntityState]:
    return Call("POST", f"/v1/transactions/{tx_id}/write", lambda b, _: models.EntityState.from_json(b),
                Safety.ONCE, body=dict(operation))


def step_act(tx_id: int, operation: models.ActionOperation) -> Call[models.EntityState]:
    return Call("POST", f"/v1/transactions/{tx_id}/action", lambda b, _: models.EntityState.from_json(b),
                Safety.ONCE, body=dict(operation))


def commit(tx_id: int) -> Call[models.TransactionResult]:
    return Call("POST", f"/v1/transactions/{tx_id}/commit", models.TransactionResult.from_json, Safety.KEYED)


def abort(tx_id: int) -> Call[None]:
    # A lost answer to an abort that took effect would make a second attempt not_found: once.
    return Call("POST", f"/v1/transactions/{tx_id}/abort", lambda b, _: None, Safety.ONCE)
