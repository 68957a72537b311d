"""Fixtures of the client's tests: a real server at ``TROUPE_URL`` (``PythonClientTest`` starts
one), names unique to each run (so a run against a server that served earlier runs passes), and
the declared types the tests use."""

from __future__ import annotations

import os
import uuid
from typing import Iterator

import pytest

from troupe_client import RetrySettings, Troupe

ACCOUNT_YAML = """
type: {name}
keys:
  balance: {{kind: register, default: 0}}
  status:  {{kind: register, default: "new"}}
  logins:  {{kind: counter}}
  tags:    {{kind: set}}
actions:
  open:     {{params: {{initial: int}}, pre: ["status == 'new'", "initial >= 0"],
             effect: {{status: "'open'", balance: "initial"}}}}
  withdraw: {{params: {{amount: int}}, pre: ["status == 'open'", "amount > 0", "balance - amount >= 0"],
             effect: {{balance: "balance - amount"}}}}
  deposit:  {{params: {{amount: int}}, pre: ["status == 'open'", "amount > 0"],
             effect: {{balance: "balance + amount"}}}}
"""


@pytest.fixture(scope="session")
def base_url() -> str:
    url = os.environ.get("TROUPE_URL")
    if not url:
        pytest.exit("TROUPE_URL is not set: the tests need a running Troupe server", returncode=2)
    return url.rstrip("/")


@pytest.fixture(scope="session")
def token() -> str | None:
    """A bearer token with every scope, when the server requires tokens (``TROUPE_TOKEN``)."""
    return os.environ.get("TROUPE_TOKEN") or None


@pytest.fixture(scope="session")
def run_id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture()
def unique(run_id: str, request: pytest.FixtureRequest) -> str:
    """A prefix unique to this test in this run, for entity ids."""
    return f"{request.node.name.replace('[', '-').rstrip(']')}-{run_id}"


@pytest.fixture()
def troupe(base_url: str, token: str | None) -> Iterator[Troupe]:
    with Troupe(base_url, token=token, retry=RetrySettings(max_seconds=20.0)) as client:
        yield client


@pytest.fixture(scope="session")
def account_type(base_url: str, token: str | None, run_id: str) -> str:
    """A declared type like the README's Account, of this run."""
    name = f"Account{run_id}"
    with Troupe(base_url, token=token) as client:
        client.put_type(name, ACCOUNT_YAML.format(name=name))
    return name


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"
