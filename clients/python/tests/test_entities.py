"""The entity contract (server ``EntityContract``) through the blocking client, plus keys of
each kind, ``at=`` reads, types and actions."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from troupe_client import Troupe, errors

SCHEMALESS = "Contract"


def assert_error(error: errors.TroupeError, status: int, code: str) -> None:
    assert error.status == status, error
    assert error.error == code, error
    assert error.message, error


def test_missing_entity_is_not_found(troupe: Troupe, unique: str) -> None:
    with pytest.raises(errors.NotFoundError) as missing:
        troupe.get(SCHEMALESS, f"{unique}-none")
    assert_error(missing.value, 404, "not_found")
    with pytest.raises(errors.NotFoundError):
        troupe.get_key(SCHEMALESS, f"{unique}-none", "k")


def test_patch_creates_and_merges_atomically(troupe: Troupe, unique: str) -> None:
    values = {"name": "Ada", "age": 36, "ratio": 1.5, "ok": True, "tags": ["x", "y"],
              "address": {"city": "Zürich", "zip": 8001}}
    created = troupe.patch(SCHEMALESS, unique, values)
    assert created.state == values and created.version and not created.replayed

    read = troupe.get(SCHEMALESS, unique)
    assert (read.type, read.id, read.state, read.version) == (SCHEMALESS, unique, values, created.version)

    merged = troupe.patch(SCHEMALESS, unique, {"age": 37, "email": "ada@example.com"})
    assert merged.version is not None and merged.version > created.version
    expected = {**values, "age": 37, "email": "ada@example.com"}
    assert merged.state == expected
    assert troupe.get(SCHEMALESS, unique).state == expected
    # An earlier version stays readable with at=.
    assert troupe.get(SCHEMALESS, unique, at=created.version).state == values


def test_keys_are_put_read_and_deleted(troupe: Troupe, unique: str) -> None:
    put = troupe.put_key(SCHEMALESS, unique, "colour", "blue")
    assert troupe.get_key(SCHEMALESS, unique, "colour") == "blue"
    overwritten = troupe.put_key(SCHEMALESS, unique, "colour", {"r": 0, "g": 0})
    assert overwritten.version > put.version  # type: ignore[operator]
    assert troupe.get_key(SCHEMALESS, unique, "colour") == {"r": 0, "g": 0}
    troupe.put_key(SCHEMALESS, unique, "size", 42)
    with pytest.raises(errors.NotFoundError):
        troupe.get_key(SCHEMALESS, unique, "missing")

    deleted = troupe.delete_key(SCHEMALESS, unique, "colour")
    assert deleted.version > overwritten.version  # type: ignore[operator]
    with pytest.raises(errors.NotFoundError):
        troupe.get_key(SCHEMALESS, unique, "colour")
    remaining = troupe.get(SCHEMALESS, unique)
    assert remaining.state == {"size": 42} and remaining.version == deleted.version


def test_keys_with_odd_characters_are_encoded(troupe: Troupe, unique: str) -> None:
    odd_id = f"{unique} a?b#c%d"  # ids may not hold "/"
    troupe.put_key(SCHEMALESS, odd_id, "k[ey] ü", "v")
    assert troupe.get(SCHEMALESS, odd_id).state == {"k[ey] ü": "v"}


def test_deleting_the_last_key_leaves_an_empty_entity(troupe: Troupe, unique: str) -> None:
    troupe.put_key(SCHEMALESS, unique, "only", 1)
    deleted = troupe.delete_key(SCHEMALESS, unique, "only")
    read = troupe.get(SCHEMALESS, unique)
    assert read.state == {} and read.version == deleted.version


def test_deleted_entity_is_gone_and_can_be_recreated(troupe: Troupe, unique: str) -> None:
    created = troupe.patch(SCHEMALESS, unique, {"a": 1, "b": 2})
    deleted = troupe.delete(SCHEMALESS, unique)
    assert deleted.version > created.version  # type: ignore[operator]
    with pytest.raises(errors.NotFoundError):
        troupe.get(SCHEMALESS, unique)
    with pytest.raises(errors.NotFoundError):
        troupe.delete(SCHEMALESS, unique)
    recreated = troupe.patch(SCHEMALESS, unique, {"c": 3})
    assert recreated.version > deleted.version and recreated.state == {"c": 3}  # type: ignore[operator]


def test_bad_requests_are_refused_and_change_nothing(troupe: Troupe, unique: str) -> None:
    created = troupe.patch(SCHEMALESS, unique, {"a": 1})
    with pytest.raises(errors.InvalidRequestError) as empty:
        troupe.patch(SCHEMALESS, unique, {})
    assert_error(empty.value, 400, "invalid_request")
    with pytest.raises(errors.TooLargeError) as large:
        troupe.put_key(SCHEMALESS, unique, "a", "x" * 70_000)
    assert_error(large.value, 413, "too_large")
    with pytest.raises(errors.InvalidRequestError):
        troupe.put_key(SCHEMALESS, "i" * 300, "a", 1)
    with pytest.raises(errors.InvalidRequestError):
        troupe.put_key("$system", "x", "a", 1)
    for reserved in (lambda: troupe.put_key(SCHEMALESS, unique, "$a", 2),
                     lambda: troupe.get_key(SCHEMALESS, unique, "$a"),
                     lambda: troupe.delete_key(SCHEMALESS, unique, "$a"),
                     lambda: troupe.patch(SCHEMALESS, unique, {"a": 2, "$b": 3})):
        with pytest.raises(errors.InvalidRequestError):
            reserved()
    read = troupe.get(SCHEMALESS, unique)
    assert read.state == {"a": 1} and read.version == created.version, "nothing changed"


def test_concurrent_writes_to_one_entity_are_all_kept(troupe: Troupe, unique: str) -> None:
    writers, writes_each = 6, 10

    def write(me: int) -> list[int]:
        return [troupe.patch(SCHEMALESS, unique, {f"w{me}": n, "last": me}).version or 0
                for n in range(writes_each)]

    with ThreadPoolExecutor(writers) as pool:
        results = list(pool.map(write, range(writers)))
    versions = [v for result in results for v in result]
    for result in results:
        assert result == sorted(result) and len(set(result)) == len(result), "a writer's versions grow"
    assert len(set(versions)) == len(versions), "every write has its own version"
    read = troupe.get(SCHEMALESS, unique)
    for me in range(writers):
        assert read.state[f"w{me}"] == writes_each - 1
    assert read.version == max(versions), "the read sees the newest write"


def test_types_are_declared_read_and_listed(troupe: Troupe, unique: str, run_id: str) -> None:
    name = f"Counted{run_id}"
    declared = troupe.put_type(name, {"keys": {"n": {"kind": "counter"}},
                                      "actions": {"bump": {"params": {"by": "int"},
                                                           "effect": {"n": "n + by"}}}})
    assert declared["type"] == name and declared["keys"]["n"]["kind"] == "counter"
    assert troupe.get_type(name) == declared
    assert name in [spec["type"] for spec in troupe.list_types()]
    troupe.act(name, unique, "bump", by=2)
    # A key with data cannot change its kind without a migration.
    with pytest.raises(errors.IncompatibleTypeError) as incompatible:
        troupe.put_type(name, {"keys": {"n": {"kind": "register"}}})
    assert_error(incompatible.value, 409, "incompatible_type")
    with pytest.raises(errors.UnknownTypeError):
        troupe.get_type(f"Never{run_id}")


def test_counters_sets_and_actions(troupe: Troupe, account_type: str, unique: str) -> None:
    opened = troupe.act(account_type, unique, "open", {"initial": 100})
    assert opened.state == {"balance": 100, "logins": 0, "status": "open", "tags": []}
    assert troupe.act(account_type, unique, "deposit", amount=5).state["balance"] == 105  # type: ignore[index]
    assert troupe.increment(account_type, unique, "logins").state["logins"] == 1  # type: ignore[index]
    assert troupe.increment(account_type, unique, "logins", by=4).state["logins"] == 5  # type: ignore[index]
    troupe.add(account_type, unique, "tags", "vip")
    troupe.add(account_type, unique, "tags", "new")
    assert sorted(troupe.get_key(account_type, unique, "tags")) == ["new", "vip"]
    assert troupe.remove(account_type, unique, "tags", "new").state["tags"] == ["vip"]  # type: ignore[index]

    with pytest.raises(errors.PreconditionFailedError) as refused:
        troupe.act(account_type, unique, "withdraw", amount=500)
    assert_error(refused.value, 409, "precondition_failed")
    with pytest.raises(errors.UnknownActionError) as unknown_action:
        troupe.act(account_type, unique, "steal")
    assert_error(unknown_action.value, 404, "unknown_action")
    with pytest.raises(errors.UnknownTypeError) as unknown_type:
        troupe.act(f"Undeclared{unique}".replace("-", ""), "x", "open")
    assert_error(unknown_type.value, 404, "unknown_type")
    assert troupe.get(account_type, unique).state["balance"] == 105


def test_projections_answer_only_the_keys_named(troupe: Troupe, account_type: str, unique: str) -> None:
    opened = troupe.act(account_type, unique, "open", {"initial": 100}, projection=["balance"])
    assert opened.state == {"balance": 100}
    assert troupe.increment(account_type, unique, "logins", projection=[]).state == {}
    read = troupe.get(account_type, unique, projection=["status", "logins"])
    assert read.state == {"status": "open", "logins": 1}
    assert troupe.patch(SCHEMALESS, unique, {"a": 1, "b,c": 2}, projection=["b,c", "missing"]).state == {"b,c": 2}
    with pytest.raises(errors.InvalidRequestError) as refused:
        troupe.act(account_type, unique, "deposit", {"amount": 1}, projection=["nope"])
    assert_error(refused.value, 400, "invalid_request")
    assert troupe.get(account_type, unique).state["balance"] == 100  # the refused deposit did nothing


def test_health(troupe: Troupe) -> None:
    assert troupe.health()["status"] == "ok"
