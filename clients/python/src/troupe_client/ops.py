"""Builders of the operations of a static transaction (``POST /v1/transactions``).

Entities are named ``Type/id``::

    client.transact([
        ops.act("Account/alice", "withdraw", amount=30),
        ops.act("Account/bob", "deposit", amount=30),
        ops.assign("Ledger/2026", "last", "alice->bob"),
    ], reads=["Account/bob"])
"""

from __future__ import annotations

from typing import Any

from .models import ActionOperation, DependencyOperation, KeyOperation, KeyReference


def act(entity: str, action: str, args: dict[str, Any] | None = None, **named: Any) -> ActionOperation:
    """Run a declared action; its parameters as a dict, as keywords, or both."""
    return {"entity": entity, "action": action, "args": {**(args or {}), **named}}


def assign(entity: str, key: str, value: Any) -> KeyOperation:
    return {"entity": entity, "op": "assign", "key": key, "value": value}


def increment(entity: str, key: str, by: int = 1) -> KeyOperation:
    return {"entity": entity, "op": "increment", "key": key, "by": by}


def add(entity: str, key: str, element: Any) -> KeyOperation:
    return {"entity": entity, "op": "add", "key": key, "element": element}


def remove(entity: str, key: str, element: Any) -> KeyOperation:
    return {"entity": entity, "op": "remove", "key": key, "element": element}


def delete_key(entity: str, key: str) -> KeyOperation:
    return {"entity": entity, "op": "deleteKey", "key": key}


def delete(entity: str) -> KeyOperation:
    """Delete the whole entity."""
    return {"entity": entity, "op": "delete"}


def dependency_input(
    kind: str, leader: KeyReference, follower: KeyReference, function: str | None = None
) -> dict[str, Any]:
    """The body of a dependency registration (``kind`` ``update`` with a function, or ``delete``)."""
    body: dict[str, Any] = {"kind": kind, "leader": leader.to_json(), "follower": follower.to_json()}
    if function is not None:
        body["function"] = function
    return body


def register_dependency(
    kind: str, leader: KeyReference, follower: KeyReference, function: str | None = None
) -> DependencyOperation:
    """Register a dependency in the transaction (it runs on the leader)."""
    return {"op": "registerDependency", "dependency": dependency_input(kind, leader, follower, function)}


def deregister_dependency(dependency_id: str) -> DependencyOperation:
    return {"op": "deregisterDependency", "id": dependency_id}
