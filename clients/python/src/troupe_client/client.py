"""The blocking client, ``Troupe``. Every method is one call of ``_core`` driven with httpx."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any, Iterator, Mapping, Sequence, TypeVar

import httpx

from . import _core, models
from ._core import DEFAULT_TIMEOUT_SECONDS, Call, RetrySettings, Send, Session
from .errors import TroupeError

T = TypeVar("T")


class Troupe:
    """A client of one Troupe server (or data centre), safe to share between threads.

    ``base_url`` like ``http://127.0.0.1:8080``; ``token`` a bearer token when the server requires
    one; ``retry`` bounds the retries of each request; ``causal_token`` a token to start from
    (``self.causal_token`` holds the newest the server sent, merged); ``http_client`` an httpx
    client of your own (proxies, TLS, limits), whose ``base_url`` is then the server's. Use it as
    a context manager, or ``close()`` it.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        retry: RetrySettings = RetrySettings(),
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        causal_token: str | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._session = Session(token=token, retry=retry, causal_token=causal_token)
        self._http = http_client or httpx.Client(base_url=base_url, timeout=timeout_seconds)

    @property
    def causal_token(self) -> str | None:
        """The newest causal token the server sent (sent with every request)."""
        return self._session.causal_token

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Troupe:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        exchange = self._session.exchange(call)
        outcome: _core.Outcome = None
        while True:
            try:
                step = exchange.send(outcome)
            except StopIteration as finished:
                return finished.value  # type: ignore[no-any-return]
            if isinstance(step, Send):
                request = self._http.build_request(
                    step.method, step.path, params=step.params, headers=step.headers, content=step.content
                )
                try:
                    outcome = self._http.send(request)
                except httpx.TransportError as failure:
                    outcome = failure
            else:
                time.sleep(step.seconds)
                outcome = None

    # ---- Entities, keys and actions ----

    def get(
        self, type_name: str, entity_id: str, *, at: int | None = None, projection: Sequence[str] | None = None
    ) -> models.EntityState:
        """The entity's state (``at``: as of that version, within the history kept). With
        ``projection``, only the keys it names (a projection: e.g. ``["checking[c17]",
        "savings[c17]"]``, from one committed state; ``[]``: no key), rendered alone."""
        return self._run(_core.get_entity(type_name, entity_id, at, projection))

    def patch(
        self, type_name: str, entity_id: str, values: Mapping[str, Any], *, projection: Sequence[str] | None = None
    ) -> models.Written:
        """Assigns the keys in one turn (creates the entity if needed); the answer's state holds
        only the keys ``projection`` names, if given."""
        return self._run(_core.patch_entity(type_name, entity_id, values, projection))

    def delete(self, type_name: str, entity_id: str) -> models.Written:
        return self._run(_core.delete_entity(type_name, entity_id))

    def get_key(self, type_name: str, entity_id: str, key: str) -> Any:
        return self._run(_core.get_key(type_name, entity_id, key))

    def put_key(self, type_name: str, entity_id: str, key: str, value: Any) -> models.Written:
        return self._run(_core.put_key(type_name, entity_id, key, value))

    def delete_key(self, type_name: str, entity_id: str, key: str) -> models.Written:
        return self._run(_core.delete_key(type_name, entity_id, key))

    def increment(
        self, type_name: str, entity_id: str, key: str, by: int = 1, *, projection: Sequence[str] | None = None
    ) -> models.Written:
        return self._run(_core.increment(type_name, entity_id, key, by, projection))

    def add(
        self, type_name: str, entity_id: str, key: str, element: Any, *, projection: Sequence[str] | None = None
    ) -> models.Written:
        return self._run(_core.add_element(type_name, entity_id, key, element, projection))

    def remove(
        self, type_name: str, entity_id: str, key: str, element: Any, *, projection: Sequence[str] | None = None
    ) -> models.Written:
        return self._run(_core.remove_element(type_name, entity_id, key, element, projection))

    def act(
        self,
        type_name: str,
        entity_id: str,
        action: str,
        args: Mapping[str, Any] | None = None,
        *,
        projection: Sequence[str] | None = None,
        **named: Any,
    ) -> models.Written:
        """Runs a declared action; parameters as a dict, as keywords, or both. ``projection``:
        the answer's state holds only those keys (``[]``: none, only the version); an action
        parameter named ``projection`` goes in ``args``."""
        return self._run(_core.act(type_name, entity_id, action, {**(args or {}), **named}, projection))

    # ---- Listing ----

    def list_entities(
        self,
        type_name: str,
        *,
        after: str | None = None,
        from_id: str | None = None,
        limit: int | None = None,
        at: int | None = None,
        states: bool = False,
    ) -> models.EntityPage:
        """One page of the type's entities in id order: after the cursor ``after`` (a previous
        page's ``next``), or from the id ``from_id`` on (a range scan); at most ``limit``; as of
        version ``at`` (every page at one version is a consistent cut); with their states if
        ``states``."""
        return self._run(_core.list_entities(type_name, after, from_id, limit, at, states))

    def iter_entities(
        self,
        type_name: str,
        *,
        from_id: str | None = None,
        limit: int | None = None,
        at: int | None = None,
        states: bool = False,
    ) -> Iterator[models.ListedEntity]:
        """Every entity of the type (from ``from_id`` on), following the pages' cursors
        (``limit`` per page): each entity that exists throughout is listed exactly once."""
        page = self.list_entities(type_name, from_id=from_id, limit=limit, at=at, states=states)
        while True:
            yield from page.entities
            if page.next is None:
                return
            page = self.list_entities(type_name, after=page.next, limit=limit, at=at, states=states)

    # ---- Types ----

    def list_types(self) -> list[models.JsonObject]:
        return self._run(_core.list_types())

    def get_type(self, type_name: str) -> models.JsonObject:
        return self._run(_core.get_type(type_name))

    def put_type(
        self, type_name: str, spec: Mapping[str, Any] | str, *, migration: str | None = None
    ) -> models.JsonObject:
        """Declares (or redeclares) a type from a spec: a mapping (sent as JSON) or YAML text."""
        return self._run(_core.put_type(type_name, spec, migration))

    # ---- Transactions and snapshot reads ----

    def transact(
        self, operations: Sequence[models.Operation], *, reads: Sequence[str] = (), mode: str | None = None
    ) -> models.TransactionResult:
        """A static transaction (operations from ``troupe_client.ops``): all or nothing."""
        return self._run(_core.transact(operations, reads, mode))

    def snapshot_read(self, entities: Sequence[str]) -> models.SnapshotRead:
        """A consistent cut of the entities (``Type/id``)."""
        return self._run(_core.snapshot_read(entities))

    def transaction(self) -> Transaction:
        """An interactive transaction, begun on ``with``: committed when the block ends, aborted
        when it raises."""
        return Transaction(self)

    # ---- Dependencies ----

    def register_dependency(
        self,
        kind: str,
        leader: models.KeyReference,
        follower: models.KeyReference,
        *,
        function: str | None = None,
    ) -> models.DependencyRegistration:
        return self._run(_core.register_dependency(kind, leader, follower, function))

    def get_dependency(self, dependency_id: str) -> models.Dependency:
        return self._run(_core.get_dependency(dependency_id))

    def deregister_dependency(self, dependency_id: str) -> int:
        """Deregisters; answers the id of the transaction that did."""
        return self._run(_core.deregister_dependency(dependency_id))

    def entity_dependencies(self, type_name: str, entity_id: str) -> models.EntityDependencies:
        return self._run(_core.entity_dependencies(type_name, entity_id))

    def entity_versions(
        self, type_name: str, entity_id: str, *, before: int | None = None, limit: int | None = None
    ) -> models.EntityVersions:
        """The entity's versions still in the journal, newest first, below the cursor ``before``
        (a previous page's ``next``), at most ``limit``: read each with ``get(..., at=version)``
        for the entity's history."""
        return self._run(_core.entity_versions(type_name, entity_id, before, limit))

    def health(self) -> models.JsonObject:
        return self._run(_core.health())


