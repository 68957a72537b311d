"""Listing a type's entities page by page (``GET /v1/entities/{type}``), sync and asyncio."""

from __future__ import annotations

import pytest

from troupe_client import AsyncTroupe, Troupe, errors


def test_pages_cover_every_entity_once_in_id_order(troupe: Troupe, unique: str, run_id: str) -> None:
    type_name = f"Listed{run_id}"
    ids = sorted(f"e{n:02d}" for n in range(11))
    versions = {entity_id: troupe.put_key(type_name, entity_id, "n", n).version for n, entity_id in enumerate(ids)}
    first = troupe.list_entities(type_name, limit=4)
    assert first.type == type_name and [e.id for e in first.entities] == ids[:4] and first.next is not None
    second = troupe.list_entities(type_name, after=first.next, limit=4)
    assert [e.id for e in second.entities] == ids[4:8]
    listed = list(troupe.iter_entities(type_name, limit=4))
    assert [e.id for e in listed] == ids, "every entity exactly once, in id order"
    assert {e.id: e.version for e in listed} == versions

    # A consistent page as of a version: entities written later are not in it.
    at = max(v for v in versions.values() if v is not None)
    troupe.put_key(type_name, "e99", "n", 99)
    assert [e.id for e in troupe.iter_entities(type_name, limit=5, at=at)] == ids
    assert [e.id for e in troupe.iter_entities(type_name)][-1] == "e99"

    # A range from an id on, and pages with the entities' states.
    assert [e.id for e in troupe.list_entities(type_name, from_id="e05", limit=2).entities] == ["e05", "e06"]
    assert [e.id for e in troupe.iter_entities(type_name, from_id="e09", limit=1)] == ["e09", "e10", "e99"]
    with_states = troupe.list_entities(type_name, limit=2, states=True)
    assert [(e.id, e.state) for e in with_states.entities] == [("e00", {"n": 0}), ("e01", {"n": 1})]
    assert troupe.list_entities(type_name, limit=2).entities[0].state is None

    # Deleted entities are not listed.
    troupe.delete(type_name, "e03")
    assert "e03" not in [e.id for e in troupe.iter_entities(type_name, limit=3)]

    with pytest.raises(errors.InvalidRequestError):
        troupe.list_entities(type_name, limit=0)
    with pytest.raises(errors.InvalidRequestError):
        troupe.list_entities(type_name, after="e01", from_id="e02")


async def test_async_iteration_lists_every_entity(base_url: str, token: str | None, troupe: Troupe, run_id: str) -> None:
    type_name = f"ListedAsync{run_id}"
    for n in range(5):
        troupe.put_key(type_name, f"a{n}", "n", n)
    async with AsyncTroupe(base_url, token=token) as client:
        assert [e.id async for e in client.iter_entities(type_name, limit=2)] == [f"a{n}" for n in range(5)]
        page = await client.list_entities(type_name, limit=10, states=True)
        assert page.next is None and [e.state for e in page.entities] == [{"n": n} for n in range(5)]
        assert [e.id async for e in client.iter_entities(type_name, from_id="a3")] == ["a3", "a4"]


test_async_iteration_lists_every_entity = pytest.mark.anyio(test_async_iteration_lists_every_entity)


def test_an_entitys_versions_page_by_page_each_readable_at(troupe: Troupe, unique: str, run_id: str) -> None:
    type_name = f"Versioned{run_id}"
    written = [troupe.put_key(type_name, "v", "n", n).version for n in range(5)]
    newest_first = list(reversed(written))
    first = troupe.entity_versions(type_name, "v", limit=3)
    assert first.entity == f"{type_name}/v" and list(first.versions) == newest_first[:3]
    assert first.next == newest_first[2]
    rest = troupe.entity_versions(type_name, "v", before=first.next)
    assert list(rest.versions) == newest_first[3:] and rest.next is None
    assert [troupe.get(type_name, "v", at=v).state["n"] for v in newest_first] == [4, 3, 2, 1, 0]
    assert list(troupe.entity_versions(type_name, "never").versions) == []
    with pytest.raises(errors.InvalidRequestError):
        troupe.entity_versions(type_name, "v", before=0)
