"""Every client-facing operation of the OpenAPI document the server serves has a method on both
clients, so a route added to the API without the client fails here."""

from __future__ import annotations

import inspect

import httpx

from troupe_client import AsyncTransaction, AsyncTroupe, Transaction, Troupe

# operationId -> (class, method) of the blocking client; the asyncio one has the same names.
METHODS = {
    "getHealth": (Troupe, "health"),
    "listTypes": (Troupe, "list_types"),
    "getType": (Troupe, "get_type"),
    "putType": (Troupe, "put_type"),
    "listEntities": (Troupe, "list_entities"),
    "getEntity": (Troupe, "get"),
    "patchEntity": (Troupe, "patch"),
    "deleteEntity": (Troupe, "delete"),
    "getKey": (Troupe, "get_key"),
    "putKey": (Troupe, "put_key"),
    "deleteKey": (Troupe, "delete_key"),
    "incrementKey": (Troupe, "increment"),
    "addElement": (Troupe, "add"),
    "removeElement": (Troupe, "remove"),
    "invokeAction": (Troupe, "act"),
    "getEntityDependencies": (Troupe, "entity_dependencies"),
    "listEntityVersions": (Troupe, "entity_versions"),
    "transact": (Troupe, "transact"),
    "beginTransaction": (Transaction, "begin"),
    "readInTransaction": (Transaction, "read"),
    "writeInTransaction": (Transaction, "write"),
    "actInTransaction": (Transaction, "act"),
    "commitTransaction": (Transaction, "commit"),
    "abortTransaction": (Transaction, "abort"),
    "snapshotRead": (Troupe, "snapshot_read"),
    "registerDependency": (Troupe, "register_dependency"),
    "getDependency": (Troupe, "get_dependency"),
    "deregisterDependency": (Troupe, "deregister_dependency"),
}

# Operations for operators and other servers, not for applications (the CLI and peers use them).
NOT_FOR_APPLICATIONS = {
    "getReadiness", "getLiveness", "getOpenApi", "getMetrics", "getCluster",
    "streamBootstrapImage", "pullReplicationLog", "streamReplicationLog", "getReplicationStatus",
    "listReplicationPeers", "addReplicationPeer", "removeReplicationPeer",
    # The node's recent outcomes: what the web console shows operators.
    "listRecentTransactions",
}

ASYNC_OF = {Troupe: AsyncTroupe, Transaction: AsyncTransaction}


def test_every_operation_has_a_method_on_both_clients(base_url: str) -> None:
    document = httpx.get(f"{base_url}/v1/openapi.json").json()
    operations = {operation["operationId"] for path in document["paths"].values()
                  for operation in path.values() if isinstance(operation, dict) and "operationId" in operation}
    assert operations - NOT_FOR_APPLICATIONS <= set(METHODS), "operations without a client method"
    for owner, name in METHODS.values():
        blocking = getattr(owner, name)
        awaited = getattr(ASYNC_OF[owner], name)
        assert not inspect.iscoroutinefunction(blocking)
        assert inspect.iscoroutinefunction(awaited) or inspect.isasyncgenfunction(awaited), name
        assert list(inspect.signature(blocking).parameters) == list(inspect.signature(awaited).parameters), name


def test_the_asyncio_client_has_every_method_of_the_blocking_one() -> None:
    for blocking_class, async_class in ASYNC_OF.items():
        names = {name for name, _ in inspect.getmembers(blocking_class, inspect.isfunction)
                 if not name.startswith("_") and name != "close"}
        for name in names:
            assert hasattr(async_class, name), f"{async_class.__name__}.{name}"
            assert (list(inspect.signature(getattr(blocking_class, name)).parameters)
                    == list(inspect.signature(getattr(async_class, name)).parameters)), name
