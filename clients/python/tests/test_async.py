"""The asyncio client against the real server: the same calls as the blocking one (they share
``_core``), awaited, concurrent tasks, and ``async with`` transactions."""

from __future__ import annotations

import asyncio

import pytest

from troupe_client import AsyncTroupe, KeyReference, errors, ops

pytestmark = pytest.mark.anyio


async def test_entities_keys_and_actions(base_url: str, token: str | None, account_type: str, unique: str) -> None:
    async with AsyncTroupe(base_url, token=token) as troupe:
        created = await troupe.patch("Contract", unique, {"a": 1})
        assert (await troupe.get("Contract", unique)).version == created.version
        assert (await troupe.get("Contract", unique, at=created.version)).state == {"a": 1}
        await troupe.put_key("Contract", unique, "b", [1, 2])
        assert await troupe.get_key("Contract", unique, "b") == [1, 2]
        await troupe.delete_key("Contract", unique, "b")
        with pytest.raises(errors.NotFoundError):
            await troupe.get_key("Contract", unique, "b")
        await troupe.delete("Contract", unique)
        with pytest.raises(errors.NotFoundError):
            await troupe.get("Contract", unique)

        await troupe.act(account_type, unique, "open", initial=10)
        await troupe.increment(account_type, unique, "logins", by=3)
        await troupe.add(account_type, unique, "tags", "a")
        assert (await troupe.remove(account_type, unique, "tags", "a")).state["tags"] == []  # type: ignore[index]
        with pytest.raises(errors.PreconditionFailedError):
            await troupe.act(account_type, unique, "withdraw", amount=11)
        assert (await troupe.health())["status"] == "ok"
        assert account_type in [spec["type"] for spec in await troupe.list_types()]
        assert (await troupe.get_type(account_type))["type"] == account_type


async def test_concurrent_tasks_each_write_once(base_url: str, token: str | None, account_type: str, unique: str) -> None:
    async with AsyncTroupe(base_url, token=token) as troupe:
        await troupe.act(account_type, unique, "open", initial=0)
        written = await asyncio.gather(*(troupe.act(account_type, unique, "deposit", amount=1) for _ in range(20)))
        assert len({w.version for w in written}) == 20
        assert (await troupe.get(account_type, unique)).state["balance"] == 20


async def test_transactions_snapshots_and_dependencies(base_url: str, token: str | None, account_type: str, unique: str) -> None:
    alice, bob = f"{account_type}/{unique}-a", f"{account_type}/{unique}-b"
    async with AsyncTroupe(base_url, token=token) as troupe:
        await troupe.act(account_type, f"{unique}-a", "open", initial=100)
        await troupe.act(account_type, f"{unique}-b", "open", initial=0)
        result = await troupe.transact([ops.act(alice, "withdraw", amount=40), ops.act(bob, "deposit", amount=40)],
                                       reads=[alice])
        assert result.read(alice).state["balance"] == 60

        async with troupe.transaction() as tx:
            seen = await tx.act(alice, "withdraw", amount=10)
            assert seen.state["balance"] == 50
            await tx.write(ops.increment(bob, "logins"))
            assert (await tx.read(bob)).state["logins"] == 1
        assert tx.result is not None
        with pytest.raises(RuntimeError):
            async with troupe.transaction() as failing:
                await failing.act(alice, "withdraw", amount=50)
                raise RuntimeError("changed my mind")
        cut = await troupe.snapshot_read([alice, bob])
        assert cut.state(alice)["balance"] == 50 and cut.state(bob)["balance"] == 40

        leader = KeyReference(alice, "balance")
        follower = KeyReference(f"Mirror/{unique}", "balance")
        await troupe.put_key("Mirror", unique, "name", "m")
        registered = await troupe.register_dependency("update", leader, follower, function="replicate")
        assert (await troupe.get_dependency(registered.id)).follower == follower
        assert await troupe.get_key("Mirror", unique, "balance") == 50
        assert [d.id for d in (await troupe.entity_dependencies("Mirror", unique)).follows] == [registered.id]
        assert await troupe.deregister_dependency(registered.id) > 0
