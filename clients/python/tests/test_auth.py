"""Bearer tokens: sent when given; refusals typed. Skipped against a server without tokens
(``PythonClientTest`` configures them: ``TROUPE_TOKEN`` with every scope, ``TROUPE_READ_TOKEN``
with ``read`` only)."""

from __future__ import annotations

import os

import pytest

from troupe_client import Troupe, errors


@pytest.fixture()
def read_token(token: str | None) -> str:
    reader = os.environ.get("TROUPE_READ_TOKEN")
    if not token or not reader:
        pytest.skip("the server requires no tokens (TROUPE_TOKEN and TROUPE_READ_TOKEN unset)")
    return reader


def test_tokens_are_sent_and_refusals_typed(base_url: str, read_token: str, troupe: Troupe, unique: str) -> None:
    troupe.put_key("Loose", unique, "a", 1)
    with Troupe(base_url) as anonymous:
        with pytest.raises(errors.UnauthorizedError) as unauthorized:
            anonymous.get("Loose", unique)
        assert unauthorized.value.status == 401 and not unauthorized.value.retryable
        assert anonymous.health()["status"] == "ok", "health is open"
    with Troupe(base_url, token="not-a-token") as wrong:
        with pytest.raises(errors.UnauthorizedError):
            wrong.get("Loose", unique)
    with Troupe(base_url, token=read_token) as reader:
        assert reader.get("Loose", unique).state == {"a": 1}
        with pytest.raises(errors.ForbiddenError) as forbidden:
            reader.put_key("Loose", unique, "a", 2)
        assert forbidden.value.status == 403
    assert troupe.get_key("Loose", unique, "a") == 1
