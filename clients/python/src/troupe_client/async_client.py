"""The asyncio client, ``AsyncTroupe``: the same calls as ``Troupe`` (``_core``), awaited."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, AsyncIterator, Mapping, Sequence, TypeVar

import httpx

from . import _core, models
from ._core import DEFAULT_TIMEOUT_SECONDS, Call, RetrySettings, Send, Session
from .errors import TroupeError

T = TypeVar("T")


class AsyncTroupe:
    """An asyncio client of one Troupe server (or data centre), safe to share between tasks.

    ``base_url`` like ``http://127.0.0.1:8080``; ``token`` a bearer token when the server requires
    one; ``retry`` bounds the retries of each request; ``causal_token`` a token to start from
    (``self.causal_token`` holds the newest the server sent, merged); ``http_client`` an httpx
    client of your own (proxies, TLS, limits), whose ``base_url`` is then the server's. Use it as
    an async context manager, or ``await aclose()``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        retry: RetrySettings = RetrySettings(),
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        causal_token: str | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._session = Session(token=token, retry=retry, causal_token=causal_token)
        self._http = http_client or httpx.AsyncClient(base_url=base_url, timeout=timeout_seconds)

    @property
    def causal_token(self) -> str | None:
        """The newest causal token the server sent (sent with every request)."""
        return self._session.causal_token

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncTroupe:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _run(self, call: Call[T]) -> T:
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
                    outcome = await self._http.send(request)
                except httpx.TransportError as failure:
                    outcome = failure
            else:
                await asyncio.sleep(step.seconds)
                outcome = None

    # ---- Entities, keys and actions ----

    async def get(
        self, type_name: str, entity_id: str, *, at: int | None = None, projection: Sequence[str] | None = None
    ) -> models.EntityState:
        """The entity's state (``at``: as of that version, within the history kept). With
        ``projection``, only the keys it names (a projection: e.g. ``["checking[c17]",
        "savings[c17]"]``, from one committed state; ``[]``: no key), rendered alone."""
        return await self._run(_core.get_entity(type_name, entity_id, at, projection))

    async def patch(
        self, type_name: str, entity_id: str, values: Mapping[str, Any], *, projection: Sequence[str] | None = None
    ) -> models.Written:
        """Assigns the keys in one turn (creates the entity if needed); the answer's state holds
        only the keys ``projection`` names, if given."""
        return await self._run(_core.patch_entity(type_name, entity_id, values, projection))

    async def delete(self, type_name: str, entity_id: str) -> models.Written:
        return await self._run(_core.delete_entity(type_name, entity_id))

    async def get_key(self, type_name: str, entity_id: str, key: str) -> Any:
        return await self._run(_core.get_key(type_name, entity_id, key))

    async def put_key(self, type_name: str, entity_id: str, key: str, value: Any) -> models.Written:
        return await self._run(_core.put_key(type_name, entity_id, key, value))

    async def delete_key(self, type_name: str, entity_id: str, key: str) -> models.Written:
        return await self._run(_core.delete_key(type_name, entity_id, key))

    async def increment(
        self, type_name: str, entity_id: str, key: str, by: int = 1, *, projection: Sequence[str] | None = None
    ) -> models.Written:
        return await self._run(_core.increment(type_name, entity_id, key, by, projection))

    async def add(
        self, type_name: str, entity_id: str, key: str, element: Any, *, projection: Sequence[str] | None = None
    ) -> models.Written:
        return await self._run(_core.add_element(type_name, entity_id, key, element, projection))

    async def remove(
        self, type_name: str, entity_id: str, key: str, element: Any, *, projection: Sequence[str] | None = None
    ) -> models.Written:
        return await self._run(_core.remove_element(type_name, entity_id, key, element, projection))

    async def act(
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
        return await self._run(_core.act(type_name, entity_id, action, {**(args or {}), **named}, projection))

    # ---- Listing ----

    async def list_entities(
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
        return await self._run(_core.list_entities(type_name, after, from_id, limit, at, states))

    async def iter_entities(
        self,
        type_name: str,
        *,
        from_id: str | None = None,
        limit: int | None = None,
        at: int | None = None,
        states: bool = False,
    ) -> AsyncIterator[models.ListedEntity]:
        """Every entity of the type (from ``from_id`` on), following the pages' cursors
        (``limit`` per page): each entity that exists throughout is listed exactly once."""
        page = await self.list_entities(type_name, from_id=from_id, limit=limit, at=at, states=states)
        while True:
            for entity in page.entities:
                yield entity
            if page.next is None:
                return
            page = await self.list_entities(type_name, after=page.next, limit=limit, at=at, states=states)

    # ---- Types ----

    async def list_types(self) -> list[models.JsonObject]:
        return await self._run(_core.list_types())

    async def get_type(self, type_name: str) -> models.JsonObject:
        return await self._run(_core.get_type(type_name))

    async def put_type(
        self, type_name: str, spec: Mapping[str, Any] | str, *, migration: str | None = None
    ) -> models.JsonObject:
        """Declares (or redeclares) a type from a spec: a mapping (sent as JSON) or YAML text."""
        return await self._run(_core.put_type(type_name, spec, migration))

    # ---- Transactions and snapshot reads ----

    async def transact(
        self, operations: Sequence[models.Operation], *, reads: Sequence[str] = (), mode: str | None = None
    ) -> models.TransactionResult:
        """A static transaction (operations from ``troupe_client.ops``): all or nothing."""
        return await self._run(_core.transact(operations, reads, mode))

    async def snapshot_read(self, entities: Sequence[str]) -> models.SnapshotRead:
        """A consistent cut of the entities (``Type/id``)."""
        return await self._run(_core.snapshot_read(entities))

    def transaction(self) -> AsyncTransaction:
        """An interactive transaction, begun on ``with``: committed when the block ends, aborted
        when it raises."""
        return AsyncTransaction(self)

    # ---- Dependencies ----

    async def register_dependency(
        self,
        kind: str,
        leader: models.KeyReference,
        follower: models.KeyReference,
        *,
        function: str | None = None,
    ) -> models.DependencyRegistration:
        return await self._run(_core.register_dependency(kind, leader, follower, function))

    async def get_dependency(self, dependency_id: str) -> models.Dependency:
        return await self._run(_core.get_dependency(dependency_id))

    async def deregister_dependency(self, dependency_id: str) -> int:
        """Deregisters; answers the id of the transaction that did."""
        return await self._run(_core.deregister_dependency(dependency_id))

    async def entity_dependencies(self, type_name: str, entity_id: str) -> models.EntityDependencies:
        return await self._run(_core.entity_dependencies(type_name, entity_id))

    async def entity_versions(
        self, type_name: str, entity_id: str, *, before: int | None = None, limit: int | None = None
    ) -> models.EntityVersions:
        """The entity's versions still in the journal, newest first, below the cursor ``before``
        (a previous page's ``next``), at most ``limit``: read each with ``get(..., at=version)``
        for the entity's history."""
        return await self._run(_core.entity_versions(type_name, entity_id, before, limit))

    async def health(self) -> models.JsonObject:
        return await self._run(_core.health())


class AsyncTransaction:
    """An interactive transaction: steps that see the transaction's own writes, then one commit.

    ``async with client.transaction() as tx:`` begins it, commits it when the block ends and
    aborts it when the block raises; ``commit()`` or ``abort()`` inside the block end it earlier. A failed
    step changes nothing and leaves the transaction open.
    """

    def __init__(self, client: AsyncTroupe) -> None:
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

    async def begin(self) -> AsyncTransaction:
        if self._opened is None:
            self._opened = await self._client._run(_core.begin())
        return self

    async def __aenter__(self) -> AsyncTransaction:
        return await self.begin()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._ended or self._opened is None:
            return
        if kind is None:
            await self.commit()
            return
        try:
            await self.abort()
        except TroupeError:
            pass  # the block's own error matters more; the server's idle timeout ends it anyway

    async def read(self, entity: str) -> models.EntityState:
        return await self._client._run(_core.step_read(self.tx_id, entity))

    async def write(self, operation: models.KeyOperation) -> models.EntityState:
        """A key operation (``troupe_client.ops``: assign, increment, add, remove, delete_key, delete)."""
        return await self._client._run(_core.step_write(self.tx_id, operation))

    async def act(self, entity: str, action: str, args: Mapping[str, Any] | None = None, **named: Any) -> models.EntityState:
        operation: models.ActionOperation = {"entity": entity, "action": action, "args": {**(args or {}), **named}}
        return await self._client._run(_core.step_act(self.tx_id, operation))

    async def commit(self) -> models.TransactionResult:
        self._ended = True
        self.result = await self._client._run(_core.commit(self.tx_id))
        return self.result

    async def abort(self) -> None:
        self._ended = True
        await self._client._run(_core.abort(self.tx_id))
