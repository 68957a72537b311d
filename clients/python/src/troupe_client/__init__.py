"""A typed client of Troupe's REST API (``/v1``), blocking (``Troupe``) and asyncio
(``AsyncTroupe``). Writes carry an idempotency key and are retried with it; the causal token the
server sends is carried on; refusals raise the ``errors`` class of their JSON code."""

from . import errors, ops
from ._core import RetrySettings
from .async_client import AsyncTransaction, AsyncTroupe
from .client import Transaction, Troupe
from .errors import TroupeError
from .models import (
    Dependency,
    DependencyRegistration,
    EntityDependencies,
    EntityOutcome,
    EntityPage,
    EntityState,
    EntityVersions,
    KeyReference,
    ListedEntity,
    ReadOutcome,
    SnapshotRead,
    TransactionResult,
    Written,
)

__all__ = [
    "AsyncTransaction",
    "AsyncTroupe",
    "Dependency",
    "DependencyRegistration",
    "EntityDependencies",
    "EntityOutcome",
    "EntityPage",
    "EntityState",
    "EntityVersions",
    "KeyReference",
    "ListedEntity",
    "ReadOutcome",
    "RetrySettings",
    "SnapshotRead",
    "Transaction",
    "TransactionResult",
    "Troupe",
    "TroupeError",
    "Written",
    "errors",
    "ops",
]