class Transaction:
    """An interactive transaction: steps that see the transaction's own writes, then one commit.

    ``with client.transaction() as tx:`` begins it, commits it when the block ends and aborts it
    when the block raises; ``commit()`` or ``abort()`` inside the block end it earlier. A failed
    step changes nothing and leaves the transaction open.
    """

    def __init__(self, client: Troupe) -> None:
        self._client = client
        self._opened: models.InteractiveTransactionOpened | None = None
        self._ended = False
        self.result: models.TransactionResult | None = None
        """The commit's answer, once committed."""

    @property
    def tx_id(self) -> int:
        if self._opened is None:
            raise RuntimeError("the transaction has not begun")
        return self._opened.tx_id

    def begin(self) -> Transaction:
        if self._opened is None:
            self._opened = self._client._run(_core.begin())
        return self

    def __enter__(self) -> Transaction:
        return self.begin()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._ended or self._opened is None:
            return
        if kind is None:
            self.commit()
            return
        try:
            self.abort()
        except TroupeError:
            pass  # the block's own error matters more; the server's idle timeout ends it anyway

    def read(self, entity: str) -> models.EntityState:
        return self._client._run(_core.step_read(self.tx_id, entity))

    def write(self, operation: models.KeyOperation) -> models.EntityState:
        """A key operation (``troupe_client.ops``: assign, increment, add, remove, delete_key, delete)."""
        return self._client._run(_core.step_write(self.tx_id, operation))

    def act(self, entity: str, action: str, args: Mapping[str, Any] | None = None, **named: Any) -> models.EntityState:
        operation: models.ActionOperation = {"entity": entity, "action": action, "args": {**(args or {}), **named}}
        return self._client._run(_core.step_act(self.tx_id, operation))

    def commit(self) -> models.TransactionResult:
        self._ended = True
        self.result = self._client._run(_core.commit(self.tx_id))
        return self.result

    def abort(self) -> None:
        self._ended = True
        self._client._run(_core.abort(self.tx_id))
