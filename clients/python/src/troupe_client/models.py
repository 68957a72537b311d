"""The answers of the API as typed, immutable records (the OpenAPI document's schemas).

Versions are commit timestamps (64-bit integers above 2^53: Python's ints hold them exactly).
States are plain JSON values: ``dict[str, Any]`` of keys to values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, TypedDict, Union

JsonObject = dict[str, Any]


def _object(value: Any) -> JsonObject:
    return dict(value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class EntityState:
    """An entity read (``EntityState``): its type, id, keys and the version they were written at."""

    type: str
    id: str
    state: JsonObject
    version: int

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> EntityState:
        return cls(body["type"], body["id"], _object(body.get("state")), int(body["version"]))


@dataclass(frozen=True)
class Written:
    """The answer to a single write (a key, a patch, an action, a delete).

    ``version`` is the write's commit timestamp and ``state`` the entity's state after it (for the
    writes that answer one). A retry whose first attempt committed but whose answer was lost gets
    the answer rebuilt from the server's record (``replayed``): a turn that ran as a transaction
    then names only its ``tx_id`` and no version.
    """

    version: int | None
    state: JsonObject | None = None
    tx_id: int | None = None
    replayed: bool = False

    @classmethod
    def from_json(cls, body: Mapping[str, Any], replayed: bool) -> Written:
        version = body.get("version")
        state = body.get("state")
        tx_id = body.get("txId")
        return cls(
            int(version) if version is not None else None,
            _object(state) if state is not None else None,
            int(tx_id) if tx_id is not None else None,
            replayed,
        )


@dataclass(frozen=True)
class EntityOutcome:
    """What a transaction did to one entity: the version it read and the one it wrote."""

    entity: str
    read_version: int
    version: int
    wrote: bool


@dataclass(frozen=True)
class ReadOutcome:
    """A state a transaction (or a snapshot read) read."""

    entity: str
    version: int
    state: JsonObject

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ReadOutcome:
        return cls(body["entity"], int(body["version"]), _object(body.get("state")))


@dataclass(frozen=True)
class TransactionResult:
    """A committed transaction. A replayed answer rebuilt from the server's record carries only
    the transaction id (``entities`` and ``reads`` empty, ``replayed`` true)."""

    tx_id: int
    entities: Sequence[EntityOutcome] = ()
    reads: Sequence[ReadOutcome] = ()
    replayed: bool = False

    @classmethod
    def from_json(cls, body: Mapping[str, Any], replayed: bool) -> TransactionResult:
        return cls(
            int(body["txId"]),
            tuple(
                EntityOutcome(
                    e["entity"], int(e["readVersion"]), int(e["version"]), bool(e["wrote"])
                )
                for e in body.get("entities", ())
            ),
            tuple(ReadOutcome.from_json(r) for r in body.get("reads", ())),
            replayed,
        )

    def read(self, entity: str) -> ReadOutcome:
        """The read of ``entity`` (``Type/id``); KeyError if the transaction did not read it."""
        for outcome in self.reads:
            if outcome.entity == entity:
                return outcome
        raise KeyError(entity)


@dataclass(frozen=True)
class SnapshotRead:
    """A consistent cut: each state equals the entity read with ``at=timestamp``."""

    timestamp: int
    entities: Sequence[ReadOutcome]

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SnapshotRead:
        return cls(
            int(body["timestamp"]),
            tuple(ReadOutcome.from_json(r) for r in body.get("entities", ())),
        )

    def state(self, entity: str) -> JsonObject:
        """The state of ``entity`` (``Type/id``) in the cut; KeyError if it was not read."""
        for outcome in self.entities:
            if outcome.entity == entity:
                return outcome.state
        raise KeyError(entity)


@dataclass(frozen=True)
class KeyReference:
    """One end of a dependency: a key of an entity (``Type/id``)."""

    entity: str
    key: str

    def to_json(self) -> JsonObject:
        return {"entity": self.entity, "key": self.key}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> KeyReference:
        return cls(body["entity"], body["key"])


@dataclass(frozen=True)
class Dependency:
    """A registered dependency (``function`` only for ``update``; ``contribution``, when this is
    a dependency an entity follows, the leader's last forwarded value to an aggregate)."""

    id: str
    kind: str
    leader: KeyReference
    follower: KeyReference
    function: str | None = None
    contribution: Any = None
    tx_id: int | None = None
    """The transaction that registered it (only in the answer to a registration)."""

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Dependency:
        tx_id = body.get("txId")
        return cls(
            body["id"],
            body["kind"],
            KeyReference.from_json(body["leader"]),
            KeyReference.from_json(body["follower"]),
            body.get("function"),
            body.get("contribution"),
            int(tx_id) if tx_id is not None else None,
        )


@dataclass(frozen=True)
class DependencyRegistration:
    """The answer to a registration: the dependency, or (``replayed`` and rebuilt after a lost
    answer) only its id and the transaction that registered it."""

    id: str
    tx_id: int
    dependency: Dependency | None
    replayed: bool = False


@dataclass(frozen=True)
class EntityDependencies:
    """The dependencies an entity leads and those it follows."""

    entity: str
    version: int
    leads: Sequence[Dependency]
    follows: Sequence[Dependency]

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> EntityDependencies:
        return cls(
            body["entity"],
            int(body["version"]),
            tuple(Dependency.from_json(d) for d in body.get("leads", ())),
            tuple(Dependency.from_json(d) for d in body.get("follows", ())),
        )


@dataclass(frozen=True)
class ListedEntity:
    """One entity of a listing: its id, its version (now, or as of the listing's ``at``) and,
    when the listing asked for states, its state."""

    id: str
    version: int
    state: JsonObject | None = None


@dataclass(frozen=True)
class EntityPage:
    """One page of a type's entities, ordered by id; ``next`` is the cursor of the next page
    (pass it as ``after``), ``None`` on the last page. A page may hold fewer entities than its
    limit and still have a ``next``."""

    type: str
    entities: Sequence[ListedEntity]
    next: str | None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> EntityPage:
        following = body.get("next")
        return cls(
            body.get("type", ""),
            tuple(
                ListedEntity(e["id"], int(e["version"]), _object(e["state"]) if "state" in e else None)
                for e in body.get("entities", ())
            ),
            str(following) if following is not None else None,
        )


@dataclass(frozen=True)
class EntityVersions:
    """An entity's versions still in the server's journal, newest first; each is readable with
    ``get(..., at=version)``. ``next`` is the cursor of the next page (pass it as ``before``),
    ``None`` on the last page."""

    entity: str
    versions: Sequence[int]
    next: int | None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> EntityVersions:
        following = body.get("next")
        return cls(
            str(body.get("entity", "")),
            tuple(int(version) for version in body.get("versions", ())),
            int(following) if following is not None else None,
        )


@dataclass(frozen=True)
class InteractiveTransactionOpened:
    """An open interactive transaction: its id and how long the server keeps it idle."""

    tx_id: int
    idle_timeout_millis: int = field(default=0)


# Transaction operations, as the request body carries them (see ``troupe_client.ops``).
class ActionOperation(TypedDict, total=False):
    entity: str
    action: str
    args: JsonObject


class KeyOperation(TypedDict, total=False):
    entity: str
    op: str
    key: str
    value: Any
    by: int
    element: Any


class DependencyOperation(TypedDict, total=False):
    op: str
    dependency: JsonObject
    id: str
    entity: str


Operation = Union[ActionOperation, KeyOperation, DependencyOperation]
