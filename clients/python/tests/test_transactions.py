"""Static and interactive transactions, snapshot reads and dependencies through the blocking
client."""

from __future__ import annotations

import pytest

from troupe_client import KeyReference, Troupe, errors, ops


def open_accounts(troupe: Troupe, account_type: str, unique: str, *balances: int) -> list[str]:
    names = []
    for index, balance in enumerate(balances):
        troupe.act(account_type, f"{unique}-{index}", "open", initial=balance)
        names.append(f"{account_type}/{unique}-{index}")
    return names


def test_static_transaction_commits_all_or_nothing(troupe: Troupe, account_type: str, unique: str) -> None:
    alice, bob = open_accounts(troupe, account_type, unique, 100, 0)
    ledger = f"Ledger/{unique}"
    result = troupe.transact([ops.act(alice, "withdraw", amount=30),
                              ops.act(bob, "deposit", {"amount": 30}),
                              ops.assign(ledger, "last", "alice->bob"),
                              ops.increment(alice, "logins", 2),
                              ops.add(alice, "tags", "payer")],
                             reads=[bob])
    assert result.tx_id > 0 and not result.replayed
    assert {outcome.entity for outcome in result.entities} == {alice, bob, ledger}
    assert all(outcome.wrote and outcome.version > 0 for outcome in result.entities)
    assert result.read(bob).state["balance"] == 30
    assert troupe.get("Ledger", unique).state == {"last": "alice->bob"}
    assert troupe.get_key(account_type, f"{unique}-0", "logins") == 2

    with pytest.raises(errors.AbortedError) as aborted:
        troupe.transact([ops.act(alice, "withdraw", amount=1000), ops.act(bob, "deposit", amount=1000),
                         ops.remove(alice, "tags", "payer")], mode="dynamic")
    assert aborted.value.status == 409 and aborted.value.reason == "precondition_failed"
    assert troupe.get(account_type, f"{unique}-0").state["balance"] == 70, "nothing changed"
    assert troupe.get_key(account_type, f"{unique}-0", "tags") == ["payer"]

    troupe.transact([ops.delete_key(ledger, "last"), ops.assign(ledger, "done", True),
                     ops.remove(alice, "tags", "payer")])
    assert troupe.get_key(account_type, f"{unique}-0", "tags") == []
    assert "last" not in troupe.get("Ledger", unique).state
    troupe.transact([ops.delete(ledger)])
    with pytest.raises(errors.NotFoundError):
        troupe.get("Ledger", unique)


def test_interactive_transaction_commits_when_the_block_ends(troupe: Troupe, account_type: str, unique: str) -> None:
    alice, bob = open_accounts(troupe, account_type, unique, 100, 0)
    with troupe.transaction() as tx:
        assert tx.tx_id > 0
        balance = tx.read(alice).state["balance"]
        seen = tx.act(alice, "withdraw", amount=balance // 2)
        assert seen.state["balance"] == 50, "a step sees the transaction's own writes"
        tx.act(bob, "deposit", amount=balance // 2)
        tx.write(ops.assign(f"Ledger/{unique}", "last", balance // 2))
        # A failed step changes nothing and leaves the transaction open.
        with pytest.raises(errors.PreconditionFailedError):
            tx.act(alice, "withdraw", amount=1000)
        assert troupe.get(account_type, f"{unique}-0").state["balance"] == 100, "nothing applied yet"
    assert tx.result is not None and {o.entity for o in tx.result.entities} >= {alice, bob}
    assert troupe.get(account_type, f"{unique}-0").state["balance"] == 50
    assert troupe.get(account_type, f"{unique}-1").state["balance"] == 50
    assert troupe.get_key("Ledger", unique, "last") == 50


def test_interactive_transaction_aborts_when_the_block_raises(troupe: Troupe, account_type: str, unique: str) -> None:
    (alice,) = open_accounts(troupe, account_type, unique, 100)
    with pytest.raises(ZeroDivisionError):
        with troupe.transaction() as tx:
            tx.act(alice, "withdraw", amount=60)
            1 / 0
    assert troupe.get(account_type, f"{unique}-0").state["balance"] == 100
    # Ended: a later step is refused by the server.
    with pytest.raises(errors.TroupeError) as ended:
        tx.read(alice)
    assert ended.value.status in (404, 409, 410), ended.value

    with troupe.transaction() as explicit:
        explicit.act(alice, "withdraw", amount=10)
        explicit.abort()
    assert troupe.get(account_type, f"{unique}-0").state["balance"] == 100
    with troupe.transaction() as early:
        early.write(ops.increment(alice, "logins", 2))
        committed = early.commit()
    assert committed.tx_id == early.tx_id
    assert troupe.get(account_type, f"{unique}-0").state["logins"] == 2


def test_snapshot_read_is_a_consistent_cut(troupe: Troupe, account_type: str, unique: str) -> None:
    alice, bob = open_accounts(troupe, account_type, unique, 70, 30)
    troupe.transact([ops.act(alice, "withdraw", amount=20), ops.act(bob, "deposit", amount=20)])
    cut = troupe.snapshot_read([alice, bob])
    assert cut.state(alice)["balance"] + cut.state(bob)["balance"] == 100
    assert cut.timestamp == max(outcome.version for outcome in cut.entities)
    for index, name in enumerate((alice, bob)):
        assert troupe.get(account_type, f"{unique}-{index}", at=cut.timestamp).state == cut.state(name)
    with pytest.raises(errors.InvalidRequestError):
        troupe.snapshot_read([])


def test_dependencies_forward_and_deregister(troupe: Troupe, unique: str) -> None:
    troupe.put_key("Product", unique, "price", 10)
    troupe.put_key("Cart", unique, "owner", "ada")
    leader = KeyReference(f"Product/{unique}", "price")
    follower = KeyReference(f"Cart/{unique}", "item:price")
    registered = troupe.register_dependency("update", leader, follower, function="replicate")
    assert registered.dependency is not None and registered.tx_id > 0
    assert (registered.dependency.kind, registered.dependency.leader, registered.dependency.follower,
            registered.dependency.function) == ("update", leader, follower, "replicate")
    assert troupe.get_dependency(registered.id) == registered.dependency.__class__(
        registered.id, "update", leader, follower, "replicate")
    assert troupe.get_key("Cart", unique, "item:price") == 10

    troupe.put_key("Product", unique, "price", 12)
    assert troupe.get_key("Cart", unique, "item:price") == 12, "forwarded in the same transaction"
    followed = troupe.entity_dependencies("Cart", unique)
    assert followed.entity == f"Cart/{unique}" and [d.id for d in followed.follows] == [registered.id]
    assert [d.id for d in troupe.entity_dependencies("Product", unique).leads] == [registered.id]

    # The reverse would close a cycle of update dependencies.
    with pytest.raises(errors.ConflictError) as cycle:
        troupe.register_dependency("update", follower, leader, function="replicate")
    assert cycle.value.status == 409

    assert troupe.deregister_dependency(registered.id) > 0
    with pytest.raises(errors.NotFoundError):
        troupe.get_dependency(registered.id)
    troupe.put_key("Product", unique, "price", 15)
    assert troupe.get_key("Cart", unique, "item:price") == 12, "the follower keeps its last value"

    # The same through a transaction's operations.
    result = troupe.transact([ops.register_dependency("delete", leader, KeyReference(f"Cart/{unique}", "owner"))])
    assert result.tx_id > 0
    (delete_dependency,) = troupe.entity_dependencies("Product", unique).leads
    troupe.transact([ops.deregister_dependency(delete_dependency.id)])
    assert troupe.entity_dependencies("Product", unique).leads == ()
